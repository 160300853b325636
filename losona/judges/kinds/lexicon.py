"""The lexicon judge's kind: rules and no model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from losona.core.files import read_yaml
from losona.judges.kinds.kind import JudgeKind
from losona.judges.lexicon import LexiconJudge
from losona.judges.rules import RULES_PATH


def _verdict_origin(entry: Mapping[str, Any], origin: str) -> dict[str, Any]:
    version = entry.get("rules_version")
    return {"judge_model": f"lexicon@{version}", "judge_version": version}


def _identity(entry: Mapping[str, Any], templates: Mapping[str, Any]) -> str:
    rules = (templates.get("lexicon_rules") or {}).get("sha256", "")
    return f"lexicon (rules {entry.get('rules_version')}, sha256 {str(rules)[:12]})"


KIND = JudgeKind(
    make=lambda config, options: LexiconJudge(),
    record=lambda config: {"rules_version": str(read_yaml(RULES_PATH)["version"])},
    verdict_origin=_verdict_origin,
    identity=_identity,
)
