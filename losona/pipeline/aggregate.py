"""The aggregate stage as a function: the paper's metrics from every verdict file."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import polars as pl

from losona.core.config import AggregateSettings
from losona.core.contracts import SCENARIO_SCHEMA
from losona.core.files import read_parquet
from losona.core.formatting import counted
from losona.core.layout import RunLayout
from losona.judges.verdicts import load_verdicts
from losona.pipeline.command import Cell, Settings
from losona.results.aggregate import aggregate, judge_evidence
from losona.results.presentation import judge_kinds, outside_sweep, presentation_for


def run_aggregate(
    bootstrap: AggregateSettings, layout: RunLayout, sweep: Mapping[str, Sequence[str]]
) -> None:
    """aggregate: the report tables, Table 1 and the DVC metrics, in the sweep's order."""
    verdicts = load_verdicts(layout.verdicts_folder)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    for name in outside_sweep(verdicts, sweep):
        # Verdict files outlive a sweep that drops them: report them, and say so.
        print(
            f"note: {layout.verdicts_folder} has verdicts for {name}; reported too", file=sys.stderr
        )
    reports = aggregate(
        verdicts,
        scenarios,
        bootstrap=bootstrap,
        presentation=presentation_for(verdicts, sweep),
        judges=judge_evidence(layout, judge_kinds(verdicts["judge"].unique())),
    )
    reports.write(layout.reports_folder)
    results = reports["results.csv"]
    unscored = counted(int(results["unscored_trials"].sum()), "unscored trial")
    print(
        f"aggregate: {counted(results.height, 'model x condition row')} over "
        f"{counted(scenarios.height, 'scenario')}, {unscored} -> {layout.reports_folder}/"
    )
    for row in results.filter(pl.col("degenerate").is_not_null()).iter_rows(named=True):
        print(
            f"warning: judge {row['judge']}'s verdicts on {row['subject_model']}/"
            f"{row['condition']} are degenerate ({row['degenerate']}): its numbers there "
            "measure the judge, not the model",
            file=sys.stderr,
        )


CELL: dict[str, str] = {}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_aggregate(settings.group("aggregate"), layout, settings.group("sweep"))
