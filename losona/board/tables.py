"""The board's tables: a submission's rows (rows/<name>.parquet), merged into board.parquet."""

from __future__ import annotations

import polars as pl

# One row per ranked cell of a verified run (judge x model x condition, from its
# results.csv), or one row for a run that is not verified, saying why (its cells null).
ROW_SCHEMA = pl.Schema(
    {
        "submission": pl.String(),
        "commit": pl.String(),  # null: the revision could not be found
        "verified": pl.Boolean(),
        "reason": pl.String(),  # why not verified; null when verified
        # What makes numbers comparable (losona/board/recheck.py, from the provenance).
        "scenario_set": pl.String(),  # the scenario table's content sha256
        "subset": pl.String(),
        "judge_identity": pl.String(),  # kind and model and template hash, or panel and members
        "k": pl.Int32(),
        "vote_rule": pl.String(),
        "pipeline_version": pl.String(),  # the losona the run was made with
        # The cell, as results.csv has it (labels: "[TEST DOUBLE]" marks a test double).
        "judge": pl.String(),
        "judge_label": pl.String(),
        "subject_model": pl.String(),
        "model_label": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        "scenarios": pl.Int32(),
        "acc_at_k": pl.Float64(),
        "acc_low": pl.Float64(),
        "acc_high": pl.Float64(),
        "compliance": pl.Float64(),
        # Compliance corrected for judge error (the run's audit, from people's labels); null
        # where the run has no labels for the judge.
        "corrected": pl.Float64(),
        "corrected_low": pl.Float64(),
        "corrected_high": pl.Float64(),
    }
)

# What rows must share to be ranked together.
GROUP_KEYS = ("scenario_set", "subset", "judge_identity", "k", "vote_rule")
