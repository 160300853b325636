"""The model layer's plain values, with no litellm import: a request, its completion, a plan."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["CallPlan", "Completion", "Request"]

# What a stored call holds besides its key and model, in the call cache's column order.
ANSWER = ("text", "finish_reason", "prompt_tokens", "completion_tokens", "cost_usd")


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
    error: str | None = None  # why it failed (kind, status, message); None when ok
    cached: bool = False  # served from the call cache or the run's published calls
    published: bool = False  # served from the run's published calls (paths.calls)
    attempts: int = 0  # calls sent for it in this run (0 when cached)
    key: str | None = None  # its call-cache key, set by `complete` on every result
    # What the call was billed, cache discounts included (None when it came from the call
    # cache). A run fact like latency: it goes to the run log, never into a table.
    billed_usd: float | None = None

    @property
    def ok(self) -> bool:
        """Whether the call produced a message."""
        return self.text is not None

    @property
    def answer(self) -> tuple[Any, ...]:
        """What the call cache and a calls table keep of it (the fields ANSWER names)."""
        return tuple(getattr(self, name) for name in ANSWER)

    @classmethod
    def stored(cls, answer: Sequence[Any], *, published: bool = False) -> Completion:
        """A call answered from the call cache, or (`published`) the run's published calls."""
        fields = dict(zip(ANSWER, answer, strict=True))
        return cls(**fields, cached=True, published=published)

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

    @classmethod
    def total(cls, plans: Sequence[CallPlan]) -> CallPlan:
        """Several cells' plans summed, for a sweep's dry run; unknown prices are left out."""
        priced = [p for p in plans if p.estimated_cost_usd is not None]
        left_out = len(plans) - len(priced)
        basis = "the sum of the cells above" + (
            f"; {left_out} cell(s) of unknown price left out" if left_out else ""
        )

        def summed(prices: list[float | None]) -> float | None:
            # A priced cell always has all three prices; a sum over none is unknown.
            return None if not prices or None in prices else sum(p or 0.0 for p in prices)

        return cls(
            model=f"{len(plans)} cells",
            requests=sum(p.requests for p in plans),
            cached=sum(p.cached for p in plans),
            estimated_cost_usd=summed([p.estimated_cost_usd for p in priced]),
            estimate_basis=basis,
            with_caching_usd=summed([p.with_caching_usd for p in priced]),
            with_batch_usd=summed([p.with_batch_usd for p in priced]),
            pricing_basis=basis,
        )

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
