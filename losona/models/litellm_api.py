"""litellm, imported on first use (it takes seconds), and all the model layer asks of it."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from losona.core.config import ModelSpec
from losona.core.errors import LosonaError

# The key sent to an endpoint of your own when the config names no key variable.
NO_KEY = "EMPTY"


@functools.cache
def litellm_module() -> ModuleType:
    """litellm, imported on first use and configured once."""
    import litellm  # the package's __init__ has already pinned the local price map

    from losona.models import smollm2

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    if "LITELLM_LOG" not in os.environ:
        # Hydra's stage logging passes INFO records through, and litellm logs a line per
        # call at INFO; set LITELLM_LOG=INFO (or DEBUG) to see them.
        for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):
            logging.getLogger(name).setLevel(logging.WARNING)
    smollm2.register()
    return litellm


def keep_states_beside(call_cache: Path) -> None:
    """Let the embedded model keep what it read, for the next process, beside the call cache."""
    litellm_module()
    from losona.models import smollm2

    smollm2.keep_states_beside(call_cache)


@functools.cache
def model_info(model: str) -> dict[str, Any] | None:
    """litellm's price map entry for the model, None if it has none: asked once per process,
    as a Router registers its models in that map without a price (an unknown model at $0)."""
    try:
        info = dict(litellm_module().get_model_info(model))
    except Exception:  # litellm raises a bare Exception for a model it does not map
        return None
    return info if info.get("input_cost_per_token") is not None else None


def resolve(spec: ModelSpec) -> tuple[str, str]:
    """The model name and provider litellm resolves the model string to."""
    litellm = litellm_module()
    try:
        model, provider, _, _ = litellm.get_llm_provider(spec.model)
    except litellm.exceptions.BadRequestError:
        raise LosonaError(
            f"model '{spec.name}': litellm does not know the provider of {spec.model!r}; "
            "write it as provider/model, e.g. openai/gpt-5.5 or hosted_vllm/my-model"
        ) from None
    return model, provider


def provider_of(spec: ModelSpec) -> str:
    """The litellm provider a model config's calls go to (e.g. openai, gemini)."""
    return resolve(spec)[1]


def unsupported_params(spec: ModelSpec) -> list[str]:
    """The parameters the config sends that litellm says its provider does not accept (none
    when litellm does not know)."""
    model, provider = resolve(spec)
    supported = litellm_module().get_supported_openai_params(
        model=model, custom_llm_provider=provider
    )
    params = [k for k in spec.params if k not in spec.drop_params]
    sent = [*params, *(["seed"] if spec.seed_per_trial else [])]
    return sorted(p for p in sent if supported is not None and p not in supported)


def api_key(spec: ModelSpec) -> str | None:
    """The key to send, read when needed and never kept: the config's, or for a server of
    your own without one vLLM's placeholder (OpenAI-style clients insist on a key)."""
    key = spec.api_key()
    if key is None and (spec.api_base or spec.endpoints):
        key = NO_KEY
    return key


def sender(spec: ModelSpec) -> Callable[..., Awaitable[Any]]:
    """The coroutine function that sends one call: direct, or spread over endpoints."""
    litellm = litellm_module()
    # Retries are ours (losona/models/retry.py says why): litellm's are off.
    common = {"timeout": spec.timeout_s, "max_retries": 0}
    key = api_key(spec)
    if spec.endpoints:
        router = litellm.Router(
            model_list=[
                {
                    "model_name": spec.name,
                    "litellm_params": {"model": spec.model, "api_base": base, "api_key": key}
                    | common,
                }
                for base in spec.endpoints
            ],
            num_retries=0,
            disable_cooldowns=True,
        )
        return functools.partial(router.acompletion, model=spec.name)
    return functools.partial(
        litellm.acompletion,
        model=spec.model,
        api_base=spec.api_base,
        api_key=key,
        num_retries=0,
        **common,
    )
