"""Sending the calls the cache lacks: bounded concurrency, retries by the one retry policy
(retry.py), the rate-limit limiter and the cost cap (docs/sampling.md).

With one worker, calls go out in request order (the embedded model relies on it); a call
that can reuse an earlier call's prefix waits for that call's answer (prompt_caching.py).
What happened is counted in a `CallStats` for the run log.
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

from losona.core.errors import causes
from losona.core.files import OnDemand
from losona.models import litellm_api
from losona.models.prepare import Prepared
from losona.models.pricing import Usage, usage_of
from losona.models.prompt_caching import NO_REUSE, Reuse
from losona.models.retry import RATE_LIMITED, RetryPolicy, retry_after, status_of, transient
from losona.models.runlog import CallStats
from losona.models.values import Completion, Request

# When this many connection attempts in a row fail to connect before any call of the
# run got an answer, nothing is listening there: stop at once instead of spending every
# call's retries on it. (Once a call has been answered, a dead server is an outage:
# each call then retries and fails on its own, and the caller decides what that means.)
UNREACHABLE_AFTER = 3


def refused(exc: BaseException) -> bool:
    """Whether an exception (or one it was raised from) is a failure to connect at all.

    A refused or unresolvable address, not a timeout or a dropped connection: those come
    from a server that is there.
    """
    return any(
        isinstance(cause, ConnectionRefusedError | socket.gaierror)
        or type(cause).__name__
        in (
            "ConnectError",  # httpx
            "ClientConnectorError",  # aiohttp
        )
        for cause in causes(exc)
    )


def fault(exc: BaseException) -> str:
    """The kind of fault, named as it happened.

    litellm reports a dropped connection and a body that is not JSON as an
    InternalServerError (500), like a server's own 500; what really happened is in the
    exceptions it was raised from.
    """
    openai = litellm_api.litellm_module().exceptions.openai
    chain = causes(exc)
    if not any(isinstance(c, openai.APITimeoutError) for c in chain):
        if any(isinstance(c, openai.APIConnectionError) for c in chain):
            return "dropped connection"
        if any(isinstance(c, json.JSONDecodeError) for c in chain):
            return "malformed body"
    status = status_of(exc)
    return f"{type(exc).__name__}{f' ({status})' if status else ''}"


def masked(exc: BaseException, secret: str | None) -> str:
    """An error's message on one line, at most 300 characters, the API key masked."""
    text = " ".join(str(exc).split())[:300]
    return text.replace(secret, "***") if secret else text


def describe(exc: BaseException, secret: str | None) -> str:
    """What went wrong: the kind of fault, then its message (masked)."""
    return f"{fault(exc)}: {masked(exc, secret)}"


class Limiter:
    """Sends in flight, adapted to rate limits: additive increase, multiplicative decrease.

    From the config's concurrency, its ceiling, a 429 halves the limit (to one at least)
    once per round: 429s to sends made before the cut say nothing new. Each other answer
    adds 1/limit. Not litellm's Router: it offers only fixed rpm/tpm budgets.
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
    """The cost cap: actual spend plus estimates reserved for calls in flight.

    A call is only sent if spend + reserved + its estimate stays within the cap. When the
    config sets max_tokens the estimate is an upper bound and the cap cannot be passed;
    otherwise the estimate assumes EXPECTED_COMPLETION_TOKENS and the last calls in flight
    may pass it by what they wrote beyond that.
    """

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
        self.failed = 0
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
        goes to `keep` as it comes, and the run's facts to `stats` once every send is done.

        Requests go out in order, except that one that can reuse the prefix of an earlier
        one (`reuse[i].parent`) waits for that one's answer, then goes first. A request is
        read from `requests` when it is planned and again when it is sent, never kept: the
        caller may build each one on demand.
        """
        reuse = self.prepared.reuse(OnDemand(len(pending), lambda i: requests[pending[i]]))
        ready = collections.deque(i for i, plan in enumerate(reuse) if plan.parent is None)
        held: dict[int, list[int]] = collections.defaultdict(list)
        for i, plan in enumerate(reuse):
            if plan.parent is not None:
                held[plan.parent].append(i)
        self.stats.sent_after_parent = len(pending) - len(ready)
        taken = 0  # requests a worker took and has not finished
        finished = asyncio.Condition()
        estimates = self.budget.cap is not None and self.prepared.price_source != "unknown"

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
                    # What was spent is said once the calls in flight have settled.
                    self.budget.tripped = True
                    self.stop = f"the cost cap of ${self.budget.cap:.4f} would be passed"
                    return
                ready.popleft()
                taken += 1
                # The key found when the requests were looked up (the same string: kept once).
                key, params = keys[pending[i]], self.prepared.key_and_params(request)[1]
                try:
                    completion = await self.call(request, params, reuse[i])
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
                if not completion.ok:
                    self.failed += 1
                keep(key, completion)
                self.bar.set_postfix_str(
                    f"failed {self.failed}, ${self.budget.spent:.4f}",
                    refresh=False,
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

    async def call(
        self, request: Request, params: dict[str, Any], reuse: Reuse = NO_REUSE
    ) -> Completion:
        """One request, sent until it succeeds, fails for good, or runs out of retries.

        Rate limits are waited out for up to `rate_limit_patience_s` from the first send;
        other transient faults count against `max_attempts`.
        """
        openai = litellm_api.litellm_module().exceptions.openai
        messages = [dict(m) for m in request.messages]
        if reuse.markers and self.prepared.rule is not None and self.prepared.rule.markers:
            # Anthropic caches a prefix only up to a marker. Added by litellm to what it
            # sends; never part of the cache key.
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
                error = describe(exc, self.secret)
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
                            f"could not connect to {self._endpoint()}: the first "
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
            self.stats.retried[error.split(":")[0]] += 1
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
            error=None,
            cached=False,
            attempts=attempts,
            billed_usd=rates.cost(usage),
        )

    def _endpoint(self) -> str:
        """Where the calls go, as the config names it."""
        if self.spec.endpoints:
            return ", ".join(self.spec.endpoints)
        return self.spec.api_base or f"the provider of {self.spec.model}"

    def _failure(self, error: str, attempts: int) -> Completion:
        self.stats.failures[error.split(":")[0]] += 1
        return Completion.failed(error, attempts)
