"""The calls stage as a function: every model call a run's tables were built from, merged
into one file published with the run (docs/reproducing.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.core.layout import DynamicSweep, RunLayout
from losona.pipeline.command import Cell, Settings
from losona.provenance.call_files import merge_calls


def run_calls(layout: RunLayout, sweep: Mapping[str, Sequence[str]], dynamic: DynamicSweep) -> None:
    """calls: every cell's calls file of the sweep (the dynamic turn's too, none while it is
    off) merged into one, a row per call, sorted by key."""
    files = layout.sweep_calls(sweep) + layout.dynamic_call_files(dynamic)
    calls = merge_calls(files)
    if layout.calls is None:
        raise LosonaError("calls needs a file to write: paths.calls is null")
    write_parquet(calls, layout.calls)
    print(f"calls: {calls.height} calls from {len(files)} files -> {layout.calls}")


CELL: dict[str, str] = {}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_calls(layout, settings.group("sweep"), settings.group("dynamic"))
