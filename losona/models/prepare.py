"""Each request's call-cache key and parameters (`RequestKeys`, no litellm: a cached run
never imports it), and a config checked against its provider and priced (`prepare`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from losona.core.config import ModelSpec
from losona.core.errors import LosonaError
from losona.models import pricing
from losona.models.litellm_api import litellm_module, model_info, resolve, unsupported_params
from losona.models.pricing import EXPECTED_COMPLETION_TOKENS, Rates, Usage
from losona.models.prompt_caching import (
    NO_REUSE,
    CacheRule,
    Reuse,
    cache_rule,
    plan_reuse,
    token_encoder,
)
from losona.models.tokens import Tokenizer, select_tokenizer
from losona.models.values import Request

# Bumped when the key's recipe changes, so old entries are never misread.
KEY_VERSION = 1


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class RequestKeys:
    """What a spec sends with every request, and each request's cache key (no litellm)."""

    spec: ModelSpec
    params: dict[str, Any]  # what is sent, after drops
    dropped: list[str]
    prefix: str  # the canonical JSON of what the key covers besides messages and trial

    @classmethod
    def of(cls, spec: ModelSpec) -> RequestKeys:
        endpoints = sorted(spec.endpoints) if spec.endpoints else [spec.api_base]
        return cls(
            spec,
            params={k: v for k, v in spec.params.items() if k not in spec.drop_params},
            dropped=sorted(k for k in spec.params if k in spec.drop_params),
            prefix=_canonical({"v": KEY_VERSION, "model": spec.model, "endpoints": endpoints}),
        )

    def key_and_params(self, request: Request) -> tuple[str, dict[str, Any]]:
        """The request's cache key and the parameters to send with it."""
        messages = _canonical([dict(m) for m in request.messages])
        params = self.params
        if self.spec.seed_per_trial:
            digest = hashlib.sha256(f"{messages}\0{request.trial}".encode()).hexdigest()
            params = {**params, "seed": int(digest[:8], 16) % 2**31}
        material = f"{self.prefix}\0{_canonical(params)}\0{messages}\0{request.trial}"
        return hashlib.sha256(material.encode()).hexdigest(), params


@dataclass(frozen=True)
class Prepared(RequestKeys):
    """Everything about a spec that does not change from call to call, its provider asked."""

    rates: Rates  # its prices: list, cache, batch (losona/models/pricing.py)
    rule: CacheRule | None  # how its provider caches prompts; None: not at all, or turned off

    @functools.cached_property
    def tokenizer(self) -> Tokenizer:
        """What estimates count prompt tokens with: chosen once, from what is on disk."""
        return select_tokenizer(litellm_module(), self.spec.model)

    @property
    def max_tokens(self) -> Any:
        """The completion length the config caps calls at (max_tokens), if it does."""
        return self.params.get("max_tokens") or self.params.get("max_completion_tokens")

    @property
    def completion_tokens(self) -> int:
        """The completion length estimates assume: max_tokens, else a guess."""
        return int(self.max_tokens or EXPECTED_COMPLETION_TOKENS)

    def prompt_tokens(self, request: Request) -> int:
        """A request's prompt tokens, counted offline."""
        return self.tokenizer.count(
            litellm_module(), self.spec.model, [dict(m) for m in request.messages]
        )

    def estimate(self, request: Request, reuse: Reuse = NO_REUSE) -> float:
        """A cost estimate one call cannot exceed with max_tokens set (0 at an unknown price);
        with cache_control markers, every prompt token as written, should its read miss."""
        if not self.rates.known:
            return 0.0
        prompt = self.prompt_tokens(request)
        written = prompt if reuse.markers else 0
        return self.rates.cost(Usage(prompt, self.completion_tokens, cache_write_tokens=written))

    def reuse(self, requests: Sequence[Request]) -> list[Reuse]:
        """What each request, sent in this order, can reuse of an earlier one's prefix."""
        if self.rule is None:
            return [NO_REUSE] * len(requests)
        encode = token_encoder(self.tokenizer.encode)
        return plan_reuse((r.messages for r in requests), encode, self.rule)

    def cache_rule_described(self) -> str:
        """How this model's prompts are cached, for the run log and the reader."""
        if self.rule is not None:
            return self.rule.describe()
        if not self.spec.prompt_caching:
            return "off (prompt_caching: false)"
        return "none known for this provider"


def prepare(spec: ModelSpec) -> Prepared:
    """Resolve the provider, check the parameters against it, and find the price."""
    _, provider = resolve(spec)
    rejected = unsupported_params(spec)
    if rejected:
        raise LosonaError(
            f"model '{spec.name}': litellm reports that {provider} does not accept {rejected} "
            f"for {spec.model}; remove them from params (or seed_per_trial), or list them "
            f"under drop_params in conf/model/{spec.name}.yaml so the drop is recorded"
        )
    # Asked even when the config sets a price, so the answer is in before any Router runs.
    info = model_info(spec.model)
    # An address for Anthropic's or Gemini's API (a proxy) keeps that provider's prices.
    own_server = bool(spec.api_base or spec.endpoints) and provider not in ("anthropic", "gemini")
    rates = pricing.rates_for(spec, provider, own_server, info)
    rule = cache_rule(provider, spec.model, own_server=own_server) if spec.prompt_caching else None
    return Prepared(**vars(RequestKeys.of(spec)), rates=rates, rule=rule)


def call_key(spec: ModelSpec, request: Request) -> str:
    """A request's call-cache key, computed without litellm (for checking a published run)."""
    return RequestKeys.of(spec).key_and_params(request)[0]
