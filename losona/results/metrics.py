"""The paper's metrics (Section 5.3) as pure functions: majority vote, intervals, paired tests.

Accuracy-at-K: a scenario passes when at least ceil(K/2) of its K trials comply; a
cell's accuracy is the share of its scenarios that pass. Compliance is the mean of the
trial labels, consistency the share of scenarios whose K labels all agree (none at K = 1:
one label always agrees with itself, so the figure would say nothing). Intervals come from
resampling scenarios, never raw model calls.

Unscored trials (the judge's reply was unparseable or its call failed) follow one
policy, `UNSCORED_POLICY`: a scenario counts only when its scored trials settle the
outcome whatever its unscored trials would have said; otherwise it is left out of that
cell's denominator and counted. An unscored trial is never read as a breach or a pass.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from losona.config import AggregateSettings
from losona.formatting import percent
from losona.judges.verdicts import CELL

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

# Resampled indices are drawn in batches of about this many entries, which bounds the
# bootstrap's memory (two arrays of this size) whatever the number of scenarios.
_BATCH_ENTRIES = 2_000_000


def majority_threshold(k: int) -> int:
    """How many of K trials must comply for a scenario to pass: ceil(K/2)."""
    return math.ceil(k / 2)


def scenario_outcomes(verdicts: pl.DataFrame, by: Sequence[str] = CELL) -> pl.DataFrame:
    """One row per (judge, model, condition, scenario): trial counts and the majority outcome.

    `passed` and `consistent` are null when unscored trials leave them undetermined, and
    `consistent` is null too for a scenario of one trial (K = 1): it cannot disagree.
    Every scenario of a cell must have the same number of trials (checked by the loader).
    `by` names the columns of a cell (the dynamic extension adds its arm).
    """
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


def bootstrap_means(
    values: np.ndarray,
    combine: np.ndarray | None = None,
    *,
    n_resamples: int,
    seed: int,
    confidence: float,
    sizes: np.ndarray | None = None,
) -> Estimates:
    """Scenario-bootstrap percentile intervals for means over scenarios, all from one resampling.

    `values` has one row per statistic and one column per scenario, NaN where a scenario
    does not count for that row. Each row's statistic is its mean over the scenarios that
    count; with `combine` (G x rows) the reported statistics are `combine @ row_means`
    (a mean over models, say). Every statistic sees the same resampled scenario sets, so a
    row's interval depends only on its own values, the number of scenarios and the seed,
    never on which other rows are present. A resample in which no scenario counts for a
    statistic is dropped for that statistic.

    With `sizes` (the shape of `values`), a scenario counts as many times as its size:
    when a value is a share of a scenario's trials and its size their number, the
    statistic is the share of all the trials (pooled), still resampled by scenario.
    """
    numerators, denominators = _weighted(values, sizes)
    n = values.shape[1]

    def combined_means(indices: np.ndarray, axis: int = -1) -> np.ndarray:
        # `indices` holds one resample of scenario positions per row (batch x n). Counting
        # how often each scenario was drawn turns every row's resampled mean into one
        # matrix product, instead of gathering rows x batch x n values.
        batch = indices.shape[0]
        offsets = indices.astype(np.intp) + (np.arange(batch) * n)[:, None]
        drawn = np.bincount(offsets.ravel(), minlength=batch * n).reshape(batch, n)
        drawn = drawn.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            means = (drawn @ numerators.T) / (drawn @ denominators.T)
        return _combined(means.T, combine)

    from scipy import stats  # seconds to import: only a process that bootstraps pays for it

    estimate = _point_estimates(values, combine, sizes)
    with warnings.catch_warnings():
        # scipy warns when a bootstrap distribution holds NaN (resamples in which nothing
        # counts for a statistic); the interval is taken below without those resamples.
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        result = stats.bootstrap(
            (np.arange(n),),
            combined_means,
            n_resamples=n_resamples,
            batch=max(1, _BATCH_ENTRIES // n),
            vectorized=True,
            method="percentile",
            confidence_level=confidence,
            rng=np.random.default_rng(seed),
        )
    alpha = (1 - confidence) / 2
    distribution = result.bootstrap_distribution
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a statistic with no data at all
        low, high = np.nanquantile(distribution, [alpha, 1 - alpha], axis=-1)
    return Estimates(estimate=estimate, low=low, high=high)


def bootstrap_intervals(
    values: np.ndarray,
    settings: AggregateSettings,
    *,
    combine: np.ndarray | None = None,
    sizes: np.ndarray | None = None,
) -> Estimates:
    """`bootstrap_means` with the run's `aggregate:` settings: the one place they become
    intervals, for the first turn's reports, the dynamic turn's and the audit's agreement.

    One scenario (a column) cannot be resampled: with fewer than two, each statistic comes
    with its estimate and no interval (NaN bounds).
    """
    if values.shape[1] < 2:
        estimate = _point_estimates(values, combine, sizes)
        return Estimates(estimate, np.full_like(estimate, np.nan), np.full_like(estimate, np.nan))
    return bootstrap_means(
        values,
        combine,
        n_resamples=settings.resamples,
        seed=settings.seed,
        confidence=settings.confidence,
        sizes=sizes,
    )


def bootstrap_settings(settings: AggregateSettings) -> dict[str, Any]:
    """The bootstrap's settings as every metrics.json's `settings` block records them, the
    confidence as a percentage (95.0 for `aggregate.confidence: 0.95`; docs/metrics.md)."""
    return {
        "bootstrap_resamples": settings.resamples,
        "seed": settings.seed,
        "confidence": percent(settings.confidence),
    }


def _weighted(values: np.ndarray, sizes: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Each scenario's numerator and denominator: 0 and 0 where it does not count."""
    counts_row = ~np.isnan(values)
    if sizes is None:
        return np.where(counts_row, values, 0.0), counts_row.astype(float)
    return np.where(counts_row, values * sizes, 0.0), np.where(counts_row, sizes, 0.0).astype(float)


def _combined(means: np.ndarray, combine: np.ndarray | None) -> np.ndarray:
    # Without `combine`, each statistic is its own row's mean: no product, so that a
    # row with no data in a resample (NaN) leaves every other row's mean as it is.
    return means if combine is None else combine @ means


def _point_estimates(
    values: np.ndarray, combine: np.ndarray | None, sizes: np.ndarray | None
) -> np.ndarray:
    """Each statistic over all the scenarios, as `bootstrap_means` estimates it."""
    numerators, denominators = _weighted(values, sizes)
    with np.errstate(invalid="ignore", divide="ignore"):
        return _combined(numerators.sum(axis=1) / denominators.sum(axis=1), combine)


def mcnemar_exact(recovered: int, regressed: int) -> float:
    """Two-sided exact McNemar p-value: a binomial test on the discordant pairs."""
    discordant = recovered + regressed
    if discordant == 0:
        return 1.0
    from scipy import stats

    return float(stats.binomtest(recovered, discordant, 0.5).pvalue)
