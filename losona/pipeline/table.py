"""The pipeline's stages in one table, in dvc.yaml's order: each stage's function, the config
groups its command reads, whether it calls a model, the sweep lists its cells expand over,
and where its outputs go (as the layout places them). tests/test_layout.py holds
dvc.yaml's stages, commands, matrices and outputs to it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from losona.audit.files import AUDIT_FILES
from losona.core.layout import RunLayout
from losona.dynamic.aggregate import CSV_FILES as DYNAMIC_CSV_FILES
from losona.dynamic.aggregate import FIGURE as DYNAMIC_FIGURE
from losona.pipeline import (
    aggregate,
    audit,
    calls,
    config,
    dynamic_aggregate,
    dynamic_judge,
    dynamic_render,
    dynamic_sample,
    fetch,
    judge,
    judge_controls,
    panel,
    panel_votes,
    plot,
    preflight,
    provenance,
    render,
    sample,
)
from losona.pipeline.command import Cell, Settings
from losona.results.aggregate import CSV_FILES, TABLE1
from losona.results.bundle import METRICS

Places = Callable[[RunLayout, Cell], list[Path]]


@dataclass(frozen=True)
class Stage:
    """One stage of dvc.yaml: what runs it, what it reads and where it writes."""

    name: str
    # The stage on a cell with the run's settings; preflight's reads the whole composed config,
    # so only its command runs it.
    run: Callable[[Settings, RunLayout, Cell], None] | None
    groups: tuple[str, ...]  # the config groups its command reads
    calls_model: bool
    # The lists its cells expand over (dvc.yaml's matrix keys): `panel` is conf/panels.yaml's,
    # a dynamic stage's are the dynamic node's, the others the sweep's.
    cells: tuple[str, ...]
    outputs: Places
    metrics: Places = lambda layout, cell: []
    script: str = ""  # stages/<script>.py, when it is not the stage's name
    dynamic: bool = False  # its cells expand over the dynamic node's lists, not the sweep's

    @property
    def command(self) -> str:
        """The script dvc.yaml runs it with."""
        return f"stages/{self.script or self.name}.py"

    def cells_of(self, settings: Settings) -> list[dict[str, str]]:
        """Every cell it runs on with `settings`, in the order dvc.yaml expands its matrix."""
        lists = settings.group("dynamic").model_dump() if self.dynamic else settings.group("sweep")
        names = [lists[f"{key}s"] for key in self.cells]
        return [dict(zip(self.cells, cell, strict=True)) for cell in itertools.product(*names)]


def _cell(cell: Cell) -> tuple[str, str, str]:
    """A first-turn or dynamic cell's judge, model and condition."""
    return cell["judge"], cell["model"], cell["condition"]


def _config(group: str, key: str) -> Places:
    return lambda layout, cell: [layout.config(group, cell[key])]


STAGES: tuple[Stage, ...] = (
    Stage(
        "preflight",
        None,
        preflight.RUN_GROUPS,
        False,
        (),
        lambda layout, cell: [layout.run_checked],
    ),
    Stage("fetch", fetch.run, ("dataset", "paths"), False, (), lambda lo, c: [lo.scenarios]),
    Stage("render", render.run, ("condition", "paths"), False, (), lambda lo, c: [lo.prompts]),
    Stage(
        "model_config",
        config.configured("model", "model"),
        ("model", "paths"),
        False,
        ("model",),
        _config("model", "model"),
        script="config",
    ),
    Stage(
        "judge_config",
        config.configured("judge", "judge"),
        ("judge", "paths"),
        False,
        ("judge",),
        _config("judge", "judge"),
        script="config",
    ),
    Stage(
        "panel_config",
        config.configured("judge", "panel"),
        ("judge", "paths"),
        False,
        ("panel",),
        _config("judge", "panel"),
        script="config",
    ),
    Stage(
        "sample",
        sample.run,
        ("condition", "model", "paths", "sampling"),
        True,
        tuple(sample.CELL),
        lambda lo, c: [
            lo.responses(c["model"], c["condition"]),
            lo.sample_calls(c["model"], c["condition"]),
        ],
    ),
    Stage(
        "judge",
        judge.run,
        ("condition", "judge", "model", "paths"),
        True,
        tuple(judge.CELL),
        lambda lo, c: [lo.verdicts(*_cell(c)), lo.judge_calls(*_cell(c))],
    ),
    Stage(
        "judge_controls",
        judge_controls.run,
        ("judge", "judge_controls", "paths"),
        True,
        tuple(judge_controls.CELL),
        lambda lo, c: [lo.controls(c["judge"]), lo.controls_calls(c["judge"])],
        lambda lo, c: [lo.controls_summary(c["judge"])],
    ),
    Stage(
        "panel_votes",
        panel_votes.run,
        ("judge", "paths"),
        False,
        tuple(panel_votes.CELL),
        lambda lo, c: [
            lo.panel_votes(c["panel"], c["judge"]),
            lo.panel_control_votes(c["panel"], c["judge"]),
        ],
    ),
    Stage(
        "panel",
        panel.run,
        ("judge", "paths"),
        False,
        tuple(panel.CELL),
        lambda lo, c: [lo.judge_verdicts(c["panel"]), lo.controls(c["panel"])],
        lambda lo, c: [lo.controls_summary(c["panel"])],
    ),
    Stage(
        "aggregate",
        aggregate.run,
        ("aggregate", "paths"),
        False,
        (),
        lambda lo, c: [lo.reports_folder / name for name in [*CSV_FILES, TABLE1]],
        lambda lo, c: [lo.reports_folder / METRICS],
    ),
    Stage(
        "dynamic_render",
        dynamic_render.run,
        ("condition", "dataset", "dynamic", "judge", "model", "paths", "sampling"),
        True,
        tuple(dynamic_render.CELL),
        lambda lo, c: [lo.dynamic_prompts(*_cell(c)), lo.dynamic_calls("dynamic_group", *_cell(c))],
        dynamic=True,
    ),
    Stage(
        "dynamic_sample",
        dynamic_sample.run,
        ("condition", "judge", "model", "paths", "sampling"),
        True,
        tuple(dynamic_sample.CELL),
        lambda lo, c: [
            lo.dynamic_responses(*_cell(c)),
            lo.dynamic_calls("dynamic_sample", *_cell(c)),
        ],
        dynamic=True,
    ),
    Stage(
        "dynamic_judge",
        dynamic_judge.run,
        ("condition", "judge", "model", "paths"),
        True,
        tuple(dynamic_judge.CELL),
        lambda lo, c: [
            lo.dynamic_verdicts(*_cell(c)),
            lo.dynamic_calls("dynamic_judge", *_cell(c)),
        ],
        dynamic=True,
    ),
    Stage(
        "dynamic_aggregate",
        dynamic_aggregate.run,
        ("aggregate", "dynamic", "judge", "paths"),
        False,
        tuple(dynamic_aggregate.CELL),
        lambda lo, c: [
            lo.dynamic_reports(c["judge"]) / name
            for name in [
                *DYNAMIC_CSV_FILES,
                *(f"{DYNAMIC_FIGURE}.{kind}" for kind in ("png", "svg", "csv")),
            ]
        ],
        lambda lo, c: [lo.dynamic_reports(c["judge"]) / METRICS],
        dynamic=True,
    ),
    Stage(
        "provenance",
        provenance.run,
        ("aggregate", "dataset", "paths", "sampling"),
        False,
        (),
        lambda lo, c: [lo.provenance],
    ),
    Stage(
        "audit",
        audit.run,
        ("aggregate", "audit", "judge", "paths"),
        False,  # unless its opt-in determinism check judges again
        (),
        lambda lo, c: [lo.audit_folder / name for name in AUDIT_FILES],
        lambda lo, c: [lo.audit_folder / METRICS],
    ),
    Stage(
        "plot",
        plot.run,
        ("dynamic", "paths"),
        False,
        (),
        lambda lo, c: [lo.figures_folder, lo.report_page],
    ),
    Stage(
        "calls",
        calls.run,
        ("dynamic", "paths"),
        False,
        (),
        lambda lo, c: [lo.calls] if lo.calls else [],
    ),
)
