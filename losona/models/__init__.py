"""The one road to any model: every subject and judge call goes through this package.

    from losona.models import ModelSpec, Request, complete
    spec = ModelSpec.from_config(model_node)  # checked in losona/core/config/ (schemas)
    completions = complete(spec, [Request(messages, trial=k)], CallOptions(cache_path=...))

The modules, in the order a call meets them: `values` the plain values (no litellm import);
`options` how a run uses the cache and what it may spend; `prepare` what a config sends, its
price and each request's cache key; `call_cache` the on-disk call cache, with
`published_calls` a run's published calls as a read-only layer below it; `complete` the run
itself (cache first, then batch jobs or sends); `batch` the opt-in provider batch jobs that
fill the cache; `send` bounded-concurrency sends with retries, the rate-limit limiter and
the cost cap; `litellm_api` where litellm is imported and asked (only `smollm2`, a litellm
provider, imports it too); `completions` what a run returns and the checks on it; `runlog`
the record of what each run did; `pricing`, `prompt_caching` and `tokens` the prices,
providers' prompt caching and token counts estimates use; `progress` the progress bar;
`smollm2` the embedded default model, `prompt_states` the prompt states it keeps on disk for
the next process.

Why the layer has its own retries, limiter and cache rather than litellm's (whose retries
are turned off): a retry honours Retry-After within `rate_limit_patience_s`, names what
really happened (a dropped connection, a malformed body) and is counted in the run log;
an endpoint that refuses every first connection stops the run at once. The limiter halves
the sends in flight on a 429 and grows them back, where litellm offers fixed rpm/tpm
budgets. The cache keys each call by everything sent and its trial, commits each
completed call the moment it completes (a crash loses no paid call), and answers from a
run's published calls first, so that tables rebuild byte for byte.
"""

import os

# Before any module of this package imports litellm: its import must never fetch the
# price map from the network (the package's own copy is used).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from losona.core.config import BatchSettings, ModelSpec, Price
from losona.models.batch import BatchFailed
from losona.models.call_cache import CacheLocation, CallNotFound, CallStore
from losona.models.complete import complete, complete_all, plan
from losona.models.completions import (
    CallFailed,
    CallsFailed,
    Completions,
    calls_table,
    failures,
    require_every_call,
)
from losona.models.litellm_api import provider_of, unsupported_params
from losona.models.options import CallOptions
from losona.models.prepare import call_key
from losona.models.published_calls import PublishedCalls, read_calls
from losona.models.runlog import answer_sources, read_run_log
from losona.models.values import CallPlan, Completion, Request

__all__ = [
    "BatchFailed",
    "BatchSettings",
    "CacheLocation",
    "CallFailed",
    "CallNotFound",
    "CallOptions",
    "CallPlan",
    "CallStore",
    "CallsFailed",
    "Completion",
    "Completions",
    "ModelSpec",
    "Price",
    "PublishedCalls",
    "Request",
    "answer_sources",
    "call_key",
    "calls_table",
    "complete",
    "complete_all",
    "failures",
    "plan",
    "provider_of",
    "read_calls",
    "read_run_log",
    "require_every_call",
    "unsupported_params",
]
