"""dynamic_sample: the subject's second reply to every second-turn prompt of one cell.

The calls go out in SEND_ORDER, so that each prompt follows the one it shares the longest
prefix with and the embedded model reads each shared prefix once.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from losona.core.cell_tables import check_cell_columns
from losona.core.contracts import table
from losona.dynamic.arms import OK
from losona.dynamic.tables import DYNAMIC_RESPONSE_SCHEMA
from losona.models import BatchSettings, CallOptions, ModelSpec, Request, calls_table, complete_all


@dataclass(frozen=True)
class Sampled:
    """One cell's second replies and the calls they were built from (published with the run)."""

    responses: pl.DataFrame  # DYNAMIC_RESPONSE_SCHEMA
    calls: pl.DataFrame  # CALL_SCHEMA


# The order of the calls: see the module's docstring.
SEND_ORDER = ("scenario_id", "trial", "arm")


def _rendered(prompts: pl.DataFrame) -> pl.DataFrame:
    """The second-turn prompts that were rendered (status ok), in SEND_ORDER."""
    # dynamic_render writes its table in this order already; sorting again keeps a table
    # read in any other order from sending twins apart.
    return prompts.filter(pl.col("status") == OK).sort(SEND_ORDER, maintain_order=True)


def second_turn_requests(prompts: pl.DataFrame) -> list[Request]:
    """One request per second-turn prompt that was rendered (status ok), in SEND_ORDER."""
    rows = _rendered(prompts)
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
    check_cell_columns(prompts, origin, {"subject_model": spec.name}, "dynamic_render")
    rows = _rendered(prompts)
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
        sort_by=list(SEND_ORDER),
    )
    return Sampled(responses, calls_table(spec.model, completions).collect())
