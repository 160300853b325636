"""What a model is, what is asked of it and what comes back: the model layer's plain values.

Nothing here imports litellm (which takes seconds to import), so reading and checking a
model config, and failing on a missing key, happen at once.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from losona.errors import LosonaError

ENV_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# Call settings the model layer owns; a config's `params` may not set them.
MANAGED_PARAMS = frozenset(
    {
        "model",
        "messages",
        "stream",
        "n",
        "api_key",
        "api_base",
        "base_url",
        "timeout",
        "num_retries",
        "max_retries",
        "mock_response",
    }
)


@dataclass(frozen=True)
class Price:
    """What a model costs, when litellm's price map does not know it (e.g. your own server)."""

    input_usd_per_mtok: float
    output_usd_per_mtok: float
    # What a prompt token read from the provider's prompt cache costs; None: the input price.
    cached_input_usd_per_mtok: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        """The list cost in dollars of one call with these token counts."""
        return (
            prompt_tokens * self.input_usd_per_mtok + completion_tokens * self.output_usd_per_mtok
        ) / 1e6


@dataclass(frozen=True)
class ModelSpec:
    """One model as a config describes it (conf/model/*.yaml, or a judge's `model:` node)."""

    name: str  # the config option's name, e.g. "claude_opus"
    model: str  # the litellm model string, e.g. "anthropic/claude-opus-4-8"
    params: dict[str, Any] = field(default_factory=dict)  # sent with every call
    label: str = ""  # display name for tables and figures; the name when empty
    api_key_env: str | None = None  # the environment variable holding the key, never the key
    api_base: str | None = None  # one endpoint, e.g. a local vLLM or llama.cpp server
    endpoints: tuple[str, ...] = ()  # several endpoints serving the same model (Router)
    concurrency: int = 8  # calls in flight at once
    timeout_s: float = 120.0  # per attempt
    max_attempts: int = 6  # sends per call, rate-limited ones aside; then it is recorded as failed
    # How long a call may keep being rate limited (429) before it is recorded as failed:
    # a time, not a count, since a quota refills with time whatever the number of tries.
    rate_limit_patience_s: float = 600.0
    backoff_s: float = 1.0  # first retry delay; doubles each attempt, with jitter
    drop_params: tuple[str, ...] = ()  # params removed before sending (provider rejects them)
    seed_per_trial: bool = False  # send a seed derived from the prompt and the trial index
    price: Price | None = None  # overrides litellm's price map
    # Send calls so the provider can cache their shared prefixes (billing only: what is sent
    # as the prompt and the cache key are the same either way; losona/models/caching.py).
    prompt_caching: bool = True

    @property
    def display_name(self) -> str:
        """The label, or the name when there is none."""
        return self.label or self.name

    @classmethod
    def from_config(cls, node: Mapping[str, Any], origin: str | None = None) -> ModelSpec:
        """Build from a plain config node, refusing unknown keys and wrong types."""
        return _SpecReader(node, origin).read()

    def check_credentials(self) -> None:
        """Refuse to start when the key's environment variable is unset or empty."""
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise LosonaError(
                f"model '{self.name}' ({self.model}) needs its API key in the environment "
                f"variable {self.api_key_env}, which is not set: export {self.api_key_env}=... "
                "and rerun. The key is read at call time and never written anywhere."
            )

    def api_key(self) -> str | None:
        """The key from the environment, read now (never stored)."""
        return os.environ.get(self.api_key_env) if self.api_key_env else None


class _SpecReader:
    """Checks one config node field by field, naming the file and the field on error."""

    FIELDS = frozenset(ModelSpec.__dataclass_fields__)

    def __init__(self, node: Mapping[str, Any], origin: str | None) -> None:
        self.node = node
        name = node.get("name")
        self.where = origin or (f"model config '{name}'" if isinstance(name, str) else "model")

    def fail(self, key: str, expected: str, found: Any = None, show: bool = True) -> LosonaError:
        shown = f", found {found!r}" if show else ""
        return LosonaError(f"{self.where}: '{key}': expected {expected}{shown}")

    def text(self, key: str, required: bool = False) -> str | None:
        value = self.node.get(key)
        if value is None and not required:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "non-empty text", value)
        return value.strip()

    def number(self, key: str, default: float, integer: bool = False) -> Any:
        value = self.node.get(key, default)
        kind = int if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, kind) or not math.isfinite(value):
            raise self.fail(key, "an integer" if integer else "a number", value)
        if value <= 0:
            raise self.fail(key, "a positive value", value)
        return value

    def names(self, key: str) -> tuple[str, ...]:
        value = self.node.get(key) or []
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, "a list of names", value)
        return tuple(value)

    def read(self) -> ModelSpec:
        node = self.node
        if "api_key" in node:
            raise LosonaError(
                f"{self.where}: never put an API key in a config; name the environment "
                "variable that holds it with api_key_env (e.g. api_key_env: OPENAI_API_KEY)"
            )
        unknown = sorted(set(node) - self.FIELDS)
        if unknown:
            raise LosonaError(
                f"{self.where}: unknown setting(s) {unknown}; a model config may set "
                f"{sorted(self.FIELDS)}"
            )
        name, model = self.text("name", required=True), self.text("model", required=True)
        assert name is not None and model is not None
        key_env = self.text("api_key_env")
        if key_env is not None and not ENV_VAR_NAME.match(key_env):
            # Not echoed: a key pasted here by mistake must not reach a log.
            raise self.fail("api_key_env", "the name of an environment variable", show=False)
        api_base = self.text("api_base")
        endpoints = self.names("endpoints")
        if api_base and endpoints:
            raise LosonaError(
                f"{self.where}: set either api_base (one endpoint) or endpoints (several), not both"
            )
        if len(set(endpoints)) != len(endpoints):
            raise self.fail("endpoints", "distinct endpoints", list(endpoints))
        seed_per_trial = node.get("seed_per_trial", False)
        if not isinstance(seed_per_trial, bool):
            raise self.fail("seed_per_trial", "true or false", seed_per_trial)
        prompt_caching = node.get("prompt_caching", ModelSpec.prompt_caching)
        if not isinstance(prompt_caching, bool):
            raise self.fail("prompt_caching", "true or false", prompt_caching)
        return ModelSpec(
            name=name,
            model=model,
            params=self.params(seed_per_trial),
            label=self.text("label") or "",
            api_key_env=key_env,
            api_base=api_base,
            endpoints=endpoints,
            concurrency=self.number("concurrency", ModelSpec.concurrency, integer=True),
            timeout_s=float(self.number("timeout_s", ModelSpec.timeout_s)),
            max_attempts=self.number("max_attempts", ModelSpec.max_attempts, integer=True),
            backoff_s=float(self.number("backoff_s", ModelSpec.backoff_s)),
            rate_limit_patience_s=float(
                self.number("rate_limit_patience_s", ModelSpec.rate_limit_patience_s)
            ),
            drop_params=self.names("drop_params"),
            seed_per_trial=seed_per_trial,
            price=self.price(),
            prompt_caching=prompt_caching,
        )

    def params(self, seed_per_trial: bool) -> dict[str, Any]:
        params = self.node.get("params") or {}
        if not isinstance(params, Mapping) or not all(isinstance(k, str) for k in params):
            raise self.fail("params", "a mapping of generation parameters", params)
        managed = sorted(MANAGED_PARAMS & set(params))
        if managed:
            raise self.fail(
                "params", f"generation parameters only; the model layer sets {managed} itself"
            )
        if seed_per_trial and "seed" in params:
            raise self.fail("params.seed", "no fixed seed when seed_per_trial is true")
        return dict(params)

    def price(self) -> Price | None:
        price = self.node.get("price")
        if price is None:
            return None
        keys = {"input_usd_per_mtok", "output_usd_per_mtok"}
        optional = {"cached_input_usd_per_mtok"}
        if not isinstance(price, Mapping) or not keys <= set(price) <= keys | optional:
            raise self.fail(
                "price",
                f"a mapping with {sorted(keys)} and optionally {sorted(optional)}",
                price,
            )
        values = [price[k] for k in ("input_usd_per_mtok", "output_usd_per_mtok")]
        cached = price.get("cached_input_usd_per_mtok")
        if any(
            isinstance(v, bool) or not isinstance(v, int | float) or v < 0
            for v in [*values, *([] if cached is None else [cached])]
        ):
            raise self.fail("price", "non-negative dollars per million tokens", price)
        return Price(float(values[0]), float(values[1]), None if cached is None else float(cached))


@dataclass(frozen=True)
class Request:
    """One call: chat messages and the sample index (part of the cache key and the seed)."""

    messages: Sequence[Mapping[str, str]]
    trial: int = 0


@dataclass(frozen=True)
class Completion:
    """What one request returned, from the model or from the call cache."""

    text: str | None  # None when the call failed after all retries
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    error: str | None  # why it failed (kind, status, message); None when ok
    cached: bool  # served from the call cache
    attempts: int = 0  # calls sent for it in this run (0 when cached)
    key: str | None = None  # its call-cache key, set by `complete` on every result
    # What the call was billed, cache discounts included (None when it came from the call
    # cache). A run fact like latency: it goes to the run log, never into a table.
    billed_usd: float | None = None

    @property
    def ok(self) -> bool:
        """Whether the call produced a message."""
        return self.text is not None

    @classmethod
    def failed(cls, error: str, attempts: int) -> Completion:
        """A request that produced no message: why, and after how many sends."""
        return cls(
            text=None,
            finish_reason=None,
            prompt_tokens=0,
            completion_tokens=0,
            cost_usd=0.0,
            error=error,
            cached=False,
            attempts=attempts,
        )


@dataclass(frozen=True)
class CallPlan:
    """What a run would do: calls, how many the cache already holds, what the rest may cost."""

    model: str
    requests: int
    cached: int
    estimated_cost_usd: float | None  # at list price; None when nobody knows the model's price
    estimate_basis: str  # how the estimate was made, for the reader
    # The same calls with the provider's prompt caching, and with caching through its batch
    # API (losona/models/pricing.py); None when the price is unknown.
    with_caching_usd: float | None = None
    with_batch_usd: float | None = None
    pricing_basis: str = ""  # how those two were estimated, for the reader

    @property
    def to_call(self) -> int:
        """Calls still to make."""
        return self.requests - self.cached

    def describe(self) -> str:
        """One line for a person: calls, cached, to make, estimated cost."""
        cost = (
            "unknown (no price for this model)"
            if self.estimated_cost_usd is None
            else f"${self.estimated_cost_usd:.4f}"
        )
        line = (
            f"{self.model}: {self.requests} calls, {self.cached} already cached, "
            f"{self.to_call} to make; estimated cost {cost} ({self.estimate_basis})"
        )
        if self.estimated_cost_usd is None or self.with_caching_usd is None:
            return line
        return f"{line}\n  {self.prices()} ({self.pricing_basis})"

    def prices(self) -> str:
        """The three prices on one line: list, with caching, with caching and batch."""
        list_price = self.estimated_cost_usd or 0.0

        def off(price: float | None) -> str:
            if price is None:
                return "unknown"
            share = f" ({100 * (price / list_price - 1):+.1f}%)" if list_price else ""
            return f"${price:.4f}{share}"

        return (
            f"list ${list_price:.4f}, with prompt caching {off(self.with_caching_usd)}, "
            f"with caching and batch {off(self.with_batch_usd)}"
        )
