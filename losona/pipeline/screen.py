"""The screen stage as a function: the no-demonstration control, asked of the baseline
models and judged.
"""

from __future__ import annotations

from losona.core.config import option
from losona.core.files import read_parquet, write_json, write_parquet, write_text
from losona.core.layout import RunLayout
from losona.generation.screen import (
    cell_report,
    format_cell_report,
    screen_candidates,
    screen_summary,
)
from losona.generation.settings import ScreenSettings, load_model
from losona.generation.tables import CANDIDATE_SCHEMA
from losona.judges.run import make_judge
from losona.models import CallOptions


def run_screen(settings: ScreenSettings, layout: RunLayout) -> None:
    """screen: every candidate with its outcome, each baseline answer with its verdict, the
    per-cell counts and the summary, from generate's candidate table."""
    files = layout.generation
    baselines = [load_model(name) for name in settings.models]
    for spec in baselines:
        spec.check_credentials()  # before any work: a missing key fails at once
    judge = make_judge(
        option("judge", settings.judge),
        CallOptions(cache_path=layout.call_cache, run_log=files.run_logs / "screen_judge.log.json"),
    )
    candidates = read_parquet(files.candidates, CANDIDATE_SCHEMA, made_by="generate")
    screening = screen_candidates(
        candidates,
        baselines,
        judge,
        settings.judge,
        trials=settings.trials,
        keep=settings.keep,
        options=CallOptions(cache_path=layout.call_cache, max_cost_usd=settings.max_cost_usd),
        run_log_dir=files.run_logs,
    )
    cells = cell_report(screening.candidates)
    summary = screen_summary(
        screening.candidates,
        baselines,
        judge,
        settings.judge,
        trials=settings.trials,
        keep=settings.keep,
    )
    write_parquet(screening.candidates, files.screened)
    write_parquet(screening.verdicts, files.screen_verdicts)
    write_text(cells.write_csv(), files.cells)
    write_json(summary, files.screen_summary)
    print(
        f"screen: {', '.join(s.name for s in baselines)} x {settings.trials} answers on each "
        f"valid candidate's no-demonstration control, judged by {settings.judge} "
        f"({judge.model}), keep: {settings.keep} -> {files.screened}"
    )
    print(format_cell_report(cells))
