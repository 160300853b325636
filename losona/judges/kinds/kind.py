"""What a kind of judge does: how its judge is made and recorded."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from losona.core.config import JudgeConfig
from losona.judges.base import Judge
from losona.models import CallOptions


def model_and_template(entry: Mapping[str, Any], templates: Mapping[str, Any]) -> str:
    """A judge that calls a model: its kind, the model and the judge template's hash."""
    model = entry.get("model") or {}
    template = (templates.get("judge") or {}).get("sha256", "")
    return f"{entry.get('kind')} ({model.get('model')}, template sha256 {str(template)[:12]})"


@dataclass(frozen=True)
class JudgeKind:
    """What a kind of judge (`kind:` in conf/judge/*.yaml) does; what it asks of its config
    and is known by kind alone are its settings (losona/core/config/schemas.py, JUDGE_KINDS)."""

    # Its judge, from its checked config and the run's call options.
    make: Callable[[JudgeConfig, CallOptions], Judge]
    # What provenance records of a judge of the kind, beside its name, label, kind and the
    # model its config names (losona/provenance/record.py).
    record: Callable[[JudgeConfig], dict[str, Any]]
    # The `judge_model` and `judge_version` its verdicts carry, read back from that record
    # (reproduce); the second argument names the record in a refusal.
    verdict_origin: Callable[[Mapping[str, Any], str], dict[str, Any]]
    # What makes its numbers comparable with another run's (a board groups runs by it),
    # from that record and the run's template hashes (provenance's `templates`).
    identity: Callable[[Mapping[str, Any], Mapping[str, Any]], str] = model_and_template
