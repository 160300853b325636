"""How a run's tables are ordered and labelled: the sweep's order (params.yaml) and each
model's, condition's and judge's display label and kind, read from conf/."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from losona.core.config import option, option_file
from losona.core.formatting import display_label
from losona.judges.verdicts import CELL, Cell
from losona.results.metrics import BASELINE_CONDITION


@dataclass(frozen=True)
class Presentation:
    """How reports order and name things: the sweep's order, then display labels."""

    judges: Sequence[str] = ()
    models: Sequence[str] = ()
    conditions: Sequence[str] = (BASELINE_CONDITION,)
    model_labels: Mapping[str, str] = field(default_factory=dict)
    condition_labels: Mapping[str, str] = field(default_factory=dict)
    judge_labels: Mapping[str, str] = field(default_factory=dict)

    def cell_key(self, cell: Cell) -> tuple[Any, ...]:
        """Sort key: the sweep's order first; names it does not list follow alphabetically."""
        orders = (self.judges, self.models, self.conditions)
        return tuple(_rank(order, name) for order, name in zip(orders, cell, strict=True))

    def model_label(self, name: str) -> str:
        """A model's display name, e.g. "Gemini 3.1 Pro"."""
        return self.model_labels.get(name, name)

    def condition_label(self, name: str) -> str:
        """A condition's display name, e.g. "Norm-informed"."""
        return self.condition_labels.get(name, name)

    def judge_label(self, name: str) -> str:
        """A judge's display name, e.g. "Gemini 3.1 Pro Preview (paper judge)"."""
        return self.judge_labels.get(name, name)


def presentation_for(verdicts: pl.DataFrame, sweep: Mapping[str, Sequence[str]]) -> Presentation:
    """The sweep's order (params.yaml) and the labels of conf/model/, condition/ and judge/."""
    return Presentation(
        judges=sweep["judges"],
        models=sweep["models"],
        conditions=sweep["conditions"],
        model_labels=config_labels("model", verdicts["subject_model"].unique().sort()),
        condition_labels=config_labels("condition", verdicts["condition"].unique().sort()),
        judge_labels=config_labels("judge", verdicts["judge"].unique().sort()),
    )


def outside_sweep(verdicts: pl.DataFrame, sweep: Mapping[str, Sequence[str]]) -> list[str]:
    """Judges, models and conditions in the verdicts that the sweep (and its panels) does
    not list, by kind."""
    unlisted = []
    for column, key in zip(CELL, ("judges", "models", "conditions"), strict=True):
        listed = [*sweep[key], *sweep.get("panels", ())] if key == "judges" else sweep[key]
        names = [n for n in verdicts[column].unique().sort() if n not in listed]
        if names:
            unlisted.append(f"{column} {', '.join(names)} (not in sweep.{key})")
    return unlisted


def _rank(order: Sequence[str], name: str) -> tuple[int, str]:
    return (order.index(name), "") if name in order else (len(order), name)


def configured(group: str, name: str) -> Any | None:
    """`conf/<group>/<name>.yaml`, checked; None for a name without one (a published run's
    judge or model whose config is gone)."""
    return option(group, name) if option_file(group, name).is_file() else None


def judge_kinds(names: Iterable[str]) -> dict[str, str]:
    """Each judge's kind from `conf/judge/<name>.yaml` ("llm" for one without a config)."""
    return {name: getattr(configured("judge", name), "kind", "llm") for name in names}


def config_labels(group: str, names: Iterable[str]) -> dict[str, str]:
    """Display labels from `conf/<group>/<name>.yaml`'s `label`, a test double's marked; a
    name without a config file, or without a label, keeps its name."""
    labels = {}
    for name in names:
        config = configured(group, name)
        labels[name] = (
            name if config is None else display_label(config.label or name, _test_double(config))
        )
    return labels


def _test_double(config: Any) -> bool:
    """Whether a model's or judge's numbers are a test double's: its config says so, or it
    is a panel with a test-double member (panels of panels are refused: one level is all)."""
    if getattr(config, "test_double", False):
        return True
    members = getattr(config, "members", None) or ()
    return any(getattr(configured("judge", member), "test_double", False) for member in members)
