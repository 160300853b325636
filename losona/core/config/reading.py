"""Reading the composed config: a group's node checked (`chosen`), one option on its own
(`option`), and, outside a stage, the config and its paths with overrides (`compose_config`,
`compose_paths`)."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from losona.core.config.checker import check
from losona.core.config.loading import CONF_DIR, load_option, option_file
from losona.core.config.origins import GLOBAL_NODES, Sources
from losona.core.config.schemas import Paths
from losona.core.config.values import Schema
from losona.core.errors import LosonaError


class Schemas(Mapping[str, type[Schema]]):
    """Each group's schema class, found by `module:Class` and imported when first asked for,
    so that losona.core.config reaches no stage family's settings: editing the dynamic
    turn's, say, reruns no first-turn stage."""

    def __init__(self, where: Mapping[str, str]) -> None:
        self._where = dict(where)

    def module(self, group: str) -> str:
        """The dotted name of the module that defines `group`'s schema."""
        return self._where[group].partition(":")[0]

    def __getitem__(self, group: str) -> type[Schema]:
        module, _, name = self._where[group].partition(":")
        schema: type[Schema] = getattr(importlib.import_module(module), name)
        return schema

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


# What each group's schema is, and where its node sits in the composed config: a group
# whose files are `@package _global_` contributes top-level nodes.
GROUPS = Schemas(
    {
        "dataset": "losona.core.config.schemas:DatasetConfig",
        "model": "losona.core.config.schemas:ModelSpec",
        "judge": "losona.core.config.schemas:JudgeConfig",
        "condition": "losona.core.config.schemas:ConditionConfig",
        "sampling": "losona.core.config.schemas:SamplingSettings",
        "aggregate": "losona.core.config.schemas:AggregateSettings",
        "audit": "losona.audit.settings:AuditSettings",
        "generation": "losona.generation.settings:GenerationSettings",
        "paths": "losona.core.config.schemas:Paths",
        "dynamic": "losona.dynamic.settings:DynamicSettings",
        "judge_controls": "losona.core.config.schemas:ControlsSettings",
    }
)
# Options whose `name` names their outputs: it must be the file's name.
NAMED = ("dataset", "model", "judge", "condition")


def chosen(cfg: DictConfig, group: str) -> Any:
    """The composed config's node of `group`, checked; errors name its file or override."""
    schema = GROUPS[group]
    if group in GLOBAL_NODES:
        node: Any = {part: cfg[part] for part in GLOBAL_NODES[group] if part in cfg}
        key = ""
    else:
        if group not in cfg or cfg[group] is None:
            raise LosonaError(f"no {group} chosen: give one on the command line, e.g. {group}=...")
        node, key = cfg[group], group
    sources = Sources.of_hydra()
    checked = check(schema, node, origin=sources.where, key=key)
    if group in NAMED:
        _named_after_file(
            checked, group, sources.choices.get(group), sources.where(f"{group}.name")
        )
    return checked


def option(group: str, name: str) -> Any:
    """One option of a named group read on its own (conf/<group>/<name>.yaml), checked."""
    where = str(option_file(group, name))
    checked = check(GROUPS[group], load_option(group, name), origin=where, key=group)
    _named_after_file(checked, group, name, where)
    return checked


def _named_after_file(checked: Any, group: str, option_name: str | None, where: str) -> None:
    # The name names the option's output files and is how other configs refer to it.
    if option_name is not None and checked.name != option_name:
        raise LosonaError(
            f"{where}: '{group}.name': expected the file's name '{option_name}', "
            f"found {checked.name!r}"
        )


def compose_config(overrides: Sequence[str]) -> DictConfig:
    """This repository's config with command-line overrides, composed outside a stage."""
    if not CONF_DIR.is_dir():
        raise LosonaError(
            f"no {CONF_DIR}/ folder here: run python -m losona.reproduce from the "
            "repository root of the run to check"
        )
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR.resolve()), version_base="1.3"):
            return compose(config_name="config", overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as exc:
        raise LosonaError(f"bad override: {exc}") from None


def compose_paths(overrides: Sequence[str], cfg: DictConfig | None = None) -> Paths:
    """conf/paths as this repository's config gives it (`cfg`, composed with `overrides`)."""
    cfg = compose_config(overrides) if cfg is None else cfg
    # Composed without a Hydra run, so the file is the chosen option's, overrides aside.
    chosen_paths = next(
        (o.split("=", 1)[1] for o in overrides if o.startswith("paths=")), "default"
    )
    return Paths.from_config(cfg.paths, origin=str(option_file("paths", chosen_paths)))
