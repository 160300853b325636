"""The one road to any model: every subject and judge call goes through this package.

    completions = complete(spec, [Request(messages, trial=k)], CallOptions(cache_path=...))

A call meets, in order: `prepare` (its key and price), `call_cache` (with `published_calls`
below it), `complete`, `batch` or `send` (with `retry`), and `runlog`. Only `litellm_api`
imports litellm.
"""

import os

# Before any import of litellm, which would otherwise fetch its price map from the network.
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
