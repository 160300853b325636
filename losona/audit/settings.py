"""The `audit:` config node: the labelling sheet, re-judging, export; checked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any, TypeVar

from losona.errors import LosonaError

_S = TypeVar("_S", "SheetSettings", "DeterminismSettings")


@dataclass(frozen=True)
class SheetSettings:
    """The labelling sheet: how many responses, drawn with which seed."""

    items: int = 100
    seed: int = 0


@dataclass(frozen=True)
class DeterminismSettings:
    """Re-judging: how many times (0: not at all), how many items, which seed draws them."""

    repeats: int = 0
    items: int = 20
    seed: int = 0


@dataclass(frozen=True)
class AuditSettings:
    """The `audit:` config node."""

    export: bool
    sheet: SheetSettings
    determinism: DeterminismSettings

    @classmethod
    def from_config(cls, node: Mapping[str, Any]) -> AuditSettings:
        """From the `audit:` node as plain values, refusing unknown, missing or bad settings."""
        _expect_keys(node, {"export", "sheet", "determinism"}, "audit")
        if not isinstance(node["export"], bool):
            raise LosonaError(f"audit.export must be true or false, got {node['export']!r}")
        sheet = _whole_numbers(SheetSettings, node["sheet"], "audit.sheet")
        determinism = _whole_numbers(DeterminismSettings, node["determinism"], "audit.determinism")
        for where, items in (("sheet", sheet.items), ("determinism", determinism.items)):
            if items < 1:
                raise LosonaError(f"audit.{where}.items must be at least 1, got {items}")
        return cls(node["export"], sheet, determinism)


def _expect_keys(node: Any, expected: set[str], where: str) -> None:
    if not isinstance(node, Mapping) or set(node) != expected:
        found = sorted(node) if isinstance(node, Mapping) else node
        raise LosonaError(f"{where}: expected the settings {sorted(expected)}, found {found}")


def _whole_numbers(cls: type[_S], node: Any, where: str) -> _S:
    names = {f.name for f in fields(cls)}
    _expect_keys(node, names, where)
    for name in sorted(names):
        value = node[name]
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise LosonaError(f"{where}.{name} must be a whole number (0 or more), got {value!r}")
    return cls(**node)
