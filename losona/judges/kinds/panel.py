"""The panel's kind: it judges nothing itself but combines its members' verdicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from losona.core.config import JudgeConfig
from losona.core.errors import LosonaError
from losona.judges.base import Judge
from losona.judges.kinds.kind import JudgeKind
from losona.judges.panels import PANEL_VERSION, panel_description
from losona.models import CallOptions


def _make(config: JudgeConfig, options: CallOptions) -> Judge:
    raise LosonaError(
        f"judge '{config.name}' is a panel: it judges nothing itself but combines its "
        "members' verdicts (python stages/panel.py); list it in conf/panels.yaml, not "
        "in sweep.judges (docs/judges.md, 'Judge panels')"
    )


def _record(config: JudgeConfig) -> dict[str, Any]:
    return {
        "members": list(config.members or ()),
        "rule": config.rule,
        "unscored_members": config.unscored_members,
        "panel_version": PANEL_VERSION,
    }


def _verdict_origin(entry: Mapping[str, Any], origin: str) -> dict[str, Any]:
    panel = JudgeConfig.from_config(
        {k: entry.get(k) for k in ("name", "kind", "members", "rule", "unscored_members")},
        origin=origin,
    )
    return {"judge_model": panel_description(panel), "judge_version": entry.get("panel_version")}


def _identity(entry: Mapping[str, Any], templates: Mapping[str, Any]) -> str:
    members = ", ".join(map(str, entry.get("members") or []))
    return (
        f"panel ({entry.get('rule')} of {members}; unscored members "
        f"{entry.get('unscored_members')})"
    )


KIND = JudgeKind(
    make=_make,
    record=_record,
    verdict_origin=_verdict_origin,
    identity=_identity,
)
