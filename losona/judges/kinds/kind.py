"""What a kind of judge says: how its judge is made, judged again offline, and recorded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from losona.config import JudgeConfig, JudgeKindSettings
from losona.judges.base import Judge
from losona.layout import RunLayout
from losona.models import CallOptions, CallStore


@dataclass(frozen=True)
class JudgeKind:
    """One kind of judge (`kind:` in conf/judge/*.yaml): all the pipeline asks of it."""

    name: str
    # What its config must and must not hold, and what is known of it by kind alone: whether
    # its reasoning is its own words, whether it combines other judges' verdicts, why the
    # determinism audit need not judge it again (losona/config/schemas.py, JUDGE_KINDS).
    settings: JudgeKindSettings
    # Its judge, from its checked config and the run's call options.
    make: Callable[[JudgeConfig, CallOptions], Judge]
    # Its judge judging again with no model call (reproduce): from the judge's name, whose
    # config is read only when needed (a published run's may be gone), and a call store that
    # answers from the run's published calls alone. None when nothing can answer it so.
    rejudge: Callable[[str, CallStore], Judge | None]
    # What provenance records of a judge of the kind, beside its name, label, kind and the
    # model its config names (losona/provenance/record.py).
    record: Callable[[JudgeConfig], dict[str, Any]]
    # The `judge_model` and `judge_version` its verdicts carry, read back from that record
    # (reproduce); the second argument names the record in a refusal.
    verdict_origin: Callable[[Mapping[str, Any], str], dict[str, Any]]
    # A kind that combines other judges' verdicts (its settings say so): one cell's verdicts
    # combined again from theirs, from its name, the run's layout, the subject model and the
    # condition.
    recombine: Callable[[str, RunLayout, str, str], pl.DataFrame] | None = None
