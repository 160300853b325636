"""One submission's tree rechecked in a process of its own (`python -I -m
losona.board.recheck <result.json>`): every file read whole first, then
`losona.reproduce.check_run`, then the rows the board ranks, written to <result.json>.

`-I` keeps the tree's folder off `sys.path`, so nothing the run holds is imported.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import polars as pl
import pyarrow.parquet as pq

from losona.audit.files import read_audit
from losona.core.config import Paths, option_file
from losona.core.errors import LosonaError
from losona.core.files import read_yaml
from losona.core.layout import RunLayout
from losona.judges.kinds import judge_kind
from losona.judges.verdicts import CELL
from losona.provenance.record import read_provenance
from losona.reproduce.checks import check_run
from losona.results.aggregate import read_reports

# The run's own paths, read from its tree (the option dvc.yaml's stages compose).
PATHS_FILE = option_file("paths", "default")
# Where the recheck keeps its call cache: inside the tree's folder, never the user's.
CALL_CACHE = "call_cache.sqlite"
CORRECTED = ("corrected", "corrected_low", "corrected_high")


def check_formats(root: Path) -> None:
    """Every Parquet, JSON and YAML file of the tree parses, or the first that does not is named."""
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = path.relative_to(root).as_posix()
        try:
            if path.suffix == ".parquet":
                pq.read_table(path)
            elif path.suffix == ".json":
                json.loads(path.read_text(encoding="utf-8"))
            elif path.suffix in (".yaml", ".yml", ".lock"):
                read_yaml(path)
        except LosonaError as exc:
            raise LosonaError(f"malformed YAML: {exc}") from None
        except Exception as exc:  # any parser's error is the file's fault
            kind = {".parquet": "Parquet", ".json": "JSON"}.get(path.suffix, "file")
            raise LosonaError(f"malformed {kind}: {name} ({_first_line(exc)})") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__


def run_paths(root: Path) -> Paths:
    """The run's locations, from its conf/paths/default.yaml as data: every one a plain path
    inside the tree (the call cache aside: the recheck keeps its own)."""
    node = read_yaml(root / PATHS_FILE)
    paths = node.get("paths") if isinstance(node, dict) else None
    if not isinstance(paths, dict):
        raise LosonaError(f"{PATHS_FILE}: no 'paths' mapping")
    for key, value in paths.items():
        if key == "call_cache" or value is None:
            continue
        pure = PurePosixPath(str(value))
        if "${" in str(value) or pure.is_absolute() or ".." in pure.parts:
            raise LosonaError(
                f"{PATHS_FILE}: 'paths.{key}' is {value!r}: not a plain path inside the run's tree"
            )
    return Paths.from_config({**paths, "call_cache": CALL_CACHE}, origin=str(PATHS_FILE))


def board_rows(layout: RunLayout) -> list[dict[str, Any]]:
    """The rows the board ranks: results.csv's cells, with corrected compliance where the
    run's audit has it, and what makes them comparable, from the provenance."""
    record = read_provenance(layout.provenance)
    results = read_reports(layout.reports_folder)["results.csv"]
    if (layout.audit_folder / "metrics.json").is_file():
        corrected = read_audit(layout.audit_folder)["corrected.csv"].select(*CELL, *CORRECTED)
        results = results.join(corrected, on=CELL, how="left", nulls_equal=True)
    else:
        results = results.with_columns(pl.lit(None, pl.Float64).alias(c) for c in CORRECTED)
    dataset = record["dataset"]
    config = dataset.get("config") or {}
    facts = {
        "scenario_set": str(dataset.get("content_sha256")),
        "subset": "; ".join(map(str, dataset.get("sources") or [])) or str(config.get("name")),
        "vote_rule": str(record["aggregate"].get("vote_rule")),
        "pipeline_version": str((record.get("packages") or {}).get("losona")),
    }
    return [
        {**row, **facts, "judge_identity": judge_identity(record, row["judge"])}
        for row in results.iter_rows(named=True)
    ]


def judge_identity(record: dict[str, Any], judge: str) -> str:
    """What makes one judge's numbers comparable with another's, as its kind says."""
    entry = record["judges"].get(judge) or {}
    return judge_kind(str(entry.get("kind"))).identity(entry, record.get("templates") or {})


def recheck(root: Path) -> dict[str, Any]:
    """The outcome of checking the run in `root`: verified or not, and why."""
    try:
        check_formats(root)
        layout = RunLayout(run_paths(root))
        check = check_run(layout)
    except LosonaError as exc:
        return {"verified": False, "reason": str(exc).splitlines()[0], "differences": []}
    outcome: dict[str, Any] = {
        "verified": check.ok,
        "values": check.values,
        "files": len(check.files),
        "differences": [str(d) for d in check.differences],
        "notes": check.notes,
    }
    if check.ok:
        outcome["rows"] = board_rows(layout)
    else:
        outcome["reason"] = f"{len(check.differences)} value(s) differ: {check.differences[0]}"
    return outcome


def main(argv: list[str] | None = None) -> int:
    """Recheck the run in the working directory; write the outcome where asked."""
    parser = argparse.ArgumentParser(
        prog="python -m losona.board.recheck",
        description="Recheck the run in this folder (verify runs it in a scratch tree).",
    )
    parser.add_argument("outcome", help="the JSON file the outcome is written to")
    out = Path(parser.parse_args(sys.argv[1:] if argv is None else argv).outcome)
    out.write_text(json.dumps(recheck(Path(".")), default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
