"""The curate stage as a function: the review sheet, and the accepted candidates as a
versioned scenario file with its provenance.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

from losona.core.catalog import load_catalog
from losona.core.contracts import VERDICT_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import display_path, read_json_object, read_parquet, write_json, write_text
from losona.core.layout import RunLayout
from losona.generation.curate import (
    curated_rows,
    provenance,
    read_accept_list,
    review_html,
    review_table,
    scenario_file_text,
)
from losona.generation.settings import CurateSettings
from losona.generation.tables import CANDIDATE_SCHEMA


def _read_summary(path: Path, made_by: str) -> dict[str, Any]:
    """A generation stage's summary (generate.json, screen.json), which curate records."""
    if not path.is_file():
        raise LosonaError(f"{path} not found: run the {made_by} stage first")
    return read_json_object(path, keys=(), remedy=f"rerun {made_by}")


def run_curate(settings: CurateSettings, layout: RunLayout) -> None:
    """curate: the review sheet (HTML and CSV) of every candidate that passed the screen, and
    the accept list's candidates as <name>-v<version>.jsonl with its provenance beside it."""
    files = layout.generation
    catalog = load_catalog()
    candidates = read_parquet(files.screened, CANDIDATE_SCHEMA, made_by="screen")
    verdicts = read_parquet(files.screen_verdicts, VERDICT_SCHEMA, made_by="screen")
    accept_list = display_path(files.accept_list)
    # Everything is checked and built before anything is written.
    review = review_table(candidates, verdicts)
    page = review_html(candidates, verdicts, accept_list)
    rows = curated_rows(candidates, read_accept_list(files.accept_list, candidates), catalog)
    out = files.generated_folder / settings.file_name
    sidecar = out.with_name(out.name.removesuffix(".jsonl") + ".provenance.json")
    record = provenance(
        set_name=settings.name,
        version=settings.version,
        file_name=out.name,
        rows=rows,
        catalog=catalog,
        generation=_read_summary(files.generate_summary, "generate"),
        screen=_read_summary(files.screen_summary, "screen"),
        accept_list=accept_list,
        previous=(
            read_json_object(sidecar, keys=("dates",), remedy="delete it and rerun curate")
            if sidecar.is_file()
            else None
        ),
        today=date.today(),
    )
    write_text(page, files.review_html)
    write_text(review.write_csv(), files.review_csv)
    write_text(scenario_file_text(rows), out)
    write_json(record, sidecar)
    if review.is_empty():
        print(f"curate: no candidate passed the screen: nothing to review ({files.review_html})")
        return
    print(f"curate: {review.height} candidates to review -> {files.review_html}")
    if rows:
        print(
            f"curate: {len(rows)} accepted scenarios -> {out} (provenance: {sidecar.name}); "
            f"evaluate them from: python stages/fetch.py dataset=local dataset.path={out}"
        )
    else:
        print(
            f"curate: {accept_list} accepts no candidate yet, so {out} is empty: read "
            f"{files.review_html}, add the ids you accept, and rerun"
        )
