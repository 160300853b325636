"""How a run of calls uses the call cache, what it may spend and where it is recorded."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from losona.models.call_cache import CacheLocation


@dataclass(frozen=True)
class CallOptions:
    """How a run of calls uses the call cache, what it may spend and where it is recorded."""

    cache_path: CacheLocation  # the call cache, or a CallStore with a run's published calls
    use_cache: bool = True  # False: fresh calls (cache reads bypassed), still recorded
    max_cost_usd: float | None = None  # stop before this run's spend would pass it
    # A JSON file for this run's facts (latency, attempts, cache hits, spend, failures).
    run_log: str | Path | None = None
    # Labels the progress: a bar on a terminal, else lines at a steady interval (progress.py).
    progress: str | None = None
