"""Judge against judge: agreement on the same responses, and whether the headlines hold."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from losona.audit.agreement import RESPONSE_KEY, Confusion
from losona.audit.tables import JUDGE_PAIR_SCHEMA, PAIR_BREAKDOWN_SCHEMA, STABILITY_SCHEMA
from losona.core.contracts import table
from losona.core.errors import LosonaError
from losona.core.formatting import signed
from losona.results.presentation import Presentation


def judge_names(verdicts: pl.DataFrame, presentation: Presentation) -> list[str]:
    """The judges in the verdicts, in the sweep's order (others after, alphabetically)."""
    names = verdicts["judge"].unique().to_list()
    return sorted(names, key=lambda j: presentation.cell_key((j, "", ""))[0])


def paired_verdicts(verdicts: pl.DataFrame, a: str, b: str) -> pl.DataFrame:
    """Every response either judge has a verdict for: `a` and `b` its labels, `in_a`, `in_b`."""

    def side(judge: str, name: str) -> pl.DataFrame:
        return verdicts.filter(pl.col("judge") == judge).select(
            *RESPONSE_KEY,
            pl.col("norm_id").alias(f"norm_{name}"),
            pl.col("response").alias(f"response_{name}"),
            pl.col("complies").alias(name),
            pl.lit(True).alias(f"in_{name}"),
        )

    rows = side(a, "a").join(side(b, "b"), on=RESPONSE_KEY, how="full", coalesce=True)
    rows = rows.with_columns(
        pl.coalesce("norm_a", "norm_b").alias("norm_id"),
        pl.col("in_a").fill_null(False),
        pl.col("in_b").fill_null(False),
    ).sort(RESPONSE_KEY)
    differing = rows.filter(
        pl.col("in_a") & pl.col("in_b") & pl.col("response_a").ne_missing(pl.col("response_b"))
    )
    if not differing.is_empty():
        row = differing.row(0, named=True)
        raise LosonaError(
            f"judges '{a}' and '{b}' judged different texts for the same response "
            f"(model '{row['subject_model']}', condition '{row['condition']}', scenario "
            f"'{row['scenario_id']}', trial {row['trial']}): one judge's verdicts are older "
            "than the responses; rerun judge (dvc repro)"
        )
    return rows.drop("norm_a", "norm_b", "response_a", "response_b")


def compare_judges(
    verdicts: pl.DataFrame, judges: Sequence[str], presentation: Presentation
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """judge_pairs.csv and judge_pair_breakdown.csv: every pair of judges, overall and by group."""
    pairs, breakdown = [], []
    for a, b in itertools.combinations(judges, 2):
        rows = paired_verdicts(verdicts, a, b)
        both = rows.filter(pl.col("in_a") & pl.col("in_b"))
        scored = both.filter(pl.col("a").is_not_null() & pl.col("b").is_not_null())
        confusion = Confusion.of(scored["a"], scored["b"])
        pairs.append(
            {
                "judge_a": a,
                "judge_b": b,
                "rows": rows.height,
                "only_a": rows.filter(~pl.col("in_b")).height,
                "only_b": rows.filter(~pl.col("in_a")).height,
                "unscored_a": both["a"].null_count(),
                "unscored_b": both["b"].null_count(),
                "both_scored": confusion.n,
                **confusion.figures(),
                "a_yes_b_yes": confusion.yes_yes,
                "a_yes_b_no": confusion.yes_no,
                "a_no_b_yes": confusion.no_yes,
                "a_no_b_no": confusion.no_no,
            }
        )
        for by in ("subject_model", "condition", "norm_id"):
            for group in _ordered_groups(scored[by].unique().to_list(), by, presentation):
                part = scored.filter(pl.col(by) == group)
                confusion = Confusion.of(part["a"], part["b"])
                breakdown.append(
                    {
                        "judge_a": a,
                        "judge_b": b,
                        "by": by,
                        "group": group,
                        "both_scored": confusion.n,
                        **confusion.figures(),
                    }
                )
    return (
        table(pairs, JUDGE_PAIR_SCHEMA, sort_by=[]),
        table(breakdown, PAIR_BREAKDOWN_SCHEMA, sort_by=[]),
    )


def _ordered_groups(groups: list[str], by: str, presentation: Presentation) -> list[str]:
    if by == "subject_model":
        return sorted(groups, key=lambda m: presentation.cell_key(("", m, ""))[1])
    if by == "condition":
        return sorted(groups, key=lambda c: presentation.cell_key(("", "", c))[2])
    return sorted(groups)


def headline_stability(
    results: pl.DataFrame, deltas: pl.DataFrame, judges: Sequence[str]
) -> pl.DataFrame:
    """headline_stability.csv: each model's best condition and each effect's sign, judge by
    judge, from aggregate's tables: the very numbers each judge's report shows."""
    rows = []
    for a, b in itertools.combinations(judges, 2):
        judged_by_b = set(results.filter(pl.col("judge") == b)["subject_model"])
        models = dict.fromkeys(results.filter(pl.col("judge") == a)["subject_model"])
        for model in (m for m in models if m in judged_by_b):
            best_a, best_b = (_best_conditions(results, judge, model) for judge in (a, b))
            same_best = set(best_a) == set(best_b) if best_a and best_b else None
            on_a, on_b = " = ".join(best_a), " = ".join(best_b)
            pair = {"judge_a": a, "judge_b": b, "subject_model": model}
            rows.append(pair | _check("best condition", None, on_a, on_b, same_best))
            effect_a, effect_b = (_effects(deltas, judge, model) for judge in (a, b))
            for condition, delta_a in effect_a.items():
                if condition not in effect_b:
                    continue
                delta_b = effect_b[condition]
                same = (
                    None
                    if delta_a is None or delta_b is None
                    else bool(np.sign(delta_a) == np.sign(delta_b))
                )
                on_a, on_b = signed(delta_a), signed(delta_b)
                rows.append(pair | _check("effect vs naive", condition, on_a, on_b, same))
    return table(rows, STABILITY_SCHEMA, sort_by=[])


def headline_checks(stability: pl.DataFrame, a: str, b: str) -> tuple[int, int]:
    """How many of a pair's headline comparisons could be made, and how many came out the same."""
    pair = stability.filter((pl.col("judge_a") == a) & (pl.col("judge_b") == b))
    same = pair["same"].drop_nulls()
    return same.len(), int(same.sum())


def _check(
    check: str, condition: str | None, on_a: str, on_b: str, same: bool | None
) -> dict[str, Any]:
    return {
        "check": check,
        "condition": condition,
        "a": on_a or "n/a",
        "b": on_b or "n/a",
        "same": same,
    }


def _best_conditions(results: pl.DataFrame, judge: str, model: str) -> list[str]:
    """The conditions with the highest accuracy-at-K (several when tied)."""
    rows = results.filter(
        (pl.col("judge") == judge)
        & (pl.col("subject_model") == model)
        & pl.col("acc_at_k").is_not_null()
    )
    if rows.is_empty():
        return []
    best = rows["acc_at_k"].max()
    return rows.filter(pl.col("acc_at_k") == best)["condition"].to_list()


def _effects(deltas: pl.DataFrame, judge: str, model: str) -> dict[str, float | None]:
    rows = deltas.filter((pl.col("judge") == judge) & (pl.col("subject_model") == model))
    return dict(rows.select("condition", "delta").iter_rows())
