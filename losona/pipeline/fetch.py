"""The fetch stage as a function: the configured scenario set, every row checked, written."""

from __future__ import annotations

from collections.abc import Callable

from losona.core.config import DatasetConfig, origin_of
from losona.core.files import write_parquet
from losona.core.formatting import counted
from losona.core.layout import RunLayout
from losona.pipeline.command import Cell, Settings
from losona.scenarios.datasets import fetch_scenarios


def run_fetch(
    dataset: DatasetConfig, layout: RunLayout, origin: Callable[[str], str] | None = None
) -> None:
    """fetch: the scenario table of `dataset` (`origin` names where the value at a dotted key
    came from, for error messages)."""
    scenarios = fetch_scenarios(dataset, origin=origin)
    write_parquet(scenarios, layout.scenarios)
    source = scenarios["source"][0]
    print(f"fetch: {counted(scenarios.height, 'scenario')} from {source} -> {layout.scenarios}")


CELL: dict[str, str] = {}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_fetch(settings.group("dataset"), layout, origin=origin_of)
