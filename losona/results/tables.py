"""The first turn's report tables (aggregate writes them, plot reads them): their columns,
types and row order, built through `losona.core.contracts.table` like every table."""

from __future__ import annotations

import polars as pl

# Report tables: aggregate writes them as CSV under paths.reports_dir, plot reads them.
# Percentages are 0-100 with one decimal; `scenarios` always counts the scenarios behind a
# figure, after leaving out the ones unscored trials leave undetermined (losona/results/metrics.py).
OUTCOME_SCHEMA = pl.Schema(  # outcomes.csv: one row per judge x model x condition x scenario
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "trials": pl.Int32(),
        "scored": pl.Int32(),
        "complying": pl.Int32(),
        "passed": pl.Boolean(),  # null: undetermined
        "consistent": pl.Boolean(),  # null: undetermined, or one trial (K = 1)
    }
)

RESULT_SCHEMA = pl.Schema(  # results.csv: the paper's Table 1, one row per model x condition
    {
        "judge": pl.String(),
        "judge_model": pl.String(),
        # Display labels (conf/<group>/<name>.yaml's `label`), "[TEST DOUBLE]" appended
        # for a test double's (losona/core/formatting.py).
        "judge_label": pl.String(),
        "subject_model": pl.String(),
        "model_label": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        "k": pl.Int32(),
        "scenarios": pl.Int32(),
        "undetermined": pl.Int32(),
        "passed": pl.Int32(),
        "acc_at_k": pl.Float64(),
        "acc_low": pl.Float64(),
        "acc_high": pl.Float64(),
        "compliance": pl.Float64(),
        "consistency": pl.Float64(),  # null at K = 1: one trial agrees with itself
        "consistency_scenarios": pl.Int32(),
        "trials": pl.Int32(),
        "unscored_trials": pl.Int32(),
        # A diagnostic beside compliance, in no paper metric: how many scored trials the
        # judge found to take up no elicitor (empty, filler, off-topic, echo, ...), and
        # their share of the scored trials; null when the judge does not check it.
        "non_answers": pl.Int32(),
        "non_answer_share": pl.Float64(),
        # Why the judge's verdicts in this cell say nothing (losona/judges/health.py): every
        # verdict the same while its validity controls fail, no reasoning, or one reasoning
        # on most replies; null when they do say something.
        "degenerate": pl.String(),
    }
)

MEAN_SCHEMA = pl.Schema(  # means.csv: the mean over models per condition (paper Section 6)
    {
        "judge": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        "models": pl.Int32(),
        "acc_at_k": pl.Float64(),
        "acc_low": pl.Float64(),
        "acc_high": pl.Float64(),
        "compliance": pl.Float64(),
        "consistency": pl.Float64(),  # over the models of K > 1; null when none is
        "delta": pl.Float64(),  # null for the baseline itself
        "delta_low": pl.Float64(),
        "delta_high": pl.Float64(),
    }
)

DELTA_SCHEMA = pl.Schema(  # deltas.csv: each condition against naive over the same scenarios
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "model_label": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        "scenarios": pl.Int32(),
        "naive_acc": pl.Float64(),
        "condition_acc": pl.Float64(),
        "delta": pl.Float64(),
        "delta_low": pl.Float64(),
        "delta_high": pl.Float64(),
        "mcnemar_p": pl.Float64(),
        "recovered": pl.Int32(),
        "naive_failures": pl.Int32(),
        "regressed": pl.Int32(),
        "naive_successes": pl.Int32(),
    }
)

FLIP_SCHEMA = pl.Schema(  # flips.csv: every recovered failure and introduced regression
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "flip": pl.String(),  # recovered | regressed
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "naive_complying": pl.Int32(),
        "naive_scored": pl.Int32(),
        "condition_complying": pl.Int32(),
        "condition_scored": pl.Int32(),
    }
)


def breakdown_schema(by: str) -> pl.Schema:
    """by_norm.csv (by="norm_id") and by_event.csv (by="event_type"): diagnostic only."""
    return pl.Schema(
        {
            "judge": pl.String(),
            "subject_model": pl.String(),
            "condition": pl.String(),
            by: pl.String(),
            "scenarios": pl.Int32(),
            "undetermined": pl.Int32(),
            "passed": pl.Int32(),
            "acc_at_k": pl.Float64(),
            "compliance": pl.Float64(),
        }
    )
