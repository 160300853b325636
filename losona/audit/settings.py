"""The audit's settings: the `audit:` node of conf/config.yaml (the labelling sheet, re-judging)."""

from __future__ import annotations

from typing import ClassVar

from losona.core.config.loading import ROOT_FILE
from losona.core.config.values import Count, Flag, Schema, WholeNumber


class SheetSettings(Schema):
    """The labelling sheet: how many responses, drawn with which seed."""

    EVERY_KEY: ClassVar[bool] = True

    items: Count = 100
    seed: WholeNumber = 0


class DeterminismSettings(Schema):
    """Re-judging: how many times (0: not at all), how many items, which seed draws them."""

    EVERY_KEY: ClassVar[bool] = True

    repeats: WholeNumber = 0
    items: Count = 20
    seed: WholeNumber = 0


class AuditSettings(Schema):
    """The `audit:` node of conf/config.yaml."""

    KEY: ClassVar[str] = "audit"
    FILE: ClassVar[str] = str(ROOT_FILE)

    export: Flag
    sheet: SheetSettings
    determinism: DeterminismSettings
