"""The whole audit of one run: every table, and the headline figures as DVC metrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from losona.audit.comparison import compare_judges, headline_stability, judge_names
from losona.audit.controls import control_results
from losona.audit.correction import corrected_compliance
from losona.audit.files import AUDIT_FILES
from losona.audit.human import human_agreement
from losona.audit.labelling import Labels
from losona.audit.rejudging import determinism
from losona.audit.self_preference import ESTIMATED, Families, self_preference
from losona.audit.settings import DeterminismSettings
from losona.audit.tables import HUMAN_AGREEMENT_SCHEMA
from losona.core.config import AggregateSettings
from losona.core.contracts import table
from losona.core.errors import LosonaError
from losona.judges.base import Judge
from losona.results.aggregate import Reports
from losona.results.bundle import ReportBundle
from losona.results.metrics import bootstrap_settings
from losona.results.presentation import Presentation


def audit(
    verdicts: pl.DataFrame,
    scenarios: pl.DataFrame,
    reports: Reports,
    controls: Mapping[str, pl.DataFrame],
    labels: Labels,
    *,
    presentation: Presentation,
    bootstrap: AggregateSettings,
    determinism_settings: DeterminismSettings,
    kinds: Mapping[str, str],
    rejudge: Callable[[str], Judge],
    families: Families | None = None,
) -> ReportBundle:
    """The judge audit of one run: every table and the headline figures as DVC metrics;
    without `families` (each judge's and subject's model family) self-preference is empty."""

    judges = judge_names(verdicts, presentation)
    missing = sorted(set(judges) - set(controls))
    if missing:
        raise LosonaError(
            f"no validity controls for judge(s) {missing}: run the judge_controls stage "
            "(python stages/judge_controls.py judge=NAME, or dvc repro)"
        )
    pairs, breakdown = compare_judges(verdicts, judges, presentation)
    stability = headline_stability(reports["results.csv"], reports["deltas.csv"], judges)
    if labels.human is not None:
        human, human_items = human_agreement(labels.human, verdicts, judges, bootstrap)
        correction, corrected, corrected_deltas = corrected_compliance(
            labels.human, verdicts, judges, presentation, bootstrap
        )
    else:
        human = table([], AUDIT_FILES["human_agreement.csv"], sort_by=[])
        human_items = table([], AUDIT_FILES["human_items.csv"], sort_by=[])
        correction = table([], AUDIT_FILES["correction.csv"], sort_by=[])
        corrected = table([], AUDIT_FILES["corrected.csv"], sort_by=[])
        corrected_deltas = table([], AUDIT_FILES["corrected_deltas.csv"], sort_by=[])
    preference = self_preference(verdicts, judges, kinds, families or Families(), bootstrap)
    stable, flips = determinism(verdicts, scenarios, judges, determinism_settings, kinds, rejudge)
    control_table, misses = control_results({j: controls[j] for j in judges})
    tables = {
        "judge_pairs.csv": pairs,
        "judge_pair_breakdown.csv": breakdown,
        "headline_stability.csv": stability,
        "human_agreement.csv": human,
        "human_items.csv": human_items,
        "determinism.csv": stable,
        "determinism_flips.csv": flips,
        "controls.csv": control_table,
        "control_misses.csv": misses,
        "correction.csv": correction,
        "corrected.csv": corrected,
        "corrected_deltas.csv": corrected_deltas,
        "self_preference.csv": preference,
    }
    return ReportBundle(tables, _metrics(tables, labels, bootstrap))


def pair_name(a: str, b: str) -> str:
    """How a pair of judges is keyed in metrics.json, e.g. "lexicon_vs_gemini_pro"."""
    return f"{a}_vs_{b}"


def _metrics(
    tables: Mapping[str, pl.DataFrame], labels: Labels, bootstrap: AggregateSettings
) -> dict[str, Any]:
    def pick(row: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
        return {k: row[k] for k in keys if row[k] is not None}

    stability = tables["headline_stability.csv"]
    judge_pairs = {}
    for row in tables["judge_pairs.csv"].iter_rows(named=True):
        checks = stability.filter(
            (pl.col("judge_a") == row["judge_a"]) & (pl.col("judge_b") == row["judge_b"])
        )["same"].drop_nulls()
        judge_pairs[pair_name(row["judge_a"], row["judge_b"])] = pick(
            row,
            (
                "both_scored",
                "agreement",
                "kappa",
                "a_compliance",
                "b_compliance",
                "a_yes_b_no",
                "a_no_b_yes",
            ),
        ) | {"headline_checks": checks.len(), "headline_same": int(checks.sum())}
    human = {
        row["judge"]: pick(row, [c for c in HUMAN_AGREEMENT_SCHEMA.names() if c != "judge"])
        for row in tables["human_agreement.csv"].iter_rows(named=True)
    }
    stable = {
        row["judge"]: pick(
            row, ("method", "items", "repeats", "flipped_items", "flip_rate", "changed_judgements")
        )
        for row in tables["determinism.csv"].iter_rows(named=True)
    }
    metrics: dict[str, Any] = {
        "settings": bootstrap_settings(bootstrap),
        "judge_pairs": judge_pairs,
        "labels": {
            "sheet_items": 0 if labels.key is None else labels.key.height,
            "labelled": 0 if labels.human is None else labels.human.height,
        },
        "human": human,
        "determinism": stable,
    }
    # The judge-error figures appear only when a run has them, so a run without labels or
    # a second judge keeps exactly the metrics it had before they existed.
    corrected: dict[str, Any] = {}
    for row in tables["corrected.csv"].iter_rows(named=True):
        cell = corrected.setdefault(row["judge"], {}).setdefault(row["subject_model"], {})
        cell[row["condition"]] = pick(row, ("corrected", "corrected_low", "corrected_high"))
    if corrected:
        metrics["corrected"] = corrected
    preference = {
        row["judge"]: pick(row, ("self_preference", "self_preference_low", "self_preference_high"))
        for row in tables["self_preference.csv"].iter_rows(named=True)
        if row["status"] == ESTIMATED
    }
    if preference:
        metrics["self_preference"] = preference
    return metrics
