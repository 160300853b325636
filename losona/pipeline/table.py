"""The pipeline's stages in one table, in dvc.yaml's order: each stage's function, the config
groups its command reads, whether it calls a model, the sweep lists its cells expand over,
and where its outputs go (as the layout places them). tests/test_layout.py holds
dvc.yaml's stages, commands, matrices and outputs to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
from losona.results.aggregate import CSV_FILES, TABLE1
from losona.results.bundle import METRICS

# A cell of a stage: the value of each list it expands over ({"model": ..., ...}).
Cell = Mapping[str, str]
Places = Callable[[RunLayout, Cell], list[Path]]


@dataclass(frozen=True)
class Stage:
    """One stage of dvc.yaml: what runs it, what it reads and where it writes."""

    name: str
    function: Callable[..., None]
    groups: tuple[str, ...]  # the config groups its command reads
    calls_model: bool
    # The lists its cells expand over (dvc.yaml's matrix keys): `panel` is conf/panels.yaml's,
    # a dynamic stage's are the dynamic node's, the others the sweep's.
    cells: tuple[str, ...]
    outputs: Places
    metrics: Places = lambda layout, cell: []
    script: str = ""  # stages/<script>.py, when it is not the stage's name

    @property
    def command(self) -> str:
        """The script dvc.yaml runs it with."""
        return f"stages/{self.script or self.name}.py"


def _cell(cell: Cell) -> tuple[str, str, str]:
    """A first-turn or dynamic cell's judge, model and condition."""
    return cell["judge"], cell["model"], cell["condition"]


def _config(group: str, key: str) -> Places:
    return lambda layout, cell: [layout.config(group, cell[key])]


CELL = ("judge", "model", "condition")
STAGES: tuple[Stage, ...] = (
    Stage(
        "preflight",
        preflight.run_preflight,
        preflight.RUN_GROUPS,
        False,
        (),
        lambda layout, cell: [layout.run_checked],
    ),
    Stage("fetch", fetch.run_fetch, ("dataset", "paths"), False, (), lambda lo, c: [lo.scenarios]),
    Stage(
        "render", render.run_render, ("condition", "paths"), False, (), lambda lo, c: [lo.prompts]
    ),
    Stage(
        "model_config",
        config.run_config,
        ("model", "paths"),
        False,
        ("model",),
        _config("model", "model"),
        script="config",
    ),
    Stage(
        "judge_config",
        config.run_config,
        ("judge", "paths"),
        False,
        ("judge",),
        _config("judge", "judge"),
        script="config",
    ),
    Stage(
        "panel_config",
        config.run_config,
        ("judge", "paths"),
        False,
        ("panel",),
        _config("judge", "panel"),
        script="config",
    ),
    Stage(
        "sample",
        sample.run_sample,
        ("condition", "model", "paths", "sampling"),
        True,
        ("model", "condition"),
        lambda lo, c: [
            lo.responses(c["model"], c["condition"]),
            lo.sample_calls(c["model"], c["condition"]),
        ],
    ),
    Stage(
        "judge",
        judge.run_judge,
        ("condition", "judge", "model", "paths"),
        True,
        CELL,
        lambda lo, c: [lo.verdicts(*_cell(c)), lo.judge_calls(*_cell(c))],
    ),
    Stage(
        "judge_controls",
        judge_controls.run_judge_controls,
        ("judge", "judge_controls", "paths"),
        True,
        ("judge",),
        lambda lo, c: [lo.controls(c["judge"]), lo.controls_calls(c["judge"])],
        lambda lo, c: [lo.controls_summary(c["judge"])],
    ),
    Stage(
        "panel_votes",
        panel_votes.run_panel_votes,
        ("judge", "paths"),
        False,
        ("panel", "judge"),
        lambda lo, c: [
            lo.panel_votes(c["panel"], c["judge"]),
            lo.panel_control_votes(c["panel"], c["judge"]),
        ],
    ),
    Stage(
        "panel",
        panel.run_panel,
        ("judge", "paths"),
        False,
        ("panel",),
        lambda lo, c: [lo.judge_verdicts(c["panel"]), lo.controls(c["panel"])],
        lambda lo, c: [lo.controls_summary(c["panel"])],
    ),
    Stage(
        "aggregate",
        aggregate.run_aggregate,
        ("aggregate", "paths"),
        False,
        (),
        lambda lo, c: [lo.reports_folder / name for name in [*CSV_FILES, TABLE1]],
        lambda lo, c: [lo.reports_folder / METRICS],
    ),
    Stage(
        "dynamic_render",
        dynamic_render.run_dynamic_render,
        ("condition", "dataset", "dynamic", "judge", "model", "paths", "sampling"),
        True,
        CELL,
        lambda lo, c: [lo.dynamic_prompts(*_cell(c)), lo.dynamic_calls("dynamic_group", *_cell(c))],
    ),
    Stage(
        "dynamic_sample",
        dynamic_sample.run_dynamic_sample,
        ("condition", "judge", "model", "paths", "sampling"),
        True,
        CELL,
        lambda lo, c: [
            lo.dynamic_responses(*_cell(c)),
            lo.dynamic_calls("dynamic_sample", *_cell(c)),
        ],
    ),
    Stage(
        "dynamic_judge",
        dynamic_judge.run_dynamic_judge,
        ("condition", "judge", "model", "paths"),
        True,
        CELL,
        lambda lo, c: [
            lo.dynamic_verdicts(*_cell(c)),
            lo.dynamic_calls("dynamic_judge", *_cell(c)),
        ],
    ),
    Stage(
        "dynamic_aggregate",
        dynamic_aggregate.run_dynamic_aggregate,
        ("aggregate", "dynamic", "judge", "paths"),
        False,
        ("judge",),
        lambda lo, c: [
            lo.dynamic_reports(c["judge"]) / name
            for name in [
                *DYNAMIC_CSV_FILES,
                *(f"{DYNAMIC_FIGURE}.{kind}" for kind in ("png", "svg", "csv")),
            ]
        ],
        lambda lo, c: [lo.dynamic_reports(c["judge"]) / METRICS],
    ),
    Stage(
        "provenance",
        provenance.run_provenance,
        ("aggregate", "dataset", "paths", "sampling"),
        False,
        (),
        lambda lo, c: [lo.provenance],
    ),
    Stage(
        "audit",
        audit.run_audit,
        ("aggregate", "audit", "judge", "paths"),
        False,  # unless its opt-in determinism check judges again
        (),
        lambda lo, c: [lo.audit_folder / name for name in AUDIT_FILES],
        lambda lo, c: [lo.audit_folder / METRICS],
    ),
    Stage(
        "plot",
        plot.run_plot,
        ("dynamic", "paths"),
        False,
        (),
        lambda lo, c: [lo.figures_folder, lo.report_page],
    ),
    Stage(
        "calls",
        calls.run_calls,
        ("dynamic", "paths"),
        False,
        (),
        lambda lo, c: [lo.calls] if lo.calls else [],
    ),
)
