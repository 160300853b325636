"""Running calls: the road every subject and judge call takes, one model, many requests.

The call cache first, then batch jobs if enabled, then sends; results in request order.
What differs between runs (latency, attempts, spend as billed) goes to the run log only.
"""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from losona.core.config import BatchSettings, ModelSpec
from losona.core.errors import LosonaError
from losona.core.files import CHUNK, write_json
from losona.models import pricing, runlog
from losona.models.batch import BATCH_PROVIDERS, fill_cache_by_batch
from losona.models.call_cache import (
    CacheLocation,
    CallCache,
    CallNotFound,
    CallStore,
    cache_file,
    offline,
)
from losona.models.completions import CallFailed, Completions, Receipt, require_every_call
from losona.models.litellm_api import keep_states_beside, provider_of
from losona.models.options import CallOptions
from losona.models.prepare import Prepared, RequestKeys, prepare
from losona.models.pricing import EXPECTED_COMPLETION_TOKENS
from losona.models.progress import progress_bar
from losona.models.send import Sender
from losona.models.values import CallPlan, Completion, Request


def _ready_to_send(spec: ModelSpec, options: CallOptions) -> Prepared:
    """Before a run's first call: the spec checked against its provider, priced, its key found."""
    prepared = prepare(spec)
    if options.max_cost_usd is not None and not prepared.rates.known:
        raise LosonaError(
            f"model '{spec.name}': max_cost_usd is set but nobody knows what "
            f"{spec.model} costs; set price in its config"
        )
    if not prepared.rates.known:
        print(
            f"warning: litellm has no price for {spec.model} and the config of "
            f"'{spec.name}' sets none: its cost is recorded as $0. Set price: "
            "{input_usd_per_mtok: ..., output_usd_per_mtok: ...} (0 for your own server).",
            file=sys.stderr,
        )
    spec.check_credentials()
    return prepared


async def acomplete(
    spec: ModelSpec, requests: Sequence[Request], options: CallOptions
) -> Completions:
    """The run inside an event loop: `complete` starts one, after any batch jobs."""
    request_keys = RequestKeys.of(spec)
    started_at, started = datetime.now(UTC), time.perf_counter()
    with CallCache(options.cache_path) as cache:
        found = _look_up(request_keys, requests, cache, options.use_cache)
        pending = found.missing
        if pending and offline(options.cache_path):
            raise CallNotFound(len(pending), len(set(found.keys)))
        # Only a call that must be made needs litellm (seconds to import) and an API key.
        prepared = None
        if pending:
            prepared = _ready_to_send(spec, options)
            keep_states_beside(cache.path)
        bar = progress_bar(
            options.progress,
            total=len(requests),
            done=len(requests) - len(pending),  # cache hits and repeats of a request
            answered=found.answered(),
        )
        # A completed call's reply is in the cache: only how it went is kept (`made`). Failed
        # calls, and calls made with the cache bypassed, are kept whole (`held`).
        made: dict[str, Receipt] = {}
        held: dict[str, Completion] = {}

        def keep(key: str, completion: Completion) -> None:
            if not completion.ok:
                held[key] = completion
            elif options.use_cache:  # every run must see the answer the cache keeps
                kept = cache.put(key, spec.model, completion)
                made[key] = Receipt(kept.attempts, kept.billed_usd, kept.cost_usd)
            else:  # a fresh call, asked for with the cache bypassed, as it came
                cache.put(key, spec.model, completion)
                held[key] = completion

        stats = runlog.CallStats()
        with bar:
            if prepared is not None:
                sender = Sender(prepared, options.max_cost_usd, bar)
                await sender.run(requests, list(pending.values()), found.keys, keep)
                stats = sender.stats
    tally = found.tally(made, held)
    if options.run_log is not None:
        facts = runlog.facts(
            request_keys,
            prepared,
            stats,
            tally,
            differing=len(cache.differing),
            distinct_sent=len(pending),
            started_at=started_at,
            wall_s=time.perf_counter() - started,
        )
        write_json(facts, options.run_log)
    if stats.stopped is not None:
        raise CallFailed(
            f"model '{spec.name}': stopped: {stats.stopped}. Every completed call is in the "
            f"call cache, so a rerun resumes where this one stopped ({tally.not_sent} of "
            f"{len(requests)} calls were not made)."
        )
    return Completions(options.cache_path, found.keys, made, held)


@dataclass
class _Found:
    """A run's requests looked up in the call cache: each one's key, and the calls to make."""

    keys: list[str] = dataclasses.field(default_factory=list)  # each request's, in order
    missing: dict[str, int] = dataclasses.field(default_factory=dict)  # key -> first request
    hits: runlog.Tally = dataclasses.field(default_factory=runlog.Tally)  # the cache hits

    def answered(self) -> str:
        """Where the requests answered before any call is made came from, for the first line."""
        hits, published = self.hits.cache_hits, self.hits.from_published
        said = runlog.hit_sources(published, hits - published)
        # A request asked twice in one run is sent once: its second asking waits for it.
        repeats = len(self.keys) - hits - len(self.missing)
        return f"{said}, {repeats} repeating a call of this run" if repeats else said

    def tally(self, made: dict[str, Receipt], held: dict[str, Completion]) -> runlog.Tally:
        """What became of each request, for the run log: the cache hits, and the calls."""
        tally = dataclasses.replace(self.hits, requests=len(self.keys))
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
    request_keys: RequestKeys, requests: Sequence[Request], cache: CallCache, use_cache: bool
) -> _Found:
    """Each request's key, and which calls the cache lacks (identical requests: one call),
    a chunk at a time: no reply the cache holds is kept."""
    found = _Found()
    for start in range(0, len(requests), CHUNK):
        keys = [request_keys.key_and_params(r)[0] for r in requests[start : start + CHUNK]]
        hits = cache.get_many(keys) if use_cache else {}
        for key in keys:
            if key in hits:
                found.hits.cache_hits += 1
                found.hits.from_published += hits[key].published
                found.hits.cost_usd += hits[key].cost_usd
            else:
                found.missing.setdefault(key, len(found.keys))
            found.keys.append(key)
    return found


class _InlineExecutor(ThreadPoolExecutor):
    """An event loop's default executor that runs each job at once, on the loop's thread:
    litellm.acompletion's setup on a worker thread would take turns with the loop on the
    GIL, delaying every response the loop handles."""

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
    """Run every request: cache first, then batch jobs if enabled, then sends with retries.

    A call that failed after its retries is a failed Completion; a refused key, an unknown
    model or the cost cap raises CallFailed. `requests` may build each one when asked for.
    """
    batched = None
    if batch is not None and batch.enabled:
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
    prepared = prepare(spec)
    keys = [prepared.key_and_params(r)[0] for r in requests]
    found = _held(keys, cache_path)
    basis = (
        f"{prepared.max_tokens} completion tokens per call (max_tokens)"
        if prepared.max_tokens
        else f"about {EXPECTED_COMPLETION_TOKENS} completion tokens per call"
    )
    counted = CallPlan(
        model=spec.name,
        requests=len(requests),
        cached=sum(key in found for key in keys),
        estimated_cost_usd=None,
        estimate_basis=(
            f"prompt tokens counted with {prepared.tokenizer.describe()}, {basis}, "
            f"price from {prepared.rates.source}"
        ),
    )
    if not prepared.rates.known:
        return counted
    # Each distinct call once, in request order.
    todo = {key: r for r, key in zip(requests, keys, strict=True) if key not in found}
    priced = list(todo.values())
    three = pricing.estimate(
        prepared.rates,
        [prepared.prompt_tokens(r) for r in priced],
        prepared.completion_tokens,
        prepared.reuse(priced),
    )
    return dataclasses.replace(
        counted,
        estimated_cost_usd=three.list_usd,
        with_caching_usd=three.caching_usd,
        with_batch_usd=three.batch_usd,
        pricing_basis=describe_estimate(prepared, three),
    )


def _held(keys: Sequence[str], cache_path: CacheLocation) -> set[str]:
    """The keys the call cache or the run's published calls hold; a dry run creates no
    call cache where there is none yet."""
    if cache_file(cache_path).expanduser().exists():
        with CallCache(cache_path) as cache:
            return set(cache.get_many(keys))
    published = cache_path.published if isinstance(cache_path, CallStore) else None
    return set(published.get_many(keys)) if published is not None else set()


def describe_estimate(prepared: Prepared, found: pricing.Estimate) -> str:
    """How the caching and batch prices were estimated, for the reader."""
    rates, rule, spec = prepared.rates, prepared.rule, prepared.spec
    provider = provider_of(spec)
    if rule is None:
        how = (
            "prompt caching is off (prompt_caching: false)"
            if not spec.prompt_caching
            else f"no prompt caching known for {provider}"
        )
    else:
        written = f", {found.written_tokens} written to it" if found.written_tokens else ""
        how = (
            f"caching: {found.reusing} of {found.calls} calls reuse a shared prefix, "
            f"{found.cached_tokens} of {found.prompt_tokens} prompt tokens read from the "
            f"cache{written} ({rule.describe()}; {rates.cache_basis})"
        )
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
