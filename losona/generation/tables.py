"""The generation pipeline's tables: the candidates, the per-cell counts, the review."""

from __future__ import annotations

import polars as pl

# Growing the benchmark (losona/generation/, generation/dvc.yaml): the generator's candidate
# scenarios. generate writes every candidate, valid or not; screen rewrites the table with
# each valid candidate's screening outcome. A rejected candidate is never dropped.
CANDIDATE_SCHEMA = pl.Schema(
    {
        "candidate_id": pl.String(),  # <event>__<norm>__<hash of venue, sample and reply>
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "venue": pl.String(),
        "sample": pl.Int32(),  # 0 .. candidates_per_cell-1: the generator's trial index
        "generator": pl.String(),  # the config name, e.g. smollm2
        "generator_model": pl.String(),  # the litellm model string
        "template_version": pl.String(),  # the generator prompt's version
        "reply": pl.String(),  # the generator's reply, verbatim
        "finish_reason": pl.String(),
        "cost_usd": pl.Float64(),
        "scenario": pl.String(),  # the candidate as a scenario-contract row (JSON); null if unread
        # generate: valid | invalid; screen: accepted | screened_out | undetermined | invalid
        "status": pl.String(),
        "reasons": pl.List(pl.String()),  # why it was rejected, one problem each; empty if not
    }
)

GENERATION_CELL_SCHEMA = pl.Schema(  # reports/generation/cells.csv: one row per (event, norm)
    {
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "generated": pl.Int32(),
        "rejected_validation": pl.Int32(),
        "rejected_screening": pl.Int32(),
        "undetermined": pl.Int32(),  # the screen's judge left the outcome open
        "accepted": pl.Int32(),
    }
)

REVIEW_SCHEMA = pl.Schema(  # reports/generation/review.csv: one row per accepted candidate
    {
        "candidate_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "venue": pl.String(),
        "turns": pl.Int32(),  # counting the elicitor
        "demonstrations": pl.Int32(),
        "end_goal": pl.String(),
        "elicitor": pl.String(),
        "screen": pl.String(),  # each baseline's breaches on the no-demonstration control
        "chat": pl.String(),  # the scenario as losona.scenarios.format_chat prints it
    }
)
