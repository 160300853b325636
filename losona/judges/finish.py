"""The epilogue every judging stage ends with (judge, judge_controls, dynamic_judge): its
table written, then the calls it was built from, then its account."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

from losona.core.files import write_parquet
from losona.judges.base import CallingJudge, Judge
from losona.judges.run import unscored_notes
from losona.models import answer_sources, calls_table, read_run_log
from losona.models.runlog import record_table

# What a judging stage's account reads of its table once the table is written.
ACCOUNT_COLUMNS = ("complies", "judge_status", "reasoning")


def finish_judging(
    table: pl.DataFrame,
    *,
    stage: str,
    name: str,
    judge: Judge,
    out: Path,
    calls_out: Path,
    headline: Callable[[pl.DataFrame], str],
    warnings: Callable[[pl.DataFrame], Iterable[str]] = lambda outcomes: (),
    closing: Iterable[str] = (),
) -> None:
    """A judging stage's end: its table written, then the calls it was built from, then its
    account (`headline` and `warnings` of the outcomes, the answers' sources, the unscored
    replies, `closing`). Pass the table as an expression, so that no name of the caller's
    keeps it once written (tests/test_scale.py bounds a judge cell's peak memory)."""

    calling = judge if isinstance(judge, CallingJudge) else None  # rules call no one
    write_parquet(table, out)
    for log in calling.run_logs if calling is not None else ():
        record_table(log, out)
    outcomes = table.select(ACCOUNT_COLUMNS)
    del table
    calls = calls_table(calling.model, *calling.calls) if calling is not None else calls_table("")
    write_parquet(calls.collect(), calls_out)
    print(headline(outcomes))
    for line in warnings(outcomes):
        print(line)
    if calling is not None:
        sources = answer_sources(*(read_run_log(log) for log in calling.run_logs))
        print(f"{stage} {name}: answers: {sources}")
    for note in unscored_notes(outcomes):
        print(f"note: {note}")
    for line in closing:
        print(line)
