"""The paper's metrics: the majority vote, the unscored-trial policy, the scenario bootstrap."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from losona.core.config import AggregateSettings
from losona.core.formatting import percent
from losona.results.metrics import (
    bootstrap_intervals,
    bootstrap_settings,
    majority_threshold,
    mcnemar_exact,
    scenario_outcomes,
)

RUN = AggregateSettings(resamples=2_000, seed=7, confidence=0.95)


@pytest.mark.parametrize(("k", "needed"), [(1, 1), (2, 1), (3, 2), (4, 2), (5, 3)])
def test_majority_threshold_is_ceil_of_half(k: int, needed: int) -> None:
    assert majority_threshold(k) == needed


def trials(*labels: bool | None) -> pl.DataFrame:
    """One scenario's trials in one cell, with the columns scenario_outcomes reads."""
    return pl.DataFrame(
        {
            "judge": "j",
            "subject_model": "m",
            "condition": "naive",
            "scenario_id": "s",
            "event_type": "e",
            "norm_id": "n",
            "complies": list(labels),
        },
        schema_overrides={"complies": pl.Boolean},
    )


@pytest.mark.parametrize(
    ("labels", "passed", "consistent"),
    [
        ((True, True, True), True, True),
        ((True, True, False), True, False),
        ((True, False, False), False, False),
        ((False, False, False), False, True),
        # Unscored trials: the scored ones settle the vote whatever the others would say...
        ((True, True, None), True, None),
        ((False, False, None), False, None),
        ((True, False, None), None, False),
        # ...or leave it open; never is an unscored trial read as a breach.
        ((True, None, None), None, None),
        ((None, None, None), None, None),
        ((True, True, False, None), True, False),
        # One trial (K = 1) cannot disagree with itself: its consistency says nothing.
        ((True,), True, None),
        ((False,), False, None),
        ((True, False, False, None), None, False),
    ],
)
def test_outcome_of_a_scenario(
    labels: tuple[bool | None, ...], passed: bool | None, consistent: bool | None
) -> None:
    row = scenario_outcomes(trials(*labels)).row(0, named=True)
    assert row["passed"] is passed
    assert row["consistent"] is consistent
    assert row["trials"] == len(labels)
    assert row["scored"] == sum(label is not None for label in labels)
    assert row["complying"] == sum(label is True for label in labels)


def test_bootstrap_matches_scipys_plain_bootstrap_of_the_mean() -> None:
    rng = np.random.default_rng(0)
    values = (rng.random(38) < 0.4).astype(float)
    ours = bootstrap_intervals(values[None, :], RUN)
    plain = stats.bootstrap(
        (values,),
        np.mean,
        n_resamples=RUN.resamples,
        method="percentile",
        rng=np.random.default_rng(RUN.seed),
    ).confidence_interval
    assert ours.estimate[0] == pytest.approx(values.mean())
    assert (ours.low[0], ours.high[0]) == pytest.approx((plain.low, plain.high))


def test_a_rows_interval_does_not_depend_on_the_other_rows() -> None:
    rng = np.random.default_rng(1)
    values = (rng.random((3, 40)) < 0.5).astype(float)
    alone = bootstrap_intervals(values[:1], RUN)
    together = bootstrap_intervals(values, RUN)
    assert (alone.low[0], alone.high[0]) == (together.low[0], together.high[0])


def test_the_seed_fixes_the_interval() -> None:
    values = np.random.default_rng(2).random((1, 38))  # continuous, so seeds can differ
    first = bootstrap_intervals(values, RUN)
    again = bootstrap_intervals(values, RUN)
    other = bootstrap_intervals(values, RUN.model_copy(update={"seed": 8}))
    assert (first.low[0], first.high[0]) == (again.low[0], again.high[0])
    assert (first.low[0], first.high[0]) != (other.low[0], other.high[0])


def test_nan_marks_scenarios_left_out_of_a_rows_mean() -> None:
    values = np.array([[1.0, 1.0, np.nan, 0.0, np.nan, 1.0]])
    result = bootstrap_intervals(values, RUN)
    assert result.estimate[0] == pytest.approx(3 / 4)
    assert 0 <= result.low[0] <= 0.75 <= result.high[0] <= 1


def test_combined_rows_are_bootstrapped_as_the_mean_of_the_rows() -> None:
    rng = np.random.default_rng(3)
    values = (rng.random((2, 38)) < 0.4).astype(float)
    combined = bootstrap_intervals(values, RUN, combine=np.array([[0.5, 0.5]]))
    direct = bootstrap_intervals(values.mean(axis=0, keepdims=True), RUN)
    assert combined.estimate[0] == pytest.approx(values.mean())
    assert (combined.low[0], combined.high[0]) == pytest.approx((direct.low[0], direct.high[0]))


def test_a_constant_row_has_a_degenerate_interval() -> None:
    result = bootstrap_intervals(np.ones((1, 10)), RUN)
    assert (result.low[0], result.estimate[0], result.high[0]) == (1.0, 1.0, 1.0)


def test_one_scenario_gives_each_estimate_with_no_interval() -> None:
    values = np.array([[0.5], [np.nan], [1.0]])
    result = bootstrap_intervals(values, RUN, sizes=np.array([[4.0], [2.0], [3.0]]))
    assert np.array_equal(result.estimate, [0.5, np.nan, 1.0], equal_nan=True)
    assert np.isnan(result.low).all() and np.isnan(result.high).all()
    combined = bootstrap_intervals(values[::2], RUN, combine=np.array([[0.5, 0.5]]))
    assert combined.estimate.tolist() == [0.75] and np.isnan(combined.high).all()


def test_every_metrics_json_records_the_bootstrap_with_the_confidence_in_percent() -> None:
    assert bootstrap_settings(RUN) == {"bootstrap_resamples": 2_000, "seed": 7, "confidence": 95.0}


def test_mcnemar_is_the_exact_binomial_test_on_discordant_pairs() -> None:
    assert mcnemar_exact(18, 0) == pytest.approx(2 * 0.5**18)
    assert mcnemar_exact(0, 18) == mcnemar_exact(18, 0)
    assert mcnemar_exact(3, 3) == 1.0
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(7, 3) == pytest.approx(stats.binomtest(7, 10).pvalue)


def test_pct_rounds_to_one_decimal_and_keeps_missing_values_missing() -> None:
    assert percent(14 / 38) == 36.8
    assert percent(32 / 38) == 84.2
    assert percent(None) is None
    assert percent(float("nan")) is None
