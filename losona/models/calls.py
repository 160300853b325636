"""Running calls: the call cache first, then bounded-concurrency calls with retries.

This is the only module that imports litellm (and only when a call is about to be made:
the import takes seconds). Every subject and judge call in the project comes through
`complete`: one model, many requests, results in request order.

- Cache: a request's key covers the resolved model string and endpoint(s), every
  parameter sent, the full messages and the trial index (losona/models/cache.py).
  Identical requests in one batch are sent once.
- Concurrency: `spec.concurrency` workers take requests in order from one queue, so with
  one worker calls run exactly in request order (the embedded model relies on this). The
  sends in flight adapt to rate limits (`_Limiter`): a 429 halves them, successes bring
  them back up to `spec.concurrency`.
- Retries: rate limits (honouring Retry-After) are retried for as long as
  `spec.rate_limit_patience_s` allows; server errors, timeouts, dropped connections,
  malformed bodies and empty replies with exponential backoff and jitter, up to
  `spec.max_attempts` sends. Then the request is recorded as failed.
  Other client errors fail the request at once; a refused key or an unknown model stops
  the run, since every other call would fail the same way, and so does an endpoint that
  refuses every one of the first connection attempts (see UNREACHABLE_AFTER).
- Prompt caching: a call that can reuse a prefix of an earlier call of the run is sent once
  that call is answered, and Anthropic calls carry cache_control markers
  (losona/models/caching.py). The cache key and what is sent as the prompt do not change.
- Cost: from the config's `price`, else litellm's price map (losona/models/pricing.py).
  A completion's `cost_usd` is its list price; what it was billed, cache discounts
  included, goes to the run log. `max_cost_usd` stops dispatching before actual spend plus
  the estimates of calls in flight would pass the cap (see `_Budget`).
- Facts that differ between runs (latency, attempts, cache hits, spend) go to the run log
  (losona/models/runlog.py), never into a returned value that ends up in a data file.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import email.utils
import functools
import hashlib
import json
import logging
import os
import random
import socket
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, overload

from tqdm import tqdm

from losona.errors import LosonaError
from losona.files import CHUNK, OnDemand, write_json
from losona.models import pricing, runlog
from losona.models.cache import CacheLocation, CallCache, CallNotFound, CallStore
from losona.models.caching import NO_REUSE, CacheRule, Reuse, cache_rule, plan_reuse, token_encoder
from losona.models.pricing import EXPECTED_COMPLETION_TOKENS, Rates, Usage, usage_of
from losona.models.progress import progress_bar
from losona.models.runlog import CallStats
from losona.models.spec import CallPlan, Completion, ModelSpec, Request
from losona.models.tokens import Tokenizer, select_tokenizer

if TYPE_CHECKING:
    from losona.config import BatchSettings

# Bumped when the key's recipe changes, so old entries are never misread.
KEY_VERSION = 1
# Never wait longer than this between attempts, whatever a Retry-After says.
MAX_WAIT_S = 120.0
# Statuses worth another attempt: timeouts, conflicts, rate limits, server trouble.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
# Statuses that will fail every call of the run the same way: bad key, no such model.
FATAL_STATUSES = frozenset({401, 402, 403, 404})
# When this many connection attempts in a row fail to connect before any call of the
# run got an answer, nothing is listening there: stop at once instead of spending every
# call's retries on it. (Once a call has been answered, a dead server is an outage:
# each call then retries and fails on its own, and the caller decides what that means.)
UNREACHABLE_AFTER = 3
# The key sent to an endpoint of your own when the config names no key variable.
NO_KEY = "EMPTY"


@functools.cache
def _litellm() -> ModuleType:
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


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class CallFailed(LosonaError):
    """A run stopped early: a refused key, an unknown model, or the cost cap."""


class CallsFailed(LosonaError):
    """Some calls still failed after their retries, so the stage writes nothing."""


@dataclass(frozen=True)
class CallOptions:
    """How a run of calls uses the call cache, what it may spend and where it is recorded."""

    cache_path: CacheLocation  # the call cache, or a CallStore with a run's published calls
    use_cache: bool = True  # False: fresh calls (cache reads bypassed), still recorded
    max_cost_usd: float | None = None  # stop before this run's spend would pass it
    # A JSON file for this run's facts (latency, attempts, cache hits, spend, failures).
    run_log: str | Path | None = None
    # Labels the progress: a bar on a terminal, else a line every 30 s (models/progress.py).
    progress: str | None = None


def failure_kind(error: str | None) -> str:
    """The kind of a failed call's error: its exception name and status, without details."""
    return (error or "unknown error").split(":")[0]


def require_every_call(
    *rounds: Sequence[Completion], to: str, run_log: str | Path | None = None
) -> None:
    """Raise CallsFailed, saying how many calls `to` whom failed, by kind and why, if any did.

    Takes one or more rounds of calls (the judge's first calls and its repairs).
    """
    failed = [c.error for completions in rounds for c in failures(completions)]
    if not failed:
        return
    kinds = collections.Counter(failure_kind(e) for e in failed)
    by_kind = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    reasons = "\n".join(
        f"  {n} x {reason}" for reason, n in collections.Counter(failed).most_common(5)
    )
    raise CallsFailed(
        f"{len(failed)} of {sum(map(len, rounds))} calls to {to} failed after their "
        f"retries ({by_kind}); nothing was written. Why:\n{reasons}\nEvery completed call "
        "is in the call cache, so a rerun sends only the failed ones."
        + (f" Details: {run_log}" if run_log else "")
    )


def failures(completions: Sequence[Completion]) -> list[Completion]:
    """The failed ones among these completions (from `complete` without reading a reply back)."""
    if isinstance(completions, Completions):
        return completions.failed()
    return [c for c in completions if not c.ok]


def _refused(exc: BaseException) -> bool:
    """Whether an exception (or one it was raised from) is a failure to connect at all.

    A refused or unresolvable address, not a timeout or a dropped connection: those come
    from a server that is there.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        name = type(current).__name__
        if isinstance(current, ConnectionRefusedError | socket.gaierror) or name in (
            "ConnectError",  # httpx
            "ClientConnectorError",  # aiohttp
        ):
            return True
        current = current.__cause__ or current.__context__
    return False


@dataclass
class _Prepared:
    """Everything about a spec that does not change from call to call."""

    spec: ModelSpec
    params: dict[str, Any]  # what is sent, after drops
    dropped: list[str]
    rates: Rates  # its prices: list, cache, batch (losona/models/pricing.py)
    rule: CacheRule | None  # how its provider caches prompts; None: not at all, or turned off
    key_prefix: str  # the canonical JSON of what the key covers besides messages and trial

    @property
    def price_source(self) -> str:
        """Where the price comes from: "config", "litellm" or "unknown"."""
        return self.rates.source

    def key_and_params(self, request: Request) -> tuple[str, dict[str, Any]]:
        """The request's cache key and the parameters to send with it."""
        return _key_and_params(self.key_prefix, self.params, self.spec.seed_per_trial, request)

    @functools.cached_property
    def tokenizer(self) -> Tokenizer:
        """What estimates count prompt tokens with: chosen once, from what is on disk."""
        return select_tokenizer(_litellm(), self.spec.model)

    @property
    def completion_tokens(self) -> int:
        """The completion length estimates assume: max_tokens, else a guess."""
        return int(
            self.params.get("max_tokens")
            or self.params.get("max_completion_tokens")
            or EXPECTED_COMPLETION_TOKENS
        )

    def prompt_tokens(self, request: Request) -> int:
        """A request's prompt tokens, counted offline."""
        return self.tokenizer.count(
            _litellm(), self.spec.model, [dict(m) for m in request.messages]
        )

    def estimate(self, request: Request, reuse: Reuse = NO_REUSE) -> float:
        """A cost estimate for one call that it cannot exceed with max_tokens set (0 when
        the price is unknown): list price, or with cache_control markers every prompt
        token written to the cache, should the read it expects miss."""
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


@functools.cache
def _model_info(model: str) -> dict[str, Any] | None:
    """litellm's price map entry for the model, None if it has none (asked once per process).

    Once, because a litellm Router registers the models it serves in that same map, with
    no price: asked again after a Router ran, litellm would price an unknown model at $0.
    """
    try:
        info = dict(_litellm().get_model_info(model))
    except Exception:  # litellm raises a bare Exception for a model it does not map
        return None
    return info if info.get("input_cost_per_token") is not None else None


def _provider(spec: ModelSpec) -> tuple[str, str]:
    """The model name and provider litellm resolves the model string to."""
    litellm = _litellm()
    try:
        model, provider, _, _ = litellm.get_llm_provider(spec.model)
    except litellm.exceptions.BadRequestError:
        raise LosonaError(
            f"model '{spec.name}': litellm does not know the provider of {spec.model!r}; "
            "write it as provider/model, e.g. openai/gpt-5.5 or hosted_vllm/my-model"
        ) from None
    return model, provider


def unsupported_params(spec: ModelSpec) -> list[str]:
    """The parameters the config sends that litellm reports its provider does not accept.

    Empty when litellm does not know what the provider accepts.
    """
    model, provider = _provider(spec)
    supported = _litellm().get_supported_openai_params(model=model, custom_llm_provider=provider)
    params = [k for k in spec.params if k not in spec.drop_params]
    sent = [*params, *(["seed"] if spec.seed_per_trial else [])]
    return sorted(p for p in sent if supported is not None and p not in supported)


def provider_of(spec: ModelSpec) -> str:
    """The litellm provider a model config's calls go to (e.g. openai, gemini)."""
    return _provider(spec)[1]


def _prepare(spec: ModelSpec) -> _Prepared:
    """Resolve the provider, check the parameters against it, and find the price."""
    _, provider = _provider(spec)
    params = {k: v for k, v in spec.params.items() if k not in spec.drop_params}
    dropped = sorted(k for k in spec.params if k in spec.drop_params)
    rejected = unsupported_params(spec)
    if rejected:
        raise LosonaError(
            f"model '{spec.name}': litellm reports that {provider} does not accept {rejected} "
            f"for {spec.model}; remove them from params (or seed_per_trial), or list them "
            f"under drop_params in conf/model/{spec.name}.yaml so the drop is recorded"
        )
    # Asked even when the config sets a price, so the answer is in before any Router runs.
    info = _model_info(spec.model)
    # An OpenAI-compatible server of your own; an address for Anthropic's or Gemini's API
    # (a proxy, a test double) keeps that provider's caching and prices.
    own_server = bool(spec.api_base or spec.endpoints) and provider not in ("anthropic", "gemini")
    rates = pricing.rates_for(spec, provider, own_server, info)
    rule = cache_rule(provider, spec.model, own_server=own_server) if spec.prompt_caching else None
    return _Prepared(spec, params, dropped, rates, rule, _key_prefix(spec))


def _key_prefix(spec: ModelSpec) -> str:
    endpoints = sorted(spec.endpoints) if spec.endpoints else [spec.api_base]
    return _canonical({"v": KEY_VERSION, "model": spec.model, "endpoints": endpoints})


def _key_and_params(
    prefix: str, params: dict[str, Any], seed_per_trial: bool, request: Request
) -> tuple[str, dict[str, Any]]:
    messages = _canonical([dict(m) for m in request.messages])
    if seed_per_trial:
        digest = hashlib.sha256(f"{messages}\0{request.trial}".encode()).hexdigest()
        params = {**params, "seed": int(digest[:8], 16) % 2**31}
    material = f"{prefix}\0{_canonical(params)}\0{messages}\0{request.trial}"
    return hashlib.sha256(material.encode()).hexdigest(), params


def call_key(spec: ModelSpec, request: Request) -> str:
    """A request's call-cache key, computed without litellm (for checking a published run)."""
    params = {k: v for k, v in spec.params.items() if k not in spec.drop_params}
    return _key_and_params(_key_prefix(spec), params, spec.seed_per_trial, request)[0]


def _sender(spec: ModelSpec, litellm: ModuleType) -> Callable[..., Awaitable[Any]]:
    """The coroutine function that sends one call: direct, or spread over endpoints."""
    # Retries are ours (with Retry-After and a recorded outcome): litellm's are off.
    common = {"timeout": spec.timeout_s, "max_retries": 0}
    key = spec.api_key()
    if key is None and (spec.api_base or spec.endpoints):
        # A server of your own that needs no key: OpenAI-style clients insist on one, so
        # send vLLM's conventional placeholder.
        key = NO_KEY
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


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (Retry-After or retry-after-ms), if it did."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        return None
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, (when - datetime.now(UTC)).total_seconds()) if when else None


def _causes(exc: BaseException) -> list[BaseException]:
    """The exception and every exception it was raised from or while handling."""
    found: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is not None and all(current is not seen for seen in found):
            found.append(current)
            todo += [current.__cause__, current.__context__]
    return found


def _fault(exc: BaseException) -> str:
    """The kind of fault, named as it happened.

    litellm reports a dropped connection and a body that is not JSON as an
    InternalServerError (500), like a server's own 500; what really happened is in the
    exceptions it was raised from.
    """
    openai = _litellm().exceptions.openai
    causes = _causes(exc)
    if not any(isinstance(c, openai.APITimeoutError) for c in causes):
        if any(isinstance(c, openai.APIConnectionError) for c in causes):
            return "dropped connection"
        if any(isinstance(c, json.JSONDecodeError) for c in causes):
            return "malformed body"
    status = getattr(exc, "status_code", None)
    return f"{type(exc).__name__}{f' ({status})' if status else ''}"


def _describe(exc: BaseException, secret: str | None) -> str:
    text = " ".join(str(exc).split())[:300]
    if secret:
        text = text.replace(secret, "***")
    return f"{_fault(exc)}: {text}"


class _Limiter:
    """Sends in flight, adapted to rate limits: additive increase, multiplicative decrease.

    It starts at the config's concurrency, its ceiling. A 429 halves the limit (down to
    one), once per round: the other 429s to sends that went out before the cut were caused
    by the old limit and say nothing new. Each send that is not rate limited adds
    1/limit, so the limit grows by about one per limit's worth of good answers. A send
    waiting out a Retry-After holds no slot. litellm offers only fixed rpm/tpm budgets
    (its Router), not this.
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
class _Budget:
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


class _Run:
    """One call of `complete`: the queue, the workers, the cache and the accounting."""

    def __init__(
        self,
        prepared: _Prepared,
        cache: CallCache,
        budget: _Budget,
        bar: tqdm[Any],
        cached: int,
        use_cache: bool,
    ) -> None:
        self.prepared = prepared
        self.use_cache = use_cache
        self.spec = prepared.spec
        self.cache = cache
        self.budget = budget
        self.bar = bar
        self.cached = cached
        self.stats = CallStats()
        # What this run's calls came to. A completed call's reply is in the cache: only how
        # it went is kept (`made`), so a run holds no reply. Failed calls, and calls made
        # with the cache bypassed (returned as they came), are kept whole (`held`).
        self.made: dict[str, _Receipt] = {}
        self.held: dict[str, Completion] = {}
        self.stop: str | None = None
        self.failed = 0
        self.answered = 0  # calls of this run that got any answer from the endpoint
        self.refused_in_a_row = 0
        self.unreachable = False
        self.secret = self.spec.api_key()
        self.send = _sender(self.spec, _litellm())
        self.limiter = _Limiter(self.spec.concurrency)

    async def run(
        self, requests: Sequence[Request], pending: Sequence[int], keys: Sequence[str]
    ) -> None:
        """Send the requests at these indices (`keys`: every request's key); what came of
        each goes to `made` or `held`.

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
                    self.held[key] = completion
                elif self.use_cache:
                    # Reading from the cache, every run must see the answer it keeps.
                    kept = self.cache.put(key, self.spec.model, completion)
                    self.made[key] = _Receipt(kept.attempts, kept.billed_usd, kept.cost_usd)
                else:
                    # A fresh call asked for with the cache bypassed is returned as it came.
                    self.cache.put(key, self.spec.model, completion)
                    self.held[key] = completion
                self.bar.set_postfix_str(
                    f"cached {self.cached}, failed {self.failed}, ${self.budget.spent:.4f}",
                    refresh=False,
                )
                self.bar.update(1)

        workers = min(self.spec.concurrency, len(pending))
        await asyncio.gather(*(worker() for _ in range(workers)))

    async def call(
        self, request: Request, params: dict[str, Any], reuse: Reuse = NO_REUSE
    ) -> Completion:
        """One request, sent until it succeeds, fails for good, or runs out of retries.

        Rate limits are waited out for up to `rate_limit_patience_s` from the first send;
        other transient faults count against `max_attempts`.
        """
        litellm = _litellm()
        openai = litellm.exceptions.openai
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
                error = _describe(exc, self.secret)
                status = getattr(exc, "status_code", None)
                rate_limited = status == 429
                if _refused(exc):
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
                if status in FATAL_STATUSES:
                    self.stop = f"the provider refused the call: {error}"
                    return self._failure(error, attempt)
                transient = isinstance(exc, openai.APIConnectionError) or status in RETRY_STATUSES
                if not transient:
                    return self._failure(error, attempt)
                wait = _retry_after(exc)
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
                wait = min(MAX_WAIT_S, wait if wait is not None else self._backoff(limited))
                waited = time.perf_counter() - started
                if waited + wait > self.spec.rate_limit_patience_s:
                    return self._failure(
                        f"{error} (still rate limited after {waited:.0f} s and {attempt} "
                        f"attempts; rate_limit_patience_s is {self.spec.rate_limit_patience_s:g})",
                        attempt,
                    )
            else:
                counted += 1
                if counted >= self.spec.max_attempts:
                    return self._failure(f"{error} (after {attempt} attempts)", attempt)
                wait = min(MAX_WAIT_S, wait if wait is not None else self._backoff(counted))
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

    def _backoff(self, attempt: int) -> float:
        # Exponential with "equal jitter": between half and all of the doubled delay.
        delay = min(MAX_WAIT_S, self.spec.backoff_s * 2.0 ** (attempt - 1))
        return delay / 2 + random.uniform(0, delay / 2)

    def _failure(self, error: str, attempts: int) -> Completion:
        self.stats.failures[error.split(":")[0]] += 1
        return Completion.failed(error, attempts)


def _keys(prepared: _Prepared, requests: Sequence[Request]) -> list[tuple[str, dict[str, Any]]]:
    return [prepared.key_and_params(r) for r in requests]


def _warn_unpriced(prepared: _Prepared) -> None:
    if prepared.price_source == "unknown":
        print(
            f"warning: litellm has no price for {prepared.spec.model} and the config of "
            f"'{prepared.spec.name}' sets none: its cost is recorded as $0. Set price: "
            "{input_usd_per_mtok: ..., output_usd_per_mtok: ...} (0 for your own server).",
            file=sys.stderr,
        )


async def acomplete(
    spec: ModelSpec, requests: Sequence[Request], options: CallOptions
) -> Completions:
    """`complete` for callers already inside an event loop (no batch mode)."""
    prepared = _prepare(spec)
    if options.max_cost_usd is not None and prepared.price_source == "unknown":
        raise LosonaError(
            f"model '{spec.name}': max_cost_usd is set but nobody knows what "
            f"{spec.model} costs; set price in its config"
        )
    _warn_unpriced(prepared)
    started_at, started = datetime.now(UTC), time.perf_counter()
    with CallCache.open(options.cache_path) as cache:
        found = _look_up(prepared, requests, cache, options.use_cache)
        pending = found.missing
        if pending and isinstance(options.cache_path, CallStore) and options.cache_path.offline:
            raise CallNotFound(len(pending), len(set(found.keys)))
        if pending:
            # Only a call that must really be made needs the key: a run whose calls are
            # all cached or published reruns without one.
            spec.check_credentials()
        # A bar on a terminal, a line at a steady interval under DVC (losona/models/progress.py).
        bar = progress_bar(
            options.progress,
            total=len(requests),
            done=len(requests) - len(pending),  # cache hits and repeats of a request
        )
        budget = _Budget(options.max_cost_usd)
        run = _Run(prepared, cache, budget, bar, found.hits, options.use_cache)
        with bar:
            await run.run(requests, list(pending.values()), found.keys)
        if budget.tripped:  # every worker has returned: the calls in flight are paid for
            run.stop = budget.stopped()
    tally = found.tally(run.made, run.held)
    if options.run_log is not None:
        wall_s = time.perf_counter() - started
        write_json(runlog.facts(run, tally, len(pending), started_at, wall_s), options.run_log)
    if run.stop is not None:
        raise CallFailed(
            f"model '{spec.name}': stopped: {run.stop}. Every completed call is in the call "
            f"cache, so a rerun resumes where this one stopped ({tally.not_sent} of "
            f"{len(requests)} calls were not made)."
        )
    return Completions(options.cache_path, found.keys, run.made, run.held)


@dataclass(frozen=True, slots=True)
class _Receipt:
    """How a call made in this run went; its reply is in the call cache."""

    attempts: int
    billed_usd: float | None
    cost_usd: float


@dataclass
class _Found:
    """A run's requests looked up in the call cache: each one's key, and the calls to make."""

    keys: list[str] = dataclasses.field(default_factory=list)  # each request's, in order
    missing: dict[str, int] = dataclasses.field(default_factory=dict)  # key -> first request
    hits: int = 0  # requests served from the cache (or the run's published calls)
    published: int = 0  # of them, the ones the published calls answered
    hits_usd: float = 0.0  # their list cost

    def tally(self, made: dict[str, _Receipt], held: dict[str, Completion]) -> runlog.Tally:
        """What became of each request, for the run log."""
        tally = runlog.Tally(
            requests=len(self.keys),
            cache_hits=self.hits,
            from_published=self.published,
            cost_usd=self.hits_usd,
        )
        for key in self.keys:
            if key not in self.missing:
                continue
            outcome = held.get(key) or made.get(key)
            if outcome is None:
                tally.not_sent += 1
            elif isinstance(outcome, Completion) and not outcome.ok:
                tally.failed += 1
            else:
                tally.completed += 1
                tally.cost_usd += outcome.cost_usd
        return tally


def _look_up(
    prepared: _Prepared, requests: Sequence[Request], cache: CallCache, use_cache: bool
) -> _Found:
    """Each request's key, and which calls the cache lacks (identical requests: one call).

    A chunk of requests at a time: no reply the cache holds is kept.
    """
    found = _Found()

    def look_up(keys: list[str]) -> None:
        hits = cache.get_many(keys) if use_cache else {}
        for key in keys:
            if key in hits:
                found.hits += 1
                found.published += hits[key].published
                found.hits_usd += hits[key].cost_usd
            else:
                found.missing.setdefault(key, len(found.keys))
            found.keys.append(key)

    keys: list[str] = []
    for request in requests:
        keys.append(prepared.key_and_params(request)[0])
        if len(keys) == CHUNK:
            look_up(keys)
            keys = []
    look_up(keys)
    return found


class Completions(Sequence[Completion]):
    """What `complete` returns: each request's completion, in request order.

    Every completed call is in the call cache the moment it completes, so its reply is not
    kept here as well, where it would make a run's memory grow with its number of calls: it
    is read back from the cache, CHUNK requests at a time, when asked for. Failed calls,
    and calls made with the cache bypassed, are kept here whole. A completion made in this
    run says so (`cached` false, its attempts and what it was billed), as it came.
    """

    def __init__(
        self,
        location: CacheLocation,
        keys: list[str],
        made: dict[str, _Receipt],
        held: dict[str, Completion],
    ) -> None:
        self.location = location  # where the run looked its calls up: read back the same way
        self.keys = keys  # each request's call-cache key
        self._made, self._held = made, held
        self._chunk: tuple[int, list[Completion]] = (-1, [])  # the last chunk read back

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, index: int) -> Completion: ...
    @overload
    def __getitem__(self, index: slice) -> list[Completion]: ...
    def __getitem__(self, index: int | slice) -> Completion | list[Completion]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = range(len(self))[index]  # negative indices; IndexError past the end
        start = index - index % CHUNK
        if self._chunk[0] != start:
            self._chunk = (start, self._read(self.keys[start : start + CHUNK]))
        return self._chunk[1][index - start]

    def __iter__(self) -> Iterator[Completion]:
        for start in range(0, len(self.keys), CHUNK):
            yield from self._read(self.keys[start : start + CHUNK])

    def failed(self) -> list[Completion]:
        """The failed completions, one per request that failed, without reading the cache."""
        return [
            _keyed(self._held[key], key)
            for key in self.keys
            if key in self._held and not self._held[key].ok
        ]

    def completed_keys(self) -> set[str]:
        """The keys of the calls that completed (in the cache, or kept here)."""
        return {key for key in self.keys if key not in self._held or self._held[key].ok}

    def by_key(self, keys: list[str]) -> list[Completion]:
        """The completions of these keys (some of `self.keys`), in that order."""
        return self._read(keys)

    def _read(self, keys: list[str]) -> list[Completion]:
        """These keys' completions: kept here, or read from the cache (a connection of its
        own each time, so a table can be built from them on another thread)."""
        wanted = [key for key in keys if key not in self._held]
        if wanted:
            with CallCache.open(self.location) as cache:
                stored = cache.get_many(wanted)
        read = []
        for key in keys:
            if key in self._held:
                read.append(_keyed(self._held[key], key))
                continue
            if key not in stored:
                raise LosonaError(
                    f"{_cache_file(self.location)}: call {key} was completed in this run but "
                    "is no longer in the call cache; was the file moved or replaced? Rerun "
                    "the stage."
                )
            completion = stored[key]
            if (receipt := self._made.get(key)) is not None:
                completion = dataclasses.replace(
                    completion,
                    cached=False,
                    attempts=receipt.attempts,
                    billed_usd=receipt.billed_usd,
                )
            read.append(_keyed(completion, key))
        return read


def _cache_file(location: CacheLocation) -> Path:
    return Path(location.path if isinstance(location, CallStore) else location)


def _keyed(completion: Completion, key: str) -> Completion:
    return dataclasses.replace(completion, key=key)


class _InlineExecutor(ThreadPoolExecutor):
    """An event loop's default executor that runs each job at once, on the loop's thread.

    litellm.acompletion hands its synchronous request setup to the loop's default executor.
    On a worker thread that costs more than the setup itself: the thread and the event loop
    then take turns on the GIL, and each turn can wait out the interpreter's switch interval
    (5 ms), delaying every response the loop is handling. The loops `complete` runs serve
    only model calls, so they run that setup inline.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the awaiting caller, as a thread would
            future.set_exception(exc)
        return future


def complete(
    spec: ModelSpec,
    requests: Sequence[Request],
    options: CallOptions,
    *,
    batch: BatchSettings | None = None,
) -> Completions:
    """Run every request: cache first, then bounded-concurrency calls with retries.

    Results come in request order; a call that failed after its retries is a failed
    Completion. Memory follows the concurrency, not the number of requests: `requests` may
    build each request when asked for (it is read when the calls are planned and when each
    is sent), and the results are read back from the call cache as they are asked for (see
    Completions). With batch mode enabled the calls the cache lacks are first answered by
    provider batch jobs (losona/models/batch.py), whose facts join the run log.
    A refused key, an unknown model or the cost cap stops the run with a CallFailed.
    """
    batched = None
    if batch is not None and batch.enabled:
        from losona.models.batch import fill_cache_by_batch  # batch imports this module

        batched = fill_cache_by_batch(spec, requests, options, batch)

    async def run() -> Completions:
        asyncio.get_running_loop().set_default_executor(_InlineExecutor(max_workers=1))
        return await acomplete(spec, requests, options)

    completions = asyncio.run(run())
    if batched is not None:
        runlog.record_in_run_log(options.run_log, batched)
    return completions


def complete_all(
    spec: ModelSpec,
    requests: Sequence[Request],
    options: CallOptions,
    *,
    to: str,
    batch: BatchSettings | None = None,
) -> Completions:
    """`complete`, refusing with CallsFailed (naming `to`) when any call failed."""
    completions = complete(spec, requests, options, batch=batch)
    require_every_call(completions, to=to, run_log=options.run_log)
    return completions


def plan(spec: ModelSpec, requests: Sequence[Request], *, cache_path: CacheLocation) -> CallPlan:
    """For dry runs: how many calls, how many the cache already holds, estimated cost."""
    prepared = _prepare(spec)
    keyed = _keys(prepared, requests)
    with CallCache.open(cache_path) as cache:
        found = cache.get_many([k for k, _ in keyed])
    todo = {key: request for request, (key, _) in zip(requests, keyed, strict=True)}
    todo = {key: request for key, request in todo.items() if key not in found}
    tokens = prepared.params.get("max_tokens") or prepared.params.get("max_completion_tokens")
    basis = (
        f"{tokens} completion tokens per call (max_tokens)"
        if tokens
        else (f"about {EXPECTED_COMPLETION_TOKENS} completion tokens per call")
    )
    counted = CallPlan(
        model=spec.name,
        requests=len(requests),
        cached=sum(1 for key, _ in keyed if key in found),
        estimated_cost_usd=None,
        estimate_basis=(
            f"prompt tokens counted with {prepared.tokenizer.describe()}, {basis}, "
            f"price from {prepared.price_source}"
        ),
    )
    if not prepared.rates.known:
        return counted
    three = estimate_prices(prepared, list(todo.values()))
    return dataclasses.replace(
        counted,
        estimated_cost_usd=three.list_usd,
        with_caching_usd=three.caching_usd,
        with_batch_usd=three.batch_usd,
        pricing_basis=describe_estimate(prepared, three),
    )


def estimate_prices(prepared: _Prepared, requests: Sequence[Request]) -> pricing.Estimate:
    """List, caching and batch prices of these requests, sent in this order (offline)."""
    return pricing.estimate(
        prepared.rates,
        [prepared.prompt_tokens(r) for r in requests],
        prepared.completion_tokens,
        prepared.reuse(requests),
    )


def describe_estimate(prepared: _Prepared, found: pricing.Estimate) -> str:
    """How the caching and batch prices were estimated, for the reader."""
    rates, rule = prepared.rates, prepared.rule
    if rule is None:
        how = (
            "prompt caching is off (prompt_caching: false)"
            if not prepared.spec.prompt_caching
            else f"no prompt caching known for {_provider(prepared.spec)[1]}"
        )
    else:
        written = f", {found.written_tokens} written to it" if found.written_tokens else ""
        how = (
            f"caching: {found.reusing} of {found.calls} calls reuse a shared prefix, "
            f"{found.cached_tokens} of {found.prompt_tokens} prompt tokens read from the "
            f"cache{written} ({rule.describe()}; {rates.cache_basis})"
        )
    from losona.models.batch import BATCH_PROVIDERS  # batch imports this module

    provider, spec = _provider(prepared.spec)[1], prepared.spec
    if provider not in BATCH_PROVIDERS or spec.endpoints:
        mode = f"batch mode sends only to {', '.join(BATCH_PROVIDERS)}, at one endpoint"
    elif spec.api_base:
        # A server of one's own speaks the chat API; few also serve OpenAI's Batch API.
        mode = (
            f"batch mode only if {spec.api_base} serves OpenAI's Batch API (/files, "
            "/batches), which vLLM, llama.cpp and Ollama do not"
        )
    else:
        mode = "batch mode can send it"
    return f"{how}; batch: {rates.batch_basis}, {mode}"


def prepare(spec: ModelSpec) -> _Prepared:
    """A model's provider, parameters, prices and caching rule, checked (for estimates)."""
    return _prepare(spec)
