"""`python -m losona.run_logs`: each cell's facts of its last run, which differ on every run,
from its run log. A checkout restores a table but not its log (not a DVC output): a log whose
table has changed since is refused, never shown as that table's run."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from losona.core.cli import USER_ERROR_EXIT, overrides_parser
from losona.core.config import compose_paths
from losona.core.errors import LosonaError
from losona.core.files import display_path, sha256_file
from losona.core.formatting import MISSING
from losona.core.layout import RunLayout


def run_logs(layout: RunLayout) -> list[tuple[str, Path]]:
    """Every run log of the last run of each cell: (cell, file), samples first."""
    found = [
        (f"sample {p.parent.name}/{p.name.removesuffix('.log.json')}", p)
        for p in sorted(layout.responses_folder.glob("*/*.log.json"))
    ]
    for path in sorted(layout.judge_logs_folder.rglob("*.log.json")):
        parts = path.relative_to(layout.judge_logs_folder).parts
        what = "/".join(parts[1:]).removesuffix(".log.json")
        found.append((f"judge {parts[0]} {what}", path))
    return found


COLUMNS = (
    ("cell", "<"),
    ("requests", ">"),
    ("cache hits", ">"),
    ("calls made", ">"),
    ("failed", ">"),
    ("prompt tok", ">"),
    ("completion tok", ">"),
    ("latency p50/p95 s", ">"),
    ("billed $", ">"),
    ("wall s", ">"),
    ("started", "<"),
)


def log_row(cell: str, log: Mapping[str, Any]) -> list[str]:
    """One run log as a row of COLUMNS."""
    latency = log.get("latency_s") or {}

    def seconds(value: float | None) -> str:
        return MISSING if value is None else f"{value:.2f}"

    return [
        cell,
        str(log.get("requests", MISSING)),
        str(log.get("cache_hits", MISSING)),
        str(log.get("completed", MISSING)),
        str(log.get("failed", MISSING)),
        str(log.get("prompt_tokens_this_run", MISSING)),
        str(log.get("completion_tokens_this_run", MISSING)),
        f"{seconds(latency.get('p50'))}/{seconds(latency.get('p95'))}",
        f"{log.get('cost_usd_this_run', 0.0):.4f}",
        seconds(log.get("wall_s")),
        str(log.get("started_at", MISSING)),
    ]


def table_lines(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows under COLUMNS' headers, each column as wide as its widest cell."""
    headers = [name for name, _ in COLUMNS]
    widths = [max(map(len, column)) for column in zip(headers, *rows, strict=True)]
    return [
        "  ".join(
            f"{cell:{align}{width}}"
            for cell, (_, align), width in zip(row, COLUMNS, widths, strict=True)
        ).rstrip()
        for row in [headers, *rows]
    ]


def stale(log: Mapping[str, Any]) -> str | None:
    """Why a run log is not the run of the table it describes; None while it is."""
    table = log.get("table")
    if not isinstance(table, Mapping):
        return "it names no table (written before run logs named theirs)"
    path = Path(str(table.get("path")))
    if not path.is_file():
        return f"its table {display_path(path)} is gone"
    if sha256_file(path) != table.get("sha256"):
        return f"its table {display_path(path)} has changed since"
    return None


# Why a refused log is not the run of the table there now, and how to get one that is.
STALE_ADVICE = (
    "git checkout and dvc checkout restore a table, never its run log (a log differs on "
    "every run, so DVC does not keep it); to log a cell anew, rerun it: dvc repro --force "
    "--single-item <its stage> (the run's calls answer it, with no new call)"
)


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Print the run facts of every cell whose run log is the run of its table; exit 2 when
    there is no log, or none is."""
    parser = overrides_parser(
        "python -m losona.run_logs",
        "Print each cell's run facts from its run log (*.log.json): calls cached, made and "
        "failed, tokens, latency, cost, when it ran and for how long. Exit 2 when there is none.",
    )
    overrides = parser.parse_args(argv).overrides
    try:
        layout = RunLayout(compose_paths(overrides))
        logs = run_logs(layout)
        if not logs:
            raise LosonaError(
                f"no run log under {layout.responses_folder} or {layout.judge_logs_folder}: "
                "run the pipeline first (dvc repro)"
            )
        rows, refused = [], []
        for cell, path in logs:
            try:
                log = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise LosonaError(f"{display_path(path)}: not a readable run log ({exc})") from None
            if (why := stale(log)) is None:
                rows.append(log_row(cell, log))
            else:
                refused.append(f"  {display_path(path)}: {why}")
        if not rows:
            raise LosonaError(
                "no run log here is the run of the table it describes:\n"
                + "\n".join(refused)
                + f"\n{STALE_ADVICE}"
            )
    except LosonaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    out("Each cell's last run, from its run log (*.log.json; these facts differ between runs):")
    for line in table_lines(rows):
        out(line)
    if refused:
        out(f"Not shown: {len(refused)} run log(s) that are not the run of their table now:")
        for line in refused:
            out(line)
        out(STALE_ADVICE)
    return 0
