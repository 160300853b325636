"""Self-preference: does a judge favour subjects of its own model family? (paper Section 7)

    self_preference(j) = judge_gap(j) - mean over reference judges r of judge_gap(r)

where judge_gap is a judge's compliance for subjects of j's family minus that for other
subjects; the reference judges are the run's other judges not of j's family, panels aside
(docs/metrics.md#self-preference has the definitions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from losona.audit.correction import trials_per_scenario
from losona.audit.tables import SELF_PREFERENCE_SCHEMA
from losona.core.config import AggregateSettings, judge_kind_settings
from losona.core.contracts import table
from losona.core.formatting import percent
from losona.results.resampling import bootstrap_distribution, percentile_interval

ESTIMATED = "estimated"


@dataclass(frozen=True)
class Families:
    """The model family of each judge and subject (conf/judge/, conf/model/); None: unknown."""

    judges: Mapping[str, str | None] = field(default_factory=dict)
    models: Mapping[str, str | None] = field(default_factory=dict)


def _same(a: str | None, b: str | None) -> bool:
    """Two families are the same when both are named alike (case and spaces aside)."""
    return a is not None and b is not None and a.strip().casefold() == b.strip().casefold()


def self_preference(
    verdicts: pl.DataFrame,
    judges: Sequence[str],
    kinds: Mapping[str, str],
    families: Families,
    bootstrap: AggregateSettings,
) -> pl.DataFrame:
    """self_preference.csv: one row per judge (panels aside) when the check applies."""
    rated = [j for j in judges if j not in kinds or not judge_kind_settings(kinds[j]).combines]
    models = [
        m for m in verdicts["subject_model"].unique().sort() if families.models.get(m) is not None
    ]
    distinct = {str(families.models[m]).strip().casefold() for m in models}
    if len(rated) < 2 or len(distinct) < 2:
        return table([], SELF_PREFERENCE_SCHEMA, sort_by=[])

    scenario_ids = sorted(verdicts["scenario_id"].unique().to_list())
    pairs = [(j, m) for j in rated for m in models]
    counted = verdicts.group_by("judge", "subject_model", "scenario_id").agg(
        complying=pl.col("complies").sum(), scored=pl.col("complies").is_not_null().sum()
    )  # every condition pooled
    complying, scored = trials_per_scenario(
        counted, ("judge", "subject_model"), pairs, scenario_ids
    )
    column = {pair: i for i, pair in enumerate(pairs)}

    rows: list[dict[str, Any]] = []
    weights = []  # per estimated judge, each figure as a weighted sum of the c(j, m)
    for judge in rated:
        family = families.judges.get(judge)
        own, other, reference = [], [], []  # nothing to compare for a judge without a family
        if family is not None:
            own = [m for m in models if _same(families.models[m], family)]
            other = [m for m in models if not _same(families.models[m], family)]
            reference = [
                r for r in rated if r != judge and not _same(families.judges.get(r), family)
            ]
        status = _why_not(family, own, other, reference) or ESTIMATED
        rows.append(
            {
                "judge": judge,
                "family": family,
                "own_family_models": ", ".join(own),
                "other_models": ", ".join(other),
                "reference_judges": ", ".join(reference),
                "scenarios": len(scenario_ids),
                "status": status,
            }
        )
        if status == ESTIMATED:
            judge_gap = _gap({judge: 1.0}, own, other, column, len(pairs))
            share = 1.0 / len(reference)
            reference_gap = _gap(dict.fromkeys(reference, share), own, other, column, len(pairs))
            weights += [judge_gap, reference_gap, judge_gap - reference_gap]

    estimated = [row for row in rows if row["status"] == ESTIMATED]
    if estimated:
        combine = np.vstack(weights)

        def statistic(scenario_counts: np.ndarray) -> np.ndarray:
            with np.errstate(invalid="ignore", divide="ignore"):
                rates = (scenario_counts @ complying.T) / (scenario_counts @ scored.T)
            result: np.ndarray = combine @ rates.T
            return result

        point = statistic(np.ones((1, len(scenario_ids))))[:, 0]
        low = high = np.full(point.shape, np.nan)
        distribution = bootstrap_distribution(statistic, (len(scenario_ids),), bootstrap)
        if distribution is not None:
            low, high = percentile_interval(distribution, bootstrap.confidence)
        for k, row in enumerate(estimated):
            row |= {
                "judge_gap": percent(float(point[3 * k])),
                "reference_gap": percent(float(point[3 * k + 1])),
                "self_preference": percent(float(point[3 * k + 2])),
                "self_preference_low": percent(float(low[3 * k + 2])),
                "self_preference_high": percent(float(high[3 * k + 2])),
            }
    return table(rows, SELF_PREFERENCE_SCHEMA, sort_by=[])


def _why_not(
    family: str | None, own: Sequence[str], other: Sequence[str], reference: Sequence[str]
) -> str | None:
    if family is None:
        return "no family: the judge is rules, or its model config names no family"
    if not own:
        return f"no subject of its family ({family}) in this run"
    if not other:
        return f"no subject of another family than {family} in this run"
    if not reference:
        return f"no other judge outside its family ({family}) to compare with"
    return None


def _gap(
    judges: Mapping[str, float],
    own: Sequence[str],
    other: Sequence[str],
    column: Mapping[tuple[str, str], int],
    width: int,
) -> np.ndarray:
    """Weights of mean(own subjects) - mean(other subjects), averaged over `judges`."""
    row = np.zeros(width)
    for judge, share in judges.items():
        for m in own:
            row[column[(judge, m)]] += share / len(own)
        for m in other:
            row[column[(judge, m)]] -= share / len(other)
    return row
