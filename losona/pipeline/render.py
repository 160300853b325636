"""The render stage as a function: every scenario's subject prompt under each condition."""

from __future__ import annotations

from collections.abc import Sequence

from omegaconf import DictConfig

from losona.core.config import chosen
from losona.core.contracts import SCENARIO_SCHEMA
from losona.core.files import read_parquet, write_parquet
from losona.core.formatting import counted
from losona.core.layout import RunLayout
from losona.pipeline.command import Cell, ComposedSettings, Settings
from losona.prompts.render import render_table


def run_render(conditions: Sequence[str], layout: RunLayout) -> None:
    """render: the prompt table of fetch's scenarios under `conditions`."""
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    prompts = render_table(scenarios, conditions)
    write_parquet(prompts, layout.prompts)  # made a chunk at a time as it is written
    print(
        f"render: {counted(prompts.height, 'prompt')} ({counted(len(conditions), 'condition')}) "
        f"-> {layout.prompts}"
    )


def run_render_command(cfg: DictConfig) -> None:
    """render as its command line asks: the condition named, or every condition of the
    sweep (each must have its config, not only a template)."""
    layout = RunLayout(chosen(cfg, "paths"))
    if "condition" in cfg:
        run_render([chosen(cfg, "condition").name], layout)
    else:
        run(ComposedSettings(cfg), layout, {})


CELL: dict[str, str] = {}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    conditions = settings.group("sweep")["conditions"]
    run_render([settings.option("condition", name).name for name in conditions], layout)
