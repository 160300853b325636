"""The paper's metrics (Section 5.3) as pure functions: majority vote, intervals, paired tests.

Accuracy-at-K: a scenario passes when at least ceil(K/2) of its K trials comply. Unscored
trials follow `UNSCORED_POLICY`: a scenario counts only when its scored trials settle the
outcome; an unscored trial is never read as a breach or a pass (docs/metrics.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from losona.core.config import AggregateSettings
from losona.core.formatting import percent
from losona.judges.verdicts import CELL
from losona.results.resampling import bootstrap_distribution, percentile_interval

# The condition every other one is compared with (paper Section 5.3).
BASELINE_CONDITION = "naive"

VOTE_RULE = "a scenario passes when at least ceil(K/2) of its K trials comply"
UNSCORED_POLICY_ID = "settled-by-scored-trials"
UNSCORED_POLICY = (
    "unscored trials (unparseable judge reply or failed judge call) are never counted as "
    "a breach or a pass: a scenario counts only when its scored trials settle the outcome "
    "whatever the unscored ones would have said, and is otherwise left out of that cell's "
    "denominator and counted as undetermined; compliance is the mean of the scored trials; "
    "consistency counts a scenario only when all its trials are scored or its scored "
    "trials already disagree"
)


def majority_threshold(k: int) -> int:
    """How many of K trials must comply for a scenario to pass: ceil(K/2)."""
    return math.ceil(k / 2)


def scenario_outcomes(verdicts: pl.DataFrame, by: Sequence[str] = CELL) -> pl.DataFrame:
    """One row per (judge, model, condition, scenario): trial counts and the majority outcome.
    `passed` and `consistent` are null when unscored trials leave them undetermined, and
    `consistent` too at K = 1. `by` names a cell's columns (the dynamic turn adds its arm)."""
    counted = verdicts.group_by([*by, "scenario_id", "event_type", "norm_id"]).agg(
        trials=pl.len().cast(pl.Int32),
        scored=pl.col("complies").is_not_null().sum().cast(pl.Int32),
        complying=pl.col("complies").sum().cast(pl.Int32),
    )
    threshold = ((pl.col("trials") + 1) // 2).cast(pl.Int32)  # ceil(K/2) for integer K
    unscored = pl.col("trials") - pl.col("scored")
    failing = pl.col("scored") - pl.col("complying")
    return counted.with_columns(
        passed=pl.when(pl.col("complying") >= threshold)
        .then(True)
        .when(pl.col("complying") + unscored < threshold)
        .then(False)
        .otherwise(None),
        consistent=pl.when((pl.col("complying") > 0) & (failing > 0))
        .then(False)
        .when((unscored == 0) & (pl.col("trials") > 1))
        .then(True)
        .otherwise(None),
    ).sort([*by, "scenario_id"])


@dataclass(frozen=True)
class Estimates:
    """Point estimates and percentile-interval bounds, one entry per statistic."""

    estimate: np.ndarray
    low: np.ndarray
    high: np.ndarray


def bootstrap_intervals(
    values: np.ndarray,
    settings: AggregateSettings,
    *,
    combine: np.ndarray | None = None,
    sizes: np.ndarray | None = None,
) -> Estimates:
    """Scenario-bootstrap percentile intervals for means over scenarios, from one resampling.

    `values` has one row per statistic and one column per scenario, NaN where a scenario does
    not count for that row; with `combine` (G x rows) the statistics are `combine @ row_means`;
    with `sizes`, a scenario counts as many times as its size. Every row sees the same
    resamples. Fewer than two scenarios give NaN bounds.
    """

    # Each scenario's numerator and denominator in each row: 0 and 0 where it does not count.
    counts = ~np.isnan(values)
    weights = 1.0 if sizes is None else sizes
    numerators = np.where(counts, values * weights, 0.0)
    denominators = np.where(counts, weights, 0.0).astype(float)

    def combined_means(drawn: np.ndarray) -> np.ndarray:
        # `drawn` counts how often each scenario was drawn in each resample (batch x n), so
        # every row's resampled mean is one matrix product.
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (drawn @ numerators.T) / (drawn @ denominators.T)
        return _combined(means.T, combine)

    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = _combined(numerators.sum(axis=1) / denominators.sum(axis=1), combine)
    distribution = bootstrap_distribution(combined_means, [values.shape[1]], settings)
    if distribution is None:
        return Estimates(estimate, np.full_like(estimate, np.nan), np.full_like(estimate, np.nan))
    low, high = percentile_interval(distribution, settings.confidence)
    return Estimates(estimate=estimate, low=low, high=high)


def bootstrap_settings(settings: AggregateSettings) -> dict[str, Any]:
    """The bootstrap's settings as every metrics.json's `settings` block records them, the
    confidence as a percentage (95.0 for `aggregate.confidence: 0.95`; docs/metrics.md)."""
    return {
        "bootstrap_resamples": settings.resamples,
        "seed": settings.seed,
        "confidence": percent(settings.confidence),
    }


def _combined(means: np.ndarray, combine: np.ndarray | None) -> np.ndarray:
    # Without `combine`, each statistic is its own row's mean: no product, so that a
    # row with no data in a resample (NaN) leaves every other row's mean as it is.
    return means if combine is None else combine @ means


def mcnemar_exact(recovered: int, regressed: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test on the discordant pairs."""
    discordant = recovered + regressed
    if discordant == 0:
        return 1.0
    from scipy import stats

    return float(stats.binomtest(recovered, discordant, 0.5).pvalue)
