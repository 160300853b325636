"""Every kind of judge's behaviour: how its judge is made from its config, what provenance
records of it and how that reads back.

A kind is registered once, in JUDGE_KINDS (losona/core/config/schemas.py): its settings,
what its config must hold and what is known of it by kind alone, and the name of the module
whose KIND is its JudgeKind. Core only names that module, since a config is checked without
any judge code; `judge_kind` imports it. Nothing outside this package and those settings asks
which kind a judge is (`tests/test_judge_kinds.py`); docs/judges.md, "Adding a judge kind".

- `kind`: JudgeKind, what a kind does.
- `lexicon`, `llm`, `panel`: the kinds' behaviour.
"""

from __future__ import annotations

import importlib

from losona.core.config import JudgeConfig, JudgeKindSettings, judge_kind_settings
from losona.core.config.schemas import JUDGE_KINDS
from losona.core.errors import LosonaError
from losona.judges.kinds.kind import JudgeKind

__all__ = ["JudgeKind", "judge_kind", "register"]


def judge_kind(judge: JudgeConfig | str) -> JudgeKind:
    """A judge config's kind, or the kind of that name (as a provenance record names it)."""
    settings = judge_kind_settings(judge.kind if isinstance(judge, JudgeConfig) else judge)
    # Imported once: later askings find the module in sys.modules.
    kind: JudgeKind = importlib.import_module(settings.behaviour).KIND
    return kind


def register(name: str, settings: JudgeKindSettings) -> None:
    """Add a kind of judge: from now on, in this process, a judge config may name it, and its
    JudgeKind is the KIND of the module its settings name."""
    if name in JUDGE_KINDS:
        raise LosonaError(f"a judge kind named {name!r} is registered already")
    JUDGE_KINDS[name] = settings
