"""Validity controls: every judge's control results (the judge_controls stage) in one table."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from losona.audit.rejudging import verdict_label
from losona.audit.tables import CONTROL_MISS_SCHEMA, CONTROL_SUMMARY_SCHEMA
from losona.core.contracts import table
from losona.judges.run import control_summary


def control_results(controls: Mapping[str, pl.DataFrame]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """controls.csv and control_misses.csv: every judge's validity controls in one table."""
    summary, misses = [], []
    for judge, df in controls.items():
        counts = control_summary(df)
        for example in ("all", "compliant", "breaching"):
            part = counts[example]
            summary.append(
                {"judge": judge, "judge_model": counts["judge_model"], "example": example}
                | {k: part[k] for k in ("items", "right", "wrong", "unscored", "accuracy")}
            )
        missed = df.filter(pl.col("complies").ne_missing(pl.col("expected")))
        misses += [
            {
                "judge": judge,
                **{k: row[k] for k in ("scenario_id", "norm_id", "example", "response")},
                "verdict": verdict_label(row["complies"], row["judge_status"]),
                "reasoning": row["reasoning"],
            }
            for row in missed.iter_rows(named=True)
        ]
    return (
        table(summary, CONTROL_SUMMARY_SCHEMA, sort_by=[]),
        table(misses, CONTROL_MISS_SCHEMA, sort_by=["judge", "scenario_id", "example"]),
    )
