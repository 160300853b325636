"""The HTML report's "Judge audit" section, from the audit stage's tables.

Judge-error figures (self-preference, corrected compliance) are shown apart from the
paper's metrics, and only when a run has them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import polars as pl

from losona.core.formatting import number, signed
from losona.pages import Section, section
from losona.results.aggregate import Reports
from losona.results.bundle import ReportBundle
from losona.results.metrics import BASELINE_CONDITION


def audit_section(result: ReportBundle, reports: Reports) -> Section:
    """The HTML report's "Judge audit" section: judges, people, determinism, controls."""
    results = reports["results.csv"]
    names = dict(results.select("subject_model", "model_label").iter_rows())
    names |= dict(results.select("condition", "condition_label").iter_rows())
    judges = dict(results.select("judge", "judge_label").iter_rows())
    return section(
        "audit",
        "Judge audit",
        "audit.html",
        pairs=pairs_data(result, names, judges),
        preference=self_preference_data(result, names),
        human=human_data(result, judges),
        corrected=corrected_data(result),
        determinism=determinism_data(result, judges),
        controls=controls_data(result, judges),
    )


def _labelled(row: Mapping[str, Any], judges: Mapping[str, str], *keys: str) -> dict[str, Any]:
    """A row with each judge named at `keys` replaced by its display label."""
    return dict(row) | {key: judges.get(row[key], row[key]) for key in keys}


def pairs_data(
    result: ReportBundle, names: Mapping[str, str], judges: Mapping[str, str]
) -> dict[str, Any]:
    """Judge against judge: agreement per pair, the headline comparisons, the breakdowns."""
    rows = [
        _labelled(r, judges, "judge_a", "judge_b") | _agreement(r)
        for r in result["judge_pairs.csv"].iter_rows(named=True)
    ]
    stability = []
    for (a, b), rows_ab in result["headline_stability.csv"].group_by(
        "judge_a", "judge_b", maintain_order=True
    ):
        same = rows_ab["same"].drop_nulls()
        stability.append(
            {
                "a": judges.get(str(a), str(a)),
                "b": judges.get(str(b), str(b)),
                "same": int(same.sum()),
                "compared": same.len(),
                "differ": rows_ab.filter(pl.col("same").not_()).height,
                "lines": [
                    {
                        "model": names.get(r["subject_model"], r["subject_model"]),
                        "comparison": r["check"]
                        if r["condition"] is None
                        else f"{r['check']}: {names.get(r['condition'], r['condition'])}",
                        "a": _condition_names(r["a"], names),
                        "b": _condition_names(r["b"], names),
                        "same": r["same"],
                    }
                    for r in rows_ab.iter_rows(named=True)
                ],
            }
        )
    breakdowns = []
    for (a, b), rows_ab in result["judge_pair_breakdown.csv"].group_by(
        "judge_a", "judge_b", maintain_order=True
    ):
        tables = []
        for by, title, header in (
            ("subject_model", "By model", "Model"),
            ("condition", "By condition", "Condition"),
            ("norm_id", "By norm", "Norm"),
        ):
            part = rows_ab.filter(pl.col("by") == by)
            tables.append(
                {
                    "title": title,
                    "header": header,
                    "code": by == "norm_id",  # norm ids are shown as the code they are
                    "rows": [
                        {
                            "group": r["group"]
                            if by == "norm_id"
                            else names.get(r["group"], r["group"]),
                            "both_scored": r["both_scored"],
                        }
                        | _agreement(r)
                        for r in part.iter_rows(named=True)
                    ],
                }
            )
        breakdowns.append(
            {"a": judges.get(str(a), str(a)), "b": judges.get(str(b), str(b)), "tables": tables}
        )
    return {
        "rows": rows,
        "stability": stability,
        "breakdowns": breakdowns,
        "baseline": BASELINE_CONDITION,
    }


def _agreement(row: Mapping[str, Any]) -> dict[str, str]:
    return {
        "agreement": number(row["agreement"]),
        "kappa": number(row["kappa"], 3),
        "a_compliance": number(row["a_compliance"]),
        "b_compliance": number(row["b_compliance"]),
    }


def _condition_names(value: str, names: Mapping[str, str]) -> str:
    return " = ".join(names.get(part, part) for part in value.split(" = "))


def human_data(result: ReportBundle, judges: Mapping[str, str]) -> dict[str, Any]:
    """Judge against people: the sheet's state, agreement per judge, the disagreements."""
    counts = result.metrics["labels"]
    return {
        "sheet_items": counts["sheet_items"],
        "labelled": counts["labelled"],
        "level": result.confidence,
        "rows": [
            _labelled(r, judges, "judge")
            | {
                "agreement": f"{number(r['agreement'])} [{number(r['agreement_low'])}, "
                f"{number(r['agreement_high'])}]",
                "kappa": number(r["kappa"], 3),
                "human_compliance": number(r["human_compliance"]),
                "judge_compliance": number(r["judge_compliance"]),
            }
            for r in result["human_agreement.csv"].iter_rows(named=True)
        ],
        "disagreements": [
            _labelled(r, judges, "judge")
            for r in result["human_items.csv"].filter(pl.col("agree").not_()).iter_rows(named=True)
        ],
    }


def self_preference_data(result: ReportBundle, names: Mapping[str, str]) -> dict[str, Any]:
    """Each judge's self-preference for its model family (empty when the check does not apply)."""

    def models(joined: str | None) -> str:
        return ", ".join(names.get(m, m) for m in (joined or "").split(", ") if m)

    return {
        "level": result.confidence,
        "rows": [
            r
            | {
                "own_family_models": models(r["own_family_models"]),
                "other_models": models(r["other_models"]),
                "judge_gap": signed(r["judge_gap"]),
                "reference_gap": signed(r["reference_gap"]),
                "self_preference": signed(r["self_preference"]),
                "interval": _interval(r["self_preference_low"], r["self_preference_high"]),
            }
            for r in result["self_preference.csv"].iter_rows(named=True)
        ],
    }


def corrected_data(result: ReportBundle) -> dict[str, Any]:
    """Per judge: the correction's basis (labelled items, sensitivity, specificity) and its
    corrected compliance and effects, or why there are none (empty without labels)."""
    corrected, deltas = result["corrected.csv"], result["corrected_deltas.csv"]
    judges = []
    for r in result["correction.csv"].iter_rows(named=True):
        mine = corrected.filter(pl.col("judge") == r["judge"])
        effects = deltas.filter(pl.col("judge") == r["judge"])
        judges.append(
            r
            | {
                "sensitivity": _estimate(r, "sensitivity"),
                "specificity": _estimate(r, "specificity"),
                "rows": [
                    {
                        "model": c["model_label"],
                        "condition": c["condition_label"],
                        "compliance": _estimate(c, "compliance"),
                        "corrected": _estimate(c, "corrected"),
                    }
                    for c in mine.iter_rows(named=True)
                ],
                "effects": [
                    {
                        "model": d["model_label"],
                        "condition": d["condition_label"],
                        "delta": _estimate(d, "compliance_delta", signed),
                        "corrected": _estimate(d, "corrected_delta", signed),
                    }
                    for d in effects.iter_rows(named=True)
                ],
            }
        )
    return {
        "level": result.confidence,
        "judges": judges,
        "baseline": BASELINE_CONDITION,
    }


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{number(low)}, {number(high)}]"


def _estimate(row: Mapping[str, Any], key: str, shown: Callable[[Any], str] = number) -> str:
    """`row[key]` then its interval (`key`_low, `key`_high), e.g. "42.0 [30.1, 55.2]"."""
    return f"{shown(row[key])} " + _interval(row[f"{key}_low"], row[f"{key}_high"])


def determinism_data(result: ReportBundle, judges: Mapping[str, str]) -> dict[str, Any]:
    """Each judge's determinism check (re-judged, rules, or not run) and the items that flipped."""
    return {
        "rows": [
            _labelled(r, judges, "judge") | {"flip_rate": number(r["flip_rate"])}
            for r in result["determinism.csv"].iter_rows(named=True)
        ],
        "flips": [
            _labelled(r, judges, "judge")
            for r in result["determinism_flips.csv"].iter_rows(named=True)
        ],
    }


def controls_data(result: ReportBundle, judges: Mapping[str, str]) -> dict[str, Any]:
    """Each judge's validity controls (all, compliant, breaching) and the ones it missed."""
    by_judge: dict[str, dict[str, dict[str, Any]]] = {}
    for r in result["controls.csv"].iter_rows(named=True):
        by_judge.setdefault(r["judge"], {})[r["example"]] = r
    return {
        "rows": [
            {
                "judge": judges.get(judge, judge),
                "judge_model": kinds["all"]["judge_model"],
                "kinds": [
                    {
                        "right": f"{kinds[k]['right']}/{kinds[k]['items']}",
                        "accuracy": number(kinds[k]["accuracy"]),
                    }
                    for k in ("all", "compliant", "breaching")
                ],
                "unscored": kinds["all"]["unscored"],
            }
            for judge, kinds in by_judge.items()
        ],
        "misses": [
            _labelled(r, judges, "judge")
            for r in result["control_misses.csv"].iter_rows(named=True)
        ],
    }
