"""How a stage is called: each stage module's `run(settings, layout, cell)` takes its settings
from a `Settings` (the composed config here; a published run's record in reproduce) and its
cell by the names its `CELL` lists, each list its cells expand over (dvc.yaml's matrix keys)
with the command-line key that names it; `run_stage` is the command that gives them from Hydra.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import ModuleType
from typing import Any, Protocol

from omegaconf import DictConfig

from losona.core.config import chosen, option, plain
from losona.core.errors import LosonaError
from losona.core.layout import RunLayout

# A cell of a stage: the value of each list it expands over ({"model": ..., ...}).
Cell = Mapping[str, str]


class Settings(Protocol):
    """A run's settings as the stages take them."""

    def group(self, group: str) -> Any:
        """A settings node, checked: `sweep` (plain lists), `sampling`, `aggregate`, ..."""

    def option(self, group: str, name: str) -> Any:
        """One named option of `model`, `judge` or `condition`, checked."""


class ComposedSettings:
    """The settings a stage's command was composed with: conf/ and its overrides."""

    def __init__(self, cfg: DictConfig) -> None:
        self.cfg = cfg

    def group(self, group: str) -> Any:
        return Sweep(self.cfg.sweep) if group == "sweep" else chosen(self.cfg, group)

    def option(self, group: str, name: str) -> Any:
        # The option chosen on the command line keeps its overrides (judge.model.params...).
        node = self.cfg.get(group)
        if node is not None and node.get("name") == name:
            return chosen(self.cfg, group)
        return option(group, name)


class Sweep(Mapping[str, Any]):
    """The sweep's lists, each resolved as it is read: a stage that reads only the
    conditions (render) names a missing condition list, not another list it never reads."""

    def __init__(self, node: DictConfig) -> None:
        self.node = node

    def __getitem__(self, key: str) -> Any:
        return plain(self.node[key])

    def __iter__(self) -> Iterator[str]:
        return iter(self.node)

    def __len__(self) -> int:
        return len(self.node)


def cell_of(cfg: DictConfig, stage: str, names: Mapping[str, str]) -> dict[str, str]:
    """The cell a command names: each key of the stage's CELL by its command-line key."""
    cell = {}
    for key, flag in names.items():
        node = cfg.get(flag.lstrip("+"))
        if node is None:
            example = "naive" if flag == "condition" else "NAME"
            raise LosonaError(f"{stage} needs one {key}, e.g. {flag}={example}")
        if isinstance(node, DictConfig):
            node = chosen(cfg, flag).name  # a model, judge or condition named as its file is
        cell[key] = str(node)
    return cell


def run_stage(stage: ModuleType, cfg: DictConfig) -> None:
    """Run the stage module `stage` (losona/pipeline/<name>.py) as its command does."""
    name = stage.__name__.rsplit(".", 1)[-1]
    layout = RunLayout(chosen(cfg, "paths"))
    stage.run(ComposedSettings(cfg), layout, cell_of(cfg, name, stage.CELL))
