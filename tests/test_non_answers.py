"""Each cell's share of non-answers: a diagnostic beside compliance that moves no metric."""

from __future__ import annotations

import polars as pl
from test_aggregate import scenario_table, small_run

from losona.core.config import AggregateSettings
from losona.results.aggregate import aggregate

BOOTSTRAP = AggregateSettings(resamples=200, seed=0, confidence=0.95)
METRICS = ["acc_at_k", "acc_low", "acc_high", "compliance", "consistency", "unscored_trials"]


def with_non_answers(verdicts: pl.DataFrame) -> pl.DataFrame:
    """The same verdicts, marked as a lexicon judge marks them: trial 0 breaches are non-answers."""
    return verdicts.with_columns(
        non_answer=pl.when(pl.col("complies").is_null())
        .then(None)
        .otherwise((pl.col("trial") == 0) & ~pl.col("complies"))
    )


def test_results_count_non_answers_per_cell_without_moving_any_metric() -> None:
    plain = small_run()
    marked = with_non_answers(plain)
    before = aggregate(plain, _scenarios(), bootstrap=BOOTSTRAP)
    after = aggregate(marked, _scenarios(), bootstrap=BOOTSTRAP)
    results = after.tables["results.csv"]
    # The paper's figures are the same to the last digit, and so is every other table.
    assert results.select(METRICS).equals(before.tables["results.csv"].select(METRICS))
    for name in ("means.csv", "deltas.csv", "flips.csv", "outcomes.csv"):
        assert after.tables[name].equals(before.tables[name]), name
    assert after.metrics == before.metrics
    expected = (
        marked.filter(pl.col("complies").is_not_null())
        .group_by("subject_model", "condition")
        .agg(n=pl.col("non_answer").sum(), scored=pl.len())
    )
    for row in expected.iter_rows(named=True):
        found = results.filter(
            (pl.col("subject_model") == row["subject_model"])
            & (pl.col("condition") == row["condition"])
        ).row(0, named=True)
        assert found["non_answers"] == row["n"]
        assert found["non_answer_share"] == round(100 * row["n"] / row["scored"], 1)
    assert "Non-answers (scored trials that take up no elicitor" in after.table1


def test_a_judge_that_does_not_check_uptake_reports_no_share() -> None:
    reports = aggregate(small_run(), _scenarios(), bootstrap=BOOTSTRAP)
    results = reports.tables["results.csv"]
    assert results["non_answers"].null_count() == results.height
    assert results["non_answer_share"].null_count() == results.height
    assert "Non-answers: this judge does not check uptake" in reports.table1


def _scenarios() -> pl.DataFrame:
    return scenario_table()
