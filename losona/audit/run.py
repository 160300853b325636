"""The whole audit of one run: every table, and the headline figures as DVC metrics."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from losona.audit.comparison import (
    compare_judges,
    headline_checks,
    headline_stability,
    judge_names,
)
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
    # Every file starts empty: the human-label tables stay so until labels are back.
    tables = {name: table([], schema, sort_by=[]) for name, schema in AUDIT_FILES.items()}
    tables["judge_pairs.csv"], tables["judge_pair_breakdown.csv"] = compare_judges(
        verdicts, judges, presentation
    )
    tables["headline_stability.csv"] = headline_stability(
        reports["results.csv"], reports["deltas.csv"], judges
    )
    if labels.human is not None:
        tables["human_agreement.csv"], tables["human_items.csv"] = human_agreement(
            labels.human, verdicts, judges, bootstrap
        )
        tables["correction.csv"], tables["corrected.csv"], tables["corrected_deltas.csv"] = (
            corrected_compliance(labels.human, verdicts, judges, presentation, bootstrap)
        )
    tables["self_preference.csv"] = self_preference(
        verdicts, judges, kinds, families or Families(), bootstrap
    )
    tables["determinism.csv"], tables["determinism_flips.csv"] = determinism(
        verdicts, scenarios, judges, determinism_settings, kinds, rejudge
    )
    tables["controls.csv"], tables["control_misses.csv"] = control_results(
        {j: controls[j] for j in judges}
    )
    return ReportBundle(tables, _metrics(tables, labels, bootstrap))


def _metrics(
    tables: Mapping[str, pl.DataFrame], labels: Labels, bootstrap: AggregateSettings
) -> dict[str, Any]:
    def pick(row: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
        return {k: row[k] for k in keys if row[k] is not None}

    stability = tables["headline_stability.csv"]
    judge_pairs = {}
    for row in tables["judge_pairs.csv"].iter_rows(named=True):
        checks, same = headline_checks(stability, row["judge_a"], row["judge_b"])
        judge_pairs[f"{row['judge_a']}_vs_{row['judge_b']}"] = pick(
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
        ) | {"headline_checks": checks, "headline_same": same}
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
