"""The one road to any model: every subject and judge call goes through this package.

    from losona.models import CallOptions, ModelSpec, Request, complete
    spec = ModelSpec.from_config(model_node)  # checked in losona/core/config/ (schemas)
    completions = complete(spec, [Request(messages, trial=k)], CallOptions(cache_path=...))

A call meets, in order: `prepare` (its key and price), `call_cache` (with `published_calls`
below it), `complete`, `batch` or `send` (with `retry`), and `runlog`. litellm is imported
in `litellm_api`. Why the layer has its own retries and rate limiter: retry.py and send.py
(`Limiter`); its own cache keys each call with its trial, keeps it the moment it completes
and answers from a run's published calls first (call_cache.py).
"""

import os

# Before any module of this package imports litellm: its import must never fetch the
# price map from the network (the package's own copy is used).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from losona.core.config import BatchSettings, ModelSpec
from losona.models.batch import BatchFailed
from losona.models.call_cache import CacheLocation, CallNotFound, CallStore
from losona.models.complete import complete, complete_all, plan
from losona.models.completions import CallFailed, CallsFailed, calls_table, require_every_call
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
    "ModelSpec",
    "PublishedCalls",
    "Request",
    "answer_sources",
    "call_key",
    "calls_table",
    "complete",
    "complete_all",
    "plan",
    "provider_of",
    "read_calls",
    "read_run_log",
    "require_every_call",
    "unsupported_params",
]
