"""The provenance stage as a function: what a run rests on, in reports/provenance.json."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from losona.core.config import AggregateSettings, DatasetConfig, load_option, plain
from losona.core.contracts import SCENARIO_SCHEMA
from losona.core.files import read_parquet, write_json
from losona.core.layout import RunLayout
from losona.pipeline.command import Cell, Settings
from losona.provenance.record import provenance


def run_provenance(
    layout: RunLayout,
    sweep: Mapping[str, Sequence[str]],
    dataset: DatasetConfig,
    trials: int,
    bootstrap: AggregateSettings,
) -> None:
    """provenance: the run's packages, scenario set, configs as their files say them (never a
    key), prompt hashes, sweep and policies, in one JSON file."""
    record = provenance(
        scenarios=read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch"),
        dataset=dataset.settings(),
        sweep=sweep,
        models={name: plain(load_option("model", name)) for name in sweep["models"]},
        judges={
            name: plain(load_option("judge", name)) for name in [*sweep["judges"], *sweep["panels"]]
        },
        trials=trials,
        bootstrap=bootstrap,
    )
    write_json(record, layout.provenance)
    print(f"provenance -> {layout.provenance}")


CELL: dict[str, str] = {}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_provenance(
        layout,
        settings.group("sweep"),
        settings.group("dataset"),
        settings.group("sampling").trials,
        settings.group("aggregate"),
    )
