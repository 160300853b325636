"""The one road to any model: every subject and judge call goes through this package.

    from losona.models import ModelSpec, Request, complete
    spec = ModelSpec.from_config(model_node)  # checked in losona/config.py
    completions = complete(spec, [Request(messages, trial=k)], CallOptions(cache_path=...))

`values` holds the plain values (no litellm import), `call_cache` the on-disk call cache,
`published_calls` a run's calls as a read-only layer below it, `prompt_caching` how providers
cache prompt prefixes, `calls` the async runner built on litellm, `runlog` the record of
what each run of it did, `batch` the opt-in provider batch jobs that fill the cache before
`complete`, `smollm2` the embedded default model.
"""

import os

# Before any module of this package imports litellm: its import must never fetch the
# price map from the network (the package's own copy is used).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from losona.config import BatchSettings, ModelSpec, Price
from losona.models.batch import (
    BatchFailed,
    fill_cache_by_batch,
)
from losona.models.call_cache import CacheLocation, CallNotFound, CallStore
from losona.models.calls import (
    CallFailed,
    CallOptions,
    CallsFailed,
    Completions,
    acomplete,
    call_key,
    complete,
    complete_all,
    failures,
    plan,
    provider_of,
    require_every_call,
    unsupported_params,
)
from losona.models.published_calls import PublishedCalls, calls_table, read_calls
from losona.models.runlog import answer_sources, read_run_log, record_in_run_log
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
    "acomplete",
    "answer_sources",
    "call_key",
    "calls_table",
    "complete",
    "complete_all",
    "failures",
    "fill_cache_by_batch",
    "plan",
    "provider_of",
    "read_calls",
    "read_run_log",
    "record_in_run_log",
    "require_every_call",
    "unsupported_params",
]
