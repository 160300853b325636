"""dynamic_sample: the subject's second reply to every second-turn prompt of one cell.

The same road as the first turn's sample stage (losona/sampling/sample.py): one request per
prompt, keyed by the prompt and the first turn's trial index (so a trial keeps its seed
for models that take one), through the call cache, failed calls refused.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from losona.contracts import DYNAMIC_RESPONSE_SCHEMA, table
from losona.dynamic.arms import OK
from losona.errors import LosonaError
from losona.models import (
    BatchSettings,
    CallOptions,
    ModelSpec,
    Request,
    calls_table,
    complete_all,
)


@dataclass(frozen=True)
class Sampled:
    """One cell's second replies and the calls they were built from (published with the run)."""

    responses: pl.DataFrame  # DYNAMIC_RESPONSE_SCHEMA
    calls: pl.DataFrame  # CALL_SCHEMA


def second_turn_requests(prompts: pl.DataFrame) -> list[Request]:
    """One request per second-turn prompt that was rendered (status ok), in table order."""
    rows = prompts.filter(pl.col("status") == OK)
    return [
        Request(messages=tuple(messages), trial=trial)
        for messages, trial in zip(rows["messages"].to_list(), rows["trial"], strict=True)
    ]


def sample_second_turn(
    prompts: pl.DataFrame,
    spec: ModelSpec,
    options: CallOptions,
    *,
    origin: str,
    batch: BatchSettings | None = None,
) -> Sampled:
    """One cell's second replies (DYNAMIC_RESPONSE_SCHEMA), with the calls behind them."""
    models = sorted(prompts["subject_model"].unique().to_list(), key=str)
    if models != [spec.name]:
        raise LosonaError(
            f"{origin}: column 'subject_model' holds {models}, expected only '{spec.name}'; "
            "rerun dynamic_render"
        )
    rows = prompts.filter(pl.col("status") == OK)
    requests = second_turn_requests(prompts)
    completions = complete_all(spec, requests, options, to=f"'{spec.name}'", batch=batch)
    responses = table(
        [
            {
                "scenario_id": row["scenario_id"],
                "condition": row["condition"],
                "subject_model": spec.name,
                "judge": row["judge"],
                "trial": row["trial"],
                "arm": row["arm"],
                "provider_model": spec.model,
                "prompt_sha256": row["prompt_sha256"],
                "response": completion.text,
                "finish_reason": completion.finish_reason,
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
                "cost_usd": completion.cost_usd,
            }
            for row, completion in zip(rows.iter_rows(named=True), completions, strict=True)
        ],
        DYNAMIC_RESPONSE_SCHEMA,
        sort_by=["scenario_id", "trial", "arm"],
    )
    return Sampled(responses, calls_table(spec.model, completions).collect())
