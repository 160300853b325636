"""The sample stage's logic: K responses from one model to every prompt of one condition.

Requests go out prompt by prompt, with a prompt's K trials back to back, so a local model
reuses the prompt it has just read. Each trial is a distinct sample: the trial index is
part of the call's cache key (and of its seed, for models that take one), so a rerun
returns the same K samples from the cache without a call. In batch mode
(`sampling.batch=true`) the missing calls are first answered by provider batch jobs
(losona/models/batch.py), and the table is then built from the cache the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from losona.config import SamplingSettings as SamplingSettings
from losona.contracts import RESPONSE_SCHEMA, table
from losona.errors import LosonaError
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


def sample_requests(prompts: pl.DataFrame, trials: int) -> list[Request]:
    """K requests per prompt, a prompt's trials back to back."""
    return [
        Request(messages=tuple(messages), trial=trial)
        for messages in prompts["messages"].to_list()
        for trial in range(trials)
    ]


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


def plan_sweep(
    prompts: pl.DataFrame,
    specs: Sequence[ModelSpec],
    conditions: Sequence[str],
    trials: int,
    *,
    cache_path: CacheLocation,
) -> list[tuple[str, CallPlan]]:
    """Every cell's plan of a sweep, models x conditions, as (condition, plan) pairs."""
    return [
        (condition, plan_sampling(prompts, spec, condition, trials, cache_path=cache_path))
        for spec in specs
        for condition in conditions
    ]


@dataclass(frozen=True)
class Sampled:
    """One cell's responses and the calls they were built from (published with the run)."""

    responses: pl.DataFrame  # RESPONSE_SCHEMA
    calls: pl.DataFrame  # CALL_SCHEMA


def sample_responses(
    prompts: pl.DataFrame,
    spec: ModelSpec,
    condition: str,
    trials: int,
    options: CallOptions,
) -> pl.DataFrame:
    """The response table of one model under one condition: K rows per prompt, sorted."""
    return sample_cell(prompts, spec, condition, trials, options).responses


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
    requests = sample_requests(rows, trials)
    completions = complete_all(spec, requests, options, to=f"'{spec.name}'", batch=batch)
    prompt_rows = [row for row in rows.iter_rows(named=True) for _ in range(trials)]
    responses = table(
        [
            {
                "scenario_id": row["scenario_id"],
                "condition": condition,
                "subject_model": spec.name,
                "provider_model": spec.model,
                "trial": request.trial,
                "prompt_sha256": row["prompt_sha256"],
                "response": completion.text,
                "finish_reason": completion.finish_reason,
                "prompt_tokens": completion.prompt_tokens,
                "completion_tokens": completion.completion_tokens,
                "cost_usd": completion.cost_usd,
            }
            for row, request, completion in zip(prompt_rows, requests, completions, strict=True)
        ],
        RESPONSE_SCHEMA,
        sort_by=["scenario_id", "trial"],
    )
    return Sampled(responses, calls_table(spec.model, completions))
