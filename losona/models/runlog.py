"""The run log: what one run of `complete` did (latency, attempts, cache hits, spend,
faults), as JSON beside a stage's outputs, so that the tables stay byte-identical."""

from __future__ import annotations

import collections
import json
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from losona.core.files import sha256_file, write_json
from losona.models.prepare import Prepared, RequestKeys


@dataclass
class CallStats:
    """What happened in one run of `complete`, counted as it happens, for the run log."""

    attempts: int = 0
    retried: collections.Counter[str] = field(default_factory=collections.Counter)
    failures: collections.Counter[str] = field(default_factory=collections.Counter)
    latencies: list[float] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0  # prompt tokens the provider billed as read from its cache
    cache_write_tokens: int = 0  # prompt tokens it billed as written to its cache
    calls_with_cache_hits: int = 0
    list_usd: float = 0.0  # the calls made, at list price
    sent_after_parent: int = 0  # calls held back until the call whose prefix they reuse answered
    # Set when the sends are done.
    concurrency: dict[str, int] = field(default_factory=dict)
    billed_usd: float = 0.0  # cache discounts included
    stopped: str | None = None
    estimated_each_call: bool = False  # only a capped run estimates each call before sending


@dataclass
class BatchReport:
    """What batch mode did in one run (losona/models/batch.py), for the run log's `batch`."""

    batch_ids: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)  # batches found waiting from a killed run
    lines_sent: int = 0  # request lines over every batch, retries included
    completed: int = 0  # results stored in the call cache
    retried: int = 0  # lines sent again after a failure
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd_batch_price: float = 0.0
    cost_usd_list_price: float = 0.0
    batch_price_from: str = ""
    state_dir: str = ""


@dataclass
class Tally:
    """What became of each request of one run of `complete`."""

    requests: int = 0
    cache_hits: int = 0  # requests served from the cache (or the run's published calls)
    from_published: int = 0  # cache hits the run's published calls answered
    completed: int = 0  # calls made in this run, counted per request that wanted them
    failed: int = 0
    not_sent: int = 0  # the run stopped before sending them
    cost_usd: float = 0.0  # every request's list cost, cache hits included


def facts(
    keys: RequestKeys,
    prepared: Prepared | None,
    stats: CallStats,
    tally: Tally,
    *,
    differing: int,
    distinct_sent: int,
    started_at: datetime,
    wall_s: float,
) -> dict[str, Any]:
    """The run log of one run of `complete`: its requests, calls, faults, spend and latency.
    `prepared` is None when the run made no call (its price and cache rule are then null)."""
    spec = keys.spec
    latencies = sorted(stats.latencies)

    def quantile(q: float) -> float | None:
        if not latencies:
            return None
        return round(latencies[min(len(latencies) - 1, int(q * len(latencies)))], 4)

    return {
        "model": spec.name,
        "provider_model": spec.model,
        "endpoints": list(spec.endpoints) or [spec.api_base],
        "started_at": started_at.isoformat(timespec="seconds"),
        "wall_s": round(wall_s, 3),
        "requests": tally.requests,
        "cache_hits": tally.cache_hits,
        # Of the cache hits, those the run's published calls answered, and the keys the
        # user's call cache holds with another answer (not used).
        "from_published_calls": tally.from_published,
        "differing_in_call_cache": differing,
        "cache_misses": tally.requests - tally.cache_hits,
        "distinct_calls_needed": distinct_sent,
        "completed": tally.completed,
        "failed": tally.failed,
        "not_sent": tally.not_sent,
        "attempts": stats.attempts,
        "retried_errors": dict(stats.retried),
        "failures": dict(stats.failures),
        "concurrency": stats.concurrency,
        "stopped": stats.stopped,
        # Billed (cache discounts included) and at list price, as the tables' cost_usd is.
        "cost_usd_this_run": round(stats.billed_usd, 6),
        "list_cost_usd_this_run": round(stats.list_usd, 6),
        "cost_usd_all_requests": round(tally.cost_usd, 6),
        "price_from": prepared.rates.source if prepared else None,
        "prompt_cache": {
            "rule": prepared.cache_rule_described() if prepared else None,
            "cache_read_tokens_this_run": stats.cache_read_tokens,
            "cache_write_tokens_this_run": stats.cache_write_tokens,
            "calls_with_cache_hits": stats.calls_with_cache_hits,
            "calls_sent_after_the_call_they_reuse": stats.sent_after_parent,
            "prices": prepared.rates.cache_basis if prepared else None,
        },
        "estimate_tokenizer": (
            prepared.tokenizer.describe() if prepared and stats.estimated_each_call else None
        ),
        "prompt_tokens_this_run": stats.prompt_tokens,
        "completion_tokens_this_run": stats.completion_tokens,
        "latency_s": {
            "mean": round(statistics.fmean(latencies), 4) if latencies else None,
            "p50": quantile(0.5),
            "p95": quantile(0.95),
            "max": round(latencies[-1], 4) if latencies else None,
        },
        "params_sent": keys.params,
        "dropped_params": keys.dropped,
    }


def answer_sources(*run_logs: Mapping[str, Any]) -> str:
    """Where the answers of one or more runs came from: published calls, call cache, new calls."""
    total = collections.Counter[str]()
    for log in run_logs:
        for fact in ("cache_hits", "from_published_calls", "differing_in_call_cache", "completed"):
            total[fact] += int(log.get(fact, 0))
    published = total["from_published_calls"]
    differing = total["differing_in_call_cache"]
    aside = (
        f" ({differing} of them answered differently in your call cache, which was not used)"
        if differing
        else ""
    )
    found = hit_sources(published, total["cache_hits"] - published, aside=aside)
    return f"{found}, {total['completed']} new calls"


def hit_sources(published: int, cached: int, *, aside: str = "") -> str:
    """Where cache hits came from: "5 from the run's published calls, 0 from the call cache"."""
    local = f"{cached} from the call cache"
    if not published:  # a run with no published calls, or none of them needed
        return local
    return f"{published} from the run's published calls{aside}, {local}"


def read_run_log(path: str | Path) -> dict[str, Any]:
    """A run log written by `complete`."""
    facts: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return facts


def _add(run_log: str | Path, name: str, value: Any) -> None:
    facts = read_run_log(run_log)
    facts[name] = value
    write_json(facts, run_log)


def record_table(run_log: str | Path, table: str | Path) -> None:
    """Name in a run log the table its run made, with its hash: a checkout restores a table
    but never its log, so `python -m losona.run_logs` shows a log only for its own table."""
    _add(run_log, "table", {"path": Path(table).as_posix(), "sha256": sha256_file(table)})


def record_in_run_log(run_log: str | Path | None, report: BatchReport) -> None:
    """Add the batch facts to the run log `complete` wrote (under `batch`)."""
    if run_log is not None:
        batch = {k: round(v, 6) if isinstance(v, float) else v for k, v in vars(report).items()}
        _add(run_log, "batch", batch)
