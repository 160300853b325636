"""Sending the calls the cache lacks: bounded concurrency, retries, the rate-limit limiter
and the cost cap (docs/sampling.md). With one worker, calls go out in request order (the
embedded model relies on it), except that a call waits for the call whose prefix it reuses.
"""

from __future__ import annotations

import asyncio
import collections
import json
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tqdm import tqdm

from losona.core.config import ModelSpec
from losona.core.errors import causes
from losona.core.files import OnDemand
from losona.models import litellm_api
from losona.models.completions import failure_kind
from losona.models.prepare import Prepared
from losona.models.pricing import Usage, usage_of
from losona.models.prompt_caching import Reuse
from losona.models.retry import RATE_LIMITED, RetryPolicy, retry_after, status_of, transient
from losona.models.runlog import CallStats
from losona.models.values import Completion, Request

# Connection attempts in a row that fail before any call is answered: nothing listens there,
# so stop instead of spending every call's retries (after an answer, it is an outage).
UNREACHABLE_AFTER = 3
# Exception names for a refused connection: httpx's, aiohttp's.
CONNECT_ERRORS = ("ConnectError", "ClientConnectorError")


def refused(exc: BaseException) -> bool:
    """Whether an exception (or one it was raised from) is a failure to connect at all: a
    refused or unresolvable address, not a timeout or a drop (those come from a server)."""
    return any(
        isinstance(cause, ConnectionRefusedError | socket.gaierror)
        or type(cause).__name__ in CONNECT_ERRORS
        for cause in causes(exc)
    )


def fault(exc: BaseException) -> str:
    """The kind of fault, named as it happened: litellm reports a dropped connection and a
    body that is not JSON as a 500, and the exceptions it was raised from say which."""
    openai = litellm_api.litellm_module().exceptions.openai
    chain = causes(exc)
    if not any(isinstance(c, openai.APITimeoutError) for c in chain):
        if any(isinstance(c, openai.APIConnectionError) for c in chain):
            return "dropped connection"
        if any(isinstance(c, json.JSONDecodeError) for c in chain):
            return "malformed body"
    return error_name(exc)


def error_name(exc: BaseException) -> str:
    """An API error's class and HTTP status, e.g. "RateLimitError (429)"."""
    status = status_of(exc)
    return f"{type(exc).__name__}{f' ({status})' if status else ''}"


def masked(text: str, secret: str | None) -> str:
    """An error's message on one line, at most 300 characters, the API key masked (before
    the cut, so that no part of it shows)."""
    if secret:
        text = text.replace(secret, "***")
    return " ".join(text.split())[:300]


def destination(spec: ModelSpec) -> str:
    """Where a model's calls go, as its config names it."""
    return ", ".join(spec.endpoints) or spec.api_base or f"the provider of {spec.model}"


class Limiter:
    """Sends in flight, adapted to rate limits: additive increase, multiplicative decrease.

    A 429 halves the limit once per round (429s to sends made before the cut say nothing
    new); each other answer adds 1/limit, up to the config's concurrency. Not litellm's
    Router: it offers only fixed rpm/tpm budgets.
    """

    def __init__(self, ceiling: int) -> None:
        self.ceiling = ceiling
        self.limit = float(ceiling)
        self.in_flight = 0
        self.round = 0  # bumped by every cut
        self.cuts = 0
        self.lowest = ceiling
        self._changed = asyncio.Event()

    async def acquire(self) -> int:
        """Wait for a free slot and take it; returns the round the send goes out in."""
        while self.in_flight >= int(self.limit):
            self._changed.clear()
            await self._changed.wait()
        self.in_flight += 1
        return self.round

    def release(self, sent_in: int, rate_limited: bool) -> None:
        """Give the slot back, cutting the limit on a 429 and raising it otherwise."""
        self.in_flight -= 1
        if not rate_limited:
            self.limit = min(float(self.ceiling), self.limit + 1 / self.limit)
        elif sent_in == self.round:
            self.limit = max(1.0, self.limit / 2)
            self.round += 1
            self.cuts += 1
            self.lowest = min(self.lowest, int(self.limit))
        self._changed.set()


@dataclass
class Budget:
    """The cost cap: a call is sent only if spend, the estimates reserved for calls in
    flight and its own stay within it (an upper bound with max_tokens set, else a guess)."""

    cap: float | None
    spent: float = 0.0
    reserved: float = 0.0
    tripped: bool = False  # a call was held back because it could pass the cap

    def stopped(self) -> str:
        """Why the run stopped, with its spend: said after every call in flight settled."""
        spent = f"${self.spent:.4f} spent in this run"
        return f"the cost cap of ${self.cap or 0:.4f} would be passed ({spent})"

    def reserve(self, estimate: float) -> bool:
        if self.cap is not None and self.spent + self.reserved + estimate > self.cap:
            self.tripped = True
            return False
        self.reserved += estimate
        return True

    def settle(self, estimate: float, cost: float) -> None:
        self.reserved -= estimate
        self.spent += cost


# What the caller does with each call's outcome, as it comes: (its key, its completion).
Keep = Callable[[str, Completion], None]


class Sender:
    """The sends of one run of `complete`: the queue, the workers, the retries, the limiter
    and the budget; the facts for the run log go to `stats`."""

    def __init__(self, prepared: Prepared, max_cost_usd: float | None, bar: tqdm[Any]) -> None:
        self.prepared = prepared
        self.spec = prepared.spec
        self.budget = Budget(max_cost_usd)
        self.bar = bar
        self.stats = CallStats()
        self.stop: str | None = None
        self.answered = 0  # calls of this run that got any answer from the endpoint
        self.refused_in_a_row = 0
        self.unreachable = False
        self.secret = self.spec.api_key()
        self.send = litellm_api.sender(self.spec)
        self.limiter = Limiter(self.spec.concurrency)
        self.policy = RetryPolicy.of(self.spec)

    async def run(
        self, requests: Sequence[Request], pending: Sequence[int], keys: Sequence[str], keep: Keep
    ) -> None:
        """Send the requests at these indices (`keys`: every request's key); each outcome
        goes to `keep` as it comes, the run's facts to `stats` once every send is done.

        Requests go out in order, except that one that reuses an earlier one's prefix waits
        for its answer, then goes first. A request is read when needed, never kept.
        """
        reuse = self.prepared.reuse(OnDemand(len(pending), lambda i: requests[pending[i]]))
        ready: collections.deque[int] = collections.deque()
        held: dict[int, list[int]] = collections.defaultdict(list)
        for i, plan in enumerate(reuse):
            (ready if plan.parent is None else held[plan.parent]).append(i)
        self.stats.sent_after_parent = len(pending) - len(ready)
        taken = 0  # requests a worker took and has not finished
        finished = asyncio.Condition()
        estimates = self.budget.cap is not None and self.prepared.rates.known

        async def worker() -> None:
            nonlocal taken
            while self.stop is None:
                if not ready:
                    if not taken:
                        return  # nothing left: no call in flight can release a held one
                    async with finished:
                        await finished.wait()
                    continue
                i = ready[0]
                request = requests[pending[i]]
                estimate = self.prepared.estimate(request, reuse[i]) if estimates else 0.0
                if not self.budget.reserve(estimate):
                    self.stop = self.budget.stopped()  # said again once the calls in flight settle
                    return
                ready.popleft()
                taken += 1
                try:
                    completion = await self.call(request, reuse[i])
                finally:
                    taken -= 1
                    # The calls that reuse its prefix go next: the provider has it now.
                    ready.extendleft(reversed(held.pop(i, [])))
                    async with finished:
                        finished.notify_all()
                self.budget.settle(
                    estimate,
                    completion.cost_usd if completion.billed_usd is None else completion.billed_usd,
                )
                keep(keys[pending[i]], completion)
                self.bar.set_postfix_str(
                    f"failed {self.stats.failures.total()}, ${self.budget.spent:.4f}", refresh=False
                )
                self.bar.update(1)

        workers = min(self.spec.concurrency, len(pending))
        await asyncio.gather(*(worker() for _ in range(workers)))
        if self.budget.tripped:  # every worker has returned: the calls in flight are paid for
            self.stop = self.budget.stopped()
        self.stats.stopped = self.stop
        self.stats.billed_usd = self.budget.spent
        self.stats.estimated_each_call = estimates
        self.stats.concurrency = {
            "configured": self.limiter.ceiling,
            "lowest": self.limiter.lowest,
            "at_end": int(self.limiter.limit),
            "cuts_on_429": self.limiter.cuts,
        }

    async def call(self, request: Request, reuse: Reuse) -> Completion:
        """One request, sent until it succeeds, fails for good, or runs out of retries: rate
        limits for `rate_limit_patience_s`, other transient faults `max_attempts` times."""
        openai = litellm_api.litellm_module().exceptions.openai
        messages = [dict(m) for m in request.messages]
        params = self.prepared.key_and_params(request)[1]
        if reuse.markers and self.prepared.rule is not None and self.prepared.rule.markers:
            # Anthropic caches a prefix only up to a marker; never part of the cache key.
            params = {
                **params,
                "cache_control_injection_points": [
                    {"location": "message", "index": index} for index in reuse.markers
                ],
            }
        started = time.perf_counter()
        attempt = 0  # sends
        counted = 0  # sends that count against max_attempts: all but the rate-limited ones
        limited = 0  # sends answered with a 429
        while True:
            attempt += 1
            self.stats.attempts += 1
            if self.unreachable:
                # Another call found nothing listening: do not spend retries on it.
                return self._failure(f"not sent: {self.stop}", attempt)
            sent_in = await self.limiter.acquire()
            rate_limited = False
            try:
                response = await self.send(messages=messages, **params)
            except openai.APIError as exc:
                error = f"{fault(exc)}: {masked(str(exc), self.secret)}"
                status = status_of(exc)
                rate_limited = status == RATE_LIMITED
                if refused(exc):
                    # litellm may report a refused connection as a 500; say what it was.
                    error = f"could not connect: {error}"
                    self.refused_in_a_row += 1
                    if self.unreachable:
                        return self._failure(error, attempt)
                    if not self.answered and self.refused_in_a_row >= UNREACHABLE_AFTER:
                        self.unreachable = True
                        self.stop = (
                            f"could not connect to {destination(self.spec)}: the first "
                            f"{self.refused_in_a_row} connection attempts failed ({error}); "
                            "start the server there, or correct the address in the config"
                        )
                        return self._failure(error, attempt)
                else:
                    self.answered += 1
                    self.refused_in_a_row = 0
                if self.policy.fatal(status):
                    self.stop = f"the provider refused the call: {error}"
                    return self._failure(error, attempt)
                if not transient(exc):
                    return self._failure(error, attempt)
                wait = retry_after(exc)
            else:
                self.answered += 1
                self.refused_in_a_row = 0
                choice = response.choices[0]
                text = choice.message.content
                usage = usage_of(response)
                if text and text.strip():
                    self.stats.latencies.append(time.perf_counter() - started)
                    return self._completed(text, choice.finish_reason, usage, attempt)
                error = f"empty reply (finish_reason {choice.finish_reason})"
                wait = None
            finally:
                self.limiter.release(sent_in, rate_limited)
            if rate_limited:
                limited += 1
                wait = self.policy.wait(limited, asked=wait)
                waited = time.perf_counter() - started
                if waited + wait > self.spec.rate_limit_patience_s:
                    return self._failure(
                        f"{error} (still rate limited after {waited:.0f} s and {attempt} "
                        f"attempts; rate_limit_patience_s is {self.spec.rate_limit_patience_s:g})",
                        attempt,
                    )
            else:
                counted += 1
                if self.policy.gives_up(counted):
                    return self._failure(f"{error} (after {attempt} attempts)", attempt)
                wait = self.policy.wait(counted, asked=wait)
            self.stats.retried[failure_kind(error)] += 1
            await asyncio.sleep(wait)

    def _completed(
        self, text: str, finish_reason: str | None, usage: Usage, attempts: int
    ) -> Completion:
        """A good answer: counted for the run log, priced at list and as billed."""
        stats, rates = self.stats, self.prepared.rates
        stats.prompt_tokens += usage.prompt_tokens
        stats.completion_tokens += usage.completion_tokens
        stats.cache_read_tokens += usage.cache_read_tokens
        stats.cache_write_tokens += usage.cache_write_tokens
        stats.calls_with_cache_hits += usage.cache_read_tokens > 0
        list_cost = rates.list_cost(usage)
        stats.list_usd += list_cost
        return Completion(
            text=text,
            finish_reason=finish_reason,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            cost_usd=list_cost,
            attempts=attempts,
            billed_usd=rates.cost(usage),
        )

    def _failure(self, error: str, attempts: int) -> Completion:
        self.stats.failures[failure_kind(error)] += 1
        return Completion.failed(error, attempts)
