"""The config stage as a function: a model or judge option of the sweep as the run uses it,
checked, in a file of its own (data/configs/<group>/<name>.json).
"""

from __future__ import annotations

from collections.abc import Callable

from omegaconf import DictConfig

from losona.core.config import JudgeConfig, ModelSpec, Sources, chosen, config_record
from losona.core.errors import LosonaError
from losona.core.files import write_json
from losona.core.layout import RunLayout
from losona.pipeline.command import Cell, Settings


def run_config(config: ModelSpec | JudgeConfig, layout: RunLayout) -> None:
    """config: one checked model or judge option, with its defaults and without a password,
    as JSON in its group's folder."""
    group = "model" if isinstance(config, ModelSpec) else "judge"
    out = layout.config(group, config.name)
    write_json(config_record(config), out)
    print(f"config: {group} {config.name} -> {out}")


def run_config_stage(cfg: DictConfig) -> None:
    """config: each option of the composed config whose group was named on the command line
    (both groups have defaults, so only those named are meant)."""
    named = {override.split("=", 1)[0] for override in Sources.of_hydra().overrides}
    groups = [group for group in ("model", "judge") if group in named]
    if not groups:
        raise LosonaError("config needs an option to record: model=<name> or judge=<name>")
    layout = RunLayout(chosen(cfg, "paths"))
    for group in groups:
        run_config(chosen(cfg, group), layout)


def configured(group: str, key: str) -> Callable[[Settings, RunLayout, Cell], None]:
    """The config stage of `group` on the option a cell names by `key`."""
    return lambda settings, layout, cell: run_config(settings.option(group, cell[key]), layout)
