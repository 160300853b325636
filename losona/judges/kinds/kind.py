"""What a kind of judge says: how its judge is made and recorded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from losona.core.config import JudgeConfig, JudgeKindSettings
from losona.judges.base import Judge
from losona.models import CallOptions


@dataclass(frozen=True)
class JudgeKind:
    """One kind of judge (`kind:` in conf/judge/*.yaml): all the pipeline asks of it."""

    name: str
    # What its config must and must not hold, and what is known of it by kind alone: whether
    # its reasoning is its own words, whether it combines other judges' verdicts, why the
    # determinism audit need not judge it again (losona/core/config/schemas.py, JUDGE_KINDS).
    settings: JudgeKindSettings
    # Its judge, from its checked config and the run's call options.
    make: Callable[[JudgeConfig, CallOptions], Judge]
    # What provenance records of a judge of the kind, beside its name, label, kind and the
    # model its config names (losona/provenance/record.py).
    record: Callable[[JudgeConfig], dict[str, Any]]
    # The `judge_model` and `judge_version` its verdicts carry, read back from that record
    # (reproduce); the second argument names the record in a refusal.
    verdict_origin: Callable[[Mapping[str, Any], str], dict[str, Any]]
