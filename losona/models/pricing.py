"""What calls cost: at list price, with provider prompt caching, and through a batch API
(docs/sampling.md, "Cost"), from a model config's `price`, else litellm's price map.

Not litellm's cost_per_token: it prices only models in its map (no config's `price`, no
batch price it lacks), at far more CPU per call.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from losona.core.config import ModelSpec
from losona.models.prompt_caching import Reuse

# Completion length assumed for estimates when the config sets no max_tokens.
EXPECTED_COMPLETION_TOKENS = 500
# Providers whose batch API bills half the list price (their price pages say so), for
# models litellm lists no batch price for.
HALF_PRICE_BATCH = {
    "openai": "OpenAI",
    "anthropic": "Anthropic",
    "gemini": "Google",
    "vertex_ai": "Google",
    "mistral": "Mistral",
}


@dataclass(frozen=True)
class Usage:
    """The tokens of one call, as the provider reported them."""

    prompt_tokens: int  # every prompt token, cached ones included
    completion_tokens: int
    cache_read_tokens: int = 0  # prompt tokens read from the provider's cache
    cache_write_tokens: int = 0  # prompt tokens written to it (Anthropic)

    @property
    def uncached_tokens(self) -> int:
        """Prompt tokens billed at the input price."""
        return max(0, self.prompt_tokens - self.cache_read_tokens - self.cache_write_tokens)


def _number(value: Any) -> float | None:
    """A count or a price as litellm gives it; None when it gives none (a bool is none)."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def usage_of(response: Any) -> Usage:
    """The token counts of a litellm response, every provider's cache reads and writes
    (`prompt_tokens_details`) included."""
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)

    def count(of: Any, name: str) -> int:
        return int(_number(getattr(of, name, None)) or 0)

    return Usage(
        prompt_tokens=count(usage, "prompt_tokens"),
        completion_tokens=count(usage, "completion_tokens"),
        cache_read_tokens=count(details, "cached_tokens"),
        cache_write_tokens=count(details, "cache_write_tokens"),
    )


@dataclass(frozen=True)
class Rates:
    """One model's prices, in dollars per `unit` tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    batch: tuple[float, float, float, float] | None  # the same four through a batch API
    unit: float  # 1e6 for a config's prices per million tokens, 1 for litellm's per token
    source: str  # "config", "litellm" or "unknown"
    cache_basis: str  # where the cache prices come from, for the reader
    batch_basis: str  # where the batch prices come from, for the reader

    @property
    def known(self) -> bool:
        """Whether anybody knows what the model costs."""
        return self.source != "unknown"

    def list_cost(self, usage: Usage) -> float:
        """Every prompt token at the input price (the response table's cost_usd)."""
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        return (prompt * self.input + completion * self.output) / self.unit

    def _billed(self, usage: Usage, rates: Sequence[float]) -> float:
        input_, output, read, write = rates
        return (
            usage.uncached_tokens * input_
            + usage.cache_read_tokens * read
            + usage.cache_write_tokens * write
            + usage.completion_tokens * output
        ) / self.unit

    def cost(self, usage: Usage) -> float:
        """What the call is billed, cache reads and writes at their prices."""
        return self._billed(usage, (self.input, self.output, self.cache_read, self.cache_write))

    def batch_cost(self, usage: Usage) -> float:
        """What the call would be billed through the provider's batch API (list without one)."""
        return self._billed(usage, self.batch) if self.batch else self.cost(usage)


def _batch_without_prices(
    provider: str, own_server: bool, rates: tuple[float, float, float, float]
) -> tuple[Any, str]:
    """Batch rates where none are listed: half price where the provider documents it."""
    if own_server:
        return None, "a server of your own: batch at its list price"
    who = HALF_PRICE_BATCH.get(provider)
    if who is None:
        return None, "no batch API known: batch at list price"
    return (
        tuple(r / 2 for r in rates),
        f"half price ({who} documents a 50% batch discount; litellm lists no batch price)",
    )


def rates_for(
    spec: ModelSpec, provider: str, own_server: bool, info: Mapping[str, Any] | None
) -> Rates:
    """A model's prices: the config's `price`, else litellm's price map entry `info`."""
    if spec.price is not None:
        price = spec.price
        cached = price.cached_input_usd_per_mtok
        four = (
            price.input_usd_per_mtok,
            price.output_usd_per_mtok,
            price.input_usd_per_mtok if cached is None else cached,
            price.input_usd_per_mtok,
        )
        config_batch, batch_basis = _batch_without_prices(provider, own_server, four)
        cache_basis = (
            "cached input at list price (the config's price sets no cached_input_usd_per_mtok)"
            if cached is None
            else "the config's cached_input_usd_per_mtok"
        )
        return Rates(*four, config_batch, 1e6, "config", cache_basis, batch_basis)
    if info is None or (input_ := _number(info.get("input_cost_per_token"))) is None:
        return Rates(0, 0, 0, 0, None, 1, "unknown", "no price known", "no price known")
    output = _number(info.get("output_cost_per_token")) or 0.0
    read = _number(info.get("cache_read_input_token_cost"))
    write = _number(info.get("cache_creation_input_token_cost"))
    four = (input_, output, input_ if read is None else read, input_ if write is None else write)
    cache_basis = (
        "cached input at list price (litellm lists no cache price)"
        if read is None
        else "litellm's cache prices"
    )
    batch_in = _number(info.get("input_cost_per_token_batches"))
    batch_out = _number(info.get("output_cost_per_token_batches"))
    if batch_in is not None and batch_out is not None:
        ratio = batch_in / input_ if input_ else 1.0
        batch: Any = (
            batch_in,
            batch_out,
            _number(info.get("cache_read_input_token_cost_batches")) or four[2] * ratio,
            _number(info.get("cache_creation_input_token_cost_batches")) or four[3] * ratio,
        )
        batch_basis = "litellm's batch prices"
    else:
        batch, batch_basis = _batch_without_prices(provider, own_server, four)
    return Rates(*four, batch, 1, "litellm", cache_basis, batch_basis)


@dataclass(frozen=True)
class Estimate:
    """The three prices of a set of calls, before any is made."""

    list_usd: float
    caching_usd: float
    batch_usd: float
    calls: int
    reusing: int  # calls that reuse a cached prefix
    cached_tokens: int
    written_tokens: int
    prompt_tokens: int


def estimate(
    rates: Rates, prompt_tokens: Sequence[int], completion_tokens: int, reuse: Sequence[Reuse]
) -> Estimate:
    """The list, caching and batch prices of calls with these prompt lengths and reuse."""
    list_usd = caching_usd = batch_usd = 0.0
    cached = written = 0
    for prompt, plan in zip(prompt_tokens, reuse, strict=True):
        read = min(plan.cached_tokens, prompt)
        write = min(plan.written_tokens, prompt - read)
        usage = Usage(prompt, completion_tokens, read, write)
        list_usd += rates.list_cost(usage)
        caching_usd += rates.cost(usage)
        batch_usd += rates.batch_cost(usage)
        cached += read
        written += write
    return Estimate(
        list_usd,
        caching_usd,
        batch_usd,
        calls=len(prompt_tokens),
        reusing=sum(1 for plan in reuse if plan.cached_tokens),
        cached_tokens=cached,
        written_tokens=written,
        prompt_tokens=sum(prompt_tokens),
    )


def below(price: float, list_price: float) -> str:
    """How far a price is below list, e.g. "-42.0%"."""
    return f"{100 * (price / list_price - 1):+.1f}%" if list_price else "n/a"
