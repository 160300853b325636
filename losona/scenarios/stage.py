"""The fetch stage as a function: the configured scenario set, every row checked, written."""

from __future__ import annotations

from losona.config import DatasetConfig
from losona.files import write_parquet
from losona.formatting import counted
from losona.layout import RunLayout
from losona.scenarios.datasets import fetch_scenarios


def run_fetch(dataset: DatasetConfig, layout: RunLayout, ids_from: str = "") -> None:
    """fetch: the scenario table of `dataset` (`ids_from` names where its scenario_ids list
    came from, for error messages)."""
    scenarios = fetch_scenarios(dataset, ids_from=ids_from)
    write_parquet(scenarios, layout.scenarios)
    source = scenarios["source"][0]
    print(f"fetch: {counted(scenarios.height, 'scenario')} from {source} -> {layout.scenarios}")
