"""Determinism: a seeded subset re-judged N times with the call cache bypassed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from losona.audit.agreement import RESPONSE_KEY
from losona.audit.settings import DeterminismSettings
from losona.audit.tables import DETERMINISM_FLIP_SCHEMA, DETERMINISM_SCHEMA
from losona.core.config import judge_kind_settings
from losona.core.contracts import scenarios_from_table, table
from losona.core.formatting import percent
from losona.judges.base import Judge, JudgeCase
from losona.judges.verdicts import judge_model


def verdict_label(complies: bool | None, status: str | None) -> str:
    """A verdict in words: complies, breach, or unscored with its status."""
    if complies is None:
        return f"unscored: {status or 'unknown'}"
    return "complies" if complies else "breach"


def determinism(
    verdicts: pl.DataFrame,
    scenarios: pl.DataFrame,
    judges: Sequence[str],
    settings: DeterminismSettings,
    kinds: Mapping[str, str],
    rejudge: Callable[[str], Judge],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """determinism.csv and determinism_flips.csv: each judge re-judging a seeded subset, with
    `rejudge(name)` (the call cache bypassed); a judge whose kind cannot vary is not re-judged,
    its `method` saying why."""

    summary: list[dict[str, Any]] = []
    flips: list[dict[str, Any]] = []
    by_id = {s.scenario_id: s for s in scenarios_from_table(scenarios)}
    for name in judges:
        mine = verdicts.filter(pl.col("judge") == name)
        steady = judge_kind_settings(kinds[name]).determinism
        if steady is not None or not settings.repeats:
            summary.append(
                {
                    "judge": name,
                    "judge_model": judge_model(mine, name),
                    "method": steady or "not run",
                    "items": 0,
                    "repeats": 0,
                    "flipped_items": 0,
                    "changed_judgements": 0,
                    "unscored_judgements": 0,
                }
            )
            continue
        judge = rejudge(name)
        sample = _determinism_sample(mine, settings)
        cases = [JudgeCase.for_response(by_id[r["scenario_id"]], r["response"]) for r in sample]
        repeats = [judge.judge(cases) for _ in range(settings.repeats)]
        flipped = changed = unscored = 0
        for i, row in enumerate(sample):
            again = [run[i] for run in repeats]
            labels = {j.complies for j in again if j.complies is not None}
            if row["complies"] is not None:
                labels.add(row["complies"])
                changed += sum(
                    j.complies is not None and j.complies != row["complies"] for j in again
                )
            unscored += sum(j.complies is None for j in again)
            if len(labels) > 1:
                flipped += 1
                flips.append(
                    {
                        "judge": name,
                        **{k: row[k] for k in (*RESPONSE_KEY, "norm_id")},
                        "original": verdict_label(row["complies"], row["judge_status"]),
                        "repeats": ", ".join(verdict_label(j.complies, j.status) for j in again),
                    }
                )
        summary.append(
            {
                "judge": name,
                "judge_model": judge.model,
                "method": "re-judged",
                "items": len(sample),
                "repeats": settings.repeats,
                "flipped_items": flipped,
                "flip_rate": percent(flipped / len(sample)) if sample else None,
                "changed_judgements": changed,
                "unscored_judgements": unscored,
            }
        )
    return (
        table(summary, DETERMINISM_SCHEMA, sort_by=[]),
        table(flips, DETERMINISM_FLIP_SCHEMA, sort_by=["judge", *RESPONSE_KEY]),
    )


def _determinism_sample(
    verdicts: pl.DataFrame, settings: DeterminismSettings
) -> list[dict[str, Any]]:
    """A seeded simple random sample of one judge's verdicts on real responses."""
    pool = verdicts.filter(pl.col("response").is_not_null()).sort(RESPONSE_KEY)
    rng = np.random.default_rng(settings.seed)
    chosen = rng.choice(pool.height, size=min(settings.items, pool.height), replace=False)
    return [pool.row(int(i), named=True) for i in sorted(chosen)]
