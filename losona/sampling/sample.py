"""K responses from one model to every prompt of one condition: a prompt's K trials back
to back (a local model reuses the prompt it has just read), each its own call-cache key."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import polars as pl

from losona.core.contracts import RESPONSE_SCHEMA, row_order, table
from losona.core.errors import LosonaError
from losona.core.files import CHUNK, Chunks, OnDemand
from losona.models import (
    BatchSettings,
    CacheLocation,
    CallOptions,
    CallPlan,
    ModelSpec,
    Request,
    calls_table,
    complete_all,
    plan,
)


def condition_prompts(prompts: pl.DataFrame, condition: str) -> pl.DataFrame:
    """The prompt rows of one condition, refusing a condition that was never rendered."""
    rows = prompts.filter(pl.col("condition") == condition).sort("scenario_id")
    if rows.is_empty():
        rendered = sorted(set(prompts["condition"]))
        raise LosonaError(
            f"the prompt table has no prompts for condition '{condition}' (it has {rendered}); "
            "render it first: add it to sweep.conditions and rerun render"
        )
    return rows


def sample_requests(prompts: pl.DataFrame, trials: int) -> Sequence[Request]:
    """K requests per prompt, a prompt's trials back to back, each built when asked for."""
    messages = prompts["messages"]

    def request(index: int) -> Request:
        prompt, trial = divmod(index, trials)
        return Request(messages=tuple(messages.slice(prompt, 1).to_list()[0]), trial=trial)

    return OnDemand(len(messages) * trials, request)


def plan_sampling(
    prompts: pl.DataFrame,
    spec: ModelSpec,
    condition: str,
    trials: int,
    *,
    cache_path: CacheLocation,
) -> CallPlan:
    """What sampling this cell would do: calls, cached calls and estimated cost."""
    rows = condition_prompts(prompts, condition)
    return plan(spec, sample_requests(rows, trials), cache_path=cache_path)


@dataclass(frozen=True)
class Sampled:
    """One cell's responses and the calls behind them, each made a chunk at a time."""

    responses: Chunks  # RESPONSE_SCHEMA
    calls: Chunks  # CALL_SCHEMA


def sample_cell(
    prompts: pl.DataFrame,
    spec: ModelSpec,
    condition: str,
    trials: int,
    options: CallOptions,
    *,
    batch: BatchSettings | None = None,
) -> Sampled:
    """One model's K replies to every prompt of one condition, with the calls behind them."""
    rows = condition_prompts(prompts, condition)
    completions = complete_all(
        spec, sample_requests(rows, trials), options, to=f"'{spec.name}'", batch=batch
    )
    # Writing needs each prompt's id and hash, not its messages: the tables hold no prompt.
    prompt_keys = rows.select("scenario_id", "prompt_sha256")
    calls = len(completions)
    # Call i is trial i % K of prompt i // K; rows go out sorted as `table` sorts them.
    call = pl.int_range(calls, eager=True)
    order = row_order(
        pl.DataFrame(
            {
                "scenario_id": prompt_keys["scenario_id"].gather(call // trials),
                "trial": call % trials,
            }
        ),
        ["scenario_id", "trial"],
    )

    def responses() -> Iterator[pl.DataFrame]:
        for start in range(0, calls, CHUNK):
            chunk = order[start : start + CHUNK].to_list()
            prompt = prompt_keys[[i // trials for i in chunk]]
            yield table(
                [
                    {
                        "scenario_id": scenario_id,
                        "condition": condition,
                        "subject_model": spec.name,
                        "provider_model": spec.model,
                        "trial": i % trials,
                        "prompt_sha256": prompt_sha256,
                        "response": completion.text,
                        "finish_reason": completion.finish_reason,
                        "prompt_tokens": completion.prompt_tokens,
                        "completion_tokens": completion.completion_tokens,
                        "cost_usd": completion.cost_usd,
                    }
                    for i, (scenario_id, prompt_sha256) in zip(
                        chunk, prompt.iter_rows(), strict=True
                    )
                    for completion in (completions[i],)
                ],
                RESPONSE_SCHEMA,
                sort_by=[],
            )

    return Sampled(Chunks(RESPONSE_SCHEMA, calls, responses), calls_table(spec.model, completions))
