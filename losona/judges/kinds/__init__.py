"""Every kind of judge, in one registry: the `kind` of a judge config names one of KINDS.

A kind is a module here holding its JudgeKind: how its judge is made from its config, what
provenance records of it and how that reads back. Its settings, what its config must hold
and what is known of it by kind alone (whether its reasoning is its own words, whether it
combines other judges' verdicts), are its JudgeKindSettings in losona/core/config/schemas.py
(JUDGE_KINDS), since a config is checked without any judge code. Nothing outside this
package and those settings asks which kind a judge is (`tests/test_judge_kinds.py`);
docs/judges.md, "Adding a judge kind".

- `kind`: JudgeKind, what a kind says.
- `lexicon`, `llm`, `panel`: the kinds.
"""

from __future__ import annotations

from losona.core.config import JudgeConfig
from losona.core.config.schemas import JUDGE_KINDS
from losona.core.errors import LosonaError
from losona.judges.kinds.kind import JudgeKind
from losona.judges.kinds.lexicon import LEXICON
from losona.judges.kinds.llm import LLM
from losona.judges.kinds.panel import PANEL

__all__ = ["KINDS", "JudgeKind", "judge_kind", "register"]

KINDS: dict[str, JudgeKind] = {kind.name: kind for kind in (LEXICON, LLM, PANEL)}


def judge_kind(judge: JudgeConfig | str) -> JudgeKind:
    """A judge config's kind, or the kind of that name (as a provenance record names it)."""
    name = judge.kind if isinstance(judge, JudgeConfig) else judge
    if name not in KINDS:
        raise LosonaError(
            f"unknown judge kind {name!r}: expected one of {list(KINDS)} (losona/judges/kinds/)"
        )
    return KINDS[name]


def register(kind: JudgeKind) -> None:
    """Add a kind of judge: from now on, in this process, a judge config may name it."""
    if kind.name in KINDS or kind.name in JUDGE_KINDS:
        raise LosonaError(f"a judge kind named {kind.name!r} is registered already")
    JUDGE_KINDS[kind.name] = kind.settings
    KINDS[kind.name] = kind
