"""The dynamic_aggregate stage as a function: one judge's second-turn metrics, tables, figure
and DVC metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from losona.core.config import AggregateSettings
from losona.core.contracts import SCENARIO_SCHEMA, subset_note
from losona.core.files import read_parquet
from losona.core.layout import RunLayout
from losona.dynamic.aggregate import FIGURE, aggregate_dynamic, presentation_of
from losona.dynamic.cells import load_cells
from losona.dynamic.plots import draw_recovery
from losona.dynamic.settings import DynamicSettings
from losona.figures import write_figures
from losona.pipeline.command import Cell, Settings


def run_dynamic_aggregate(
    settings: DynamicSettings,
    layout: RunLayout,
    judge: str,
    bootstrap: AggregateSettings,
    sweep: Mapping[str, Sequence[str]],
) -> None:
    """dynamic_aggregate: every cell of the dynamic sweep under one first-turn judge,
    reported in reports/dynamic/<judge>/ with its recovery figure; its cells must be the
    first turn's (`sweep`)."""
    settings.check_sweep(sweep, where=DynamicSettings.FILE)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    cells = load_cells(layout, judge, settings.models, settings.conditions)
    reports = aggregate_dynamic(
        cells,
        scenarios,
        judge=judge,
        bootstrap=bootstrap,
        presentation=presentation_of(settings.models, settings.conditions, [judge]),
    )
    out = layout.dynamic_reports(judge)
    reports.write(out)
    figure = draw_recovery(
        reports["results.csv"], FIGURE, reports.confidence, subset_note(scenarios)
    )
    write_figures([figure], out)
    print(
        f"dynamic_aggregate {judge}: {len(cells)} model x condition cells over "
        f"{scenarios.height} scenarios -> {out}/"
    )


CELL: dict[str, str] = {"judge": "judge"}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_dynamic_aggregate(
        settings.group("dynamic"),
        layout,
        cell["judge"],
        settings.group("aggregate"),
        settings.group("sweep"),
    )
