"""The LLM judge's kind: a model called through the model layer."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from losona.core.config import JudgeConfig
from losona.judges import prompt
from losona.judges.kinds.kind import JudgeKind
from losona.judges.llm import LLMJudge
from losona.models import CallOptions
from losona.models.batch import batch_provider
from losona.models.call_cache import needs_key


def _make(config: JudgeConfig, options: CallOptions) -> LLMJudge:
    """The judge calling its config's model with `options`, capped by its config's own
    max_cost_usd (whatever `options` says of the cap)."""
    assert config.model is not None  # the kind's settings require it
    spec = config.model
    batch = config.batching
    if batch.enabled:
        batch_provider(spec, batch)  # before the key: no key makes a provider batchable
    if needs_key(options.cache_path):
        spec.check_credentials()
    return LLMJudge(
        spec,
        dataclasses.replace(options, max_cost_usd=config.max_cost_usd),
        structured_output=structured_output(config),
        batch=batch,
    )


def structured_output(config: JudgeConfig) -> str:
    """An LLM judge's structured_output setting; `none` (the paper's setting) when unset."""
    return config.structured_output or "none"


def _record(config: JudgeConfig) -> dict[str, Any]:
    return {
        "template_version": prompt.JUDGE_TEMPLATE_VERSION,
        # Whether the verdict's JSON schema went with each call as response_format.
        "structured_output": structured_output(config),
    }


def _verdict_origin(entry: Mapping[str, Any], origin: str) -> dict[str, Any]:
    return {
        "judge_model": entry.get("model", {}).get("model"),
        "judge_version": entry.get("template_version"),
    }


KIND = JudgeKind(
    make=_make,
    record=_record,
    verdict_origin=_verdict_origin,
)
