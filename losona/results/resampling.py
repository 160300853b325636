"""The scenario bootstrap, the one resampler of every interval (paper Section 5.3).

A figure that also rests on a finite labelled sample (a corrected rate) resamples the
labelled items too, independently; a statistic sees each resample as draw counts.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence

import numpy as np

from losona.core.config import AggregateSettings

# Resampled indices are drawn in batches of about this many entries, which bounds the
# bootstrap's memory (two arrays of this size) whatever the number of units.
_BATCH_ENTRIES = 2_000_000

Statistic = Callable[..., np.ndarray]


def bootstrap_distribution(
    statistic: Statistic, sizes: Sequence[int], settings: AggregateSettings
) -> np.ndarray | None:
    """`statistic`'s values on every resample (statistics x resamples); None when a sample has
    fewer than two units. Each sample (`sizes`: its units) is resampled independently, and
    `statistic` receives one array of draw counts per sample (resamples x units)."""
    if min(sizes) < 2:
        return None

    def on_indices(*indices: np.ndarray, axis: int = -1) -> np.ndarray:
        counts = []
        for drawn, n in zip(indices, sizes, strict=True):
            batch = drawn.shape[0]
            offsets = drawn.astype(np.intp) + (np.arange(batch) * n)[:, None]
            counts.append(
                np.bincount(offsets.ravel(), minlength=batch * n).reshape(batch, n).astype(float)
            )
        return statistic(*counts)

    from scipy import stats  # seconds to import: only a process that bootstraps pays for it

    with warnings.catch_warnings():
        # Resamples in which a statistic is undefined are NaN: each caller says what a NaN
        # means for its interval (scipy's own percentile interval is not used).
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.bootstrap(
            tuple(np.arange(n) for n in sizes),
            on_indices,
            paired=False,
            n_resamples=settings.resamples,
            batch=max(1, _BATCH_ENTRIES // max(sizes)),
            vectorized=True,
            method="percentile",
            confidence_level=settings.confidence,
            rng=np.random.default_rng(settings.seed),
        )
    distribution: np.ndarray = np.atleast_2d(result.bootstrap_distribution)
    return distribution


def percentile_interval(
    distribution: np.ndarray,
    confidence: float,
    undefined: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Each statistic's percentile interval over its resamples (low, high). With `undefined`
    = (lowest, highest), a NaN resample counts as `lowest` for the low end and `highest` for
    the high end (it widens the interval); without, NaN resamples are left out."""

    if distribution.shape[0] == 0:
        return np.zeros(0), np.zeros(0)
    alpha = (1 - confidence) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a statistic never defined
        if undefined is None:
            low, high = np.nanquantile(distribution, [alpha, 1 - alpha], axis=-1)
        else:
            missing = np.isnan(distribution)
            low = np.quantile(np.where(missing, undefined[0], distribution), alpha, axis=-1)
            high = np.quantile(np.where(missing, undefined[1], distribution), 1 - alpha, axis=-1)
    return low, high
