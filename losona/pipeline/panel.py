"""The panel stage as a function: a judge panel's verdicts and validity controls, combined
from its members' votes with no model call.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence

from losona.core.config import JudgeConfig, judge_kind_settings
from losona.core.contracts import CONTROL_SCHEMA, VERDICT_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import read_parquet, write_json, write_parquet
from losona.core.layout import RunLayout
from losona.judges.panels import combine_controls, combine_verdicts, panel_description
from losona.judges.run import control_summary, status_counts
from losona.pipeline.command import Cell, Settings


def run_panel(panel: JudgeConfig, layout: RunLayout, judges: Sequence[str]) -> None:
    """panel: the panel's verdicts on every cell of the sweep, its controls and their summary,
    from the votes panel_votes copied; `judges` are the sweep's, which must hold its members."""
    if not judge_kind_settings(panel.kind).combines:
        raise LosonaError(
            f"judge '{panel.name}' is of kind {panel.kind}, not a panel: judge it with "
            "python stages/judge.py"
        )
    members = panel.members or ()  # a panel's config names them (config/schemas.py)
    outside = [m for m in members if m not in judges]
    if outside:
        raise LosonaError(
            f"panel '{panel.name}': member '{outside[0]}' is not in sweep.judges {judges} "
            "(params.yaml): a panel combines the verdicts of the run's judges; add it there"
        )
    verdicts = combine_verdicts(
        panel,
        {
            m: read_parquet(layout.panel_votes(panel.name, m), VERDICT_SCHEMA, "panel_votes")
            for m in members
        },
    )
    controls = combine_controls(
        panel,
        {
            m: read_parquet(
                layout.panel_control_votes(panel.name, m), CONTROL_SCHEMA, "panel_votes"
            )
            for m in members
        },
    )
    # Every table is built (and checked) before anything is written.
    out = layout.judge_verdicts(panel.name)
    shutil.rmtree(out, ignore_errors=True)  # cells the sweep no longer has go with the run
    for (model, condition), cell in verdicts.group_by(
        "subject_model", "condition", maintain_order=True
    ):
        cell_out = layout.verdicts(panel.name, str(model), str(condition))
        write_parquet(cell.sort("scenario_id", "trial"), cell_out)
    write_parquet(controls, layout.controls(panel.name))
    write_json({panel.name: control_summary(controls)}, layout.controls_summary(panel.name))
    print(
        f"panel {panel.name} ({panel_description(panel)}): {verdicts.height} verdicts, "
        f"{status_counts(verdicts)} -> {out}/; controls: {status_counts(controls)}"
    )


CELL: dict[str, str] = {"panel": "judge"}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    panel = settings.option("judge", cell["panel"])
    run_panel(panel, layout, settings.group("sweep")["judges"])
