"""The panel_votes stage as a function: one judge's verdicts and validity controls, copied
where a panel reads them (empty for a judge that is not its member).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from losona.core.config import JudgeConfig, judge_kind_settings
from losona.core.contracts import CONTROL_SCHEMA, table
from losona.core.errors import LosonaError
from losona.core.files import read_parquet, write_parquet
from losona.core.layout import RunLayout
from losona.judges.panels import member_verdicts
from losona.pipeline.command import Cell, Settings


def run_panel_votes(
    panel: JudgeConfig,
    layout: RunLayout,
    member: str | None,
    sweep: Mapping[str, Sequence[str]],
) -> None:
    """panel_votes: `member`'s verdicts on the sweep's cells and its controls, in the panel's
    votes folder; for a judge that is not a member, empty tables. `member` None (not given on
    the command line) is refused, after the panel itself is checked."""
    if not judge_kind_settings(panel.kind).combines:
        raise LosonaError(f"judge '{panel.name}' is of kind {panel.kind}, not a panel")
    if member is None:
        raise LosonaError("panel_votes needs the judge whose votes to copy: +member=NAME")
    out = layout.panel_votes_folder(panel.name)
    if member in (panel.members or ()):
        verdicts = member_verdicts(layout, member, sweep["models"], sweep["conditions"])
        controls = read_parquet(layout.controls(member), CONTROL_SCHEMA, "judge_controls")
        said = f"{verdicts.height} verdicts and {controls.height} controls of member '{member}'"
    else:
        verdicts = member_verdicts(layout, member, [], [])
        controls = table([], CONTROL_SCHEMA, sort_by=[])
        said = f"judge '{member}' is not a member: no votes"
    write_parquet(verdicts, layout.panel_votes(panel.name, member))
    write_parquet(controls, layout.panel_control_votes(panel.name, member))
    print(f"panel_votes {panel.name}: {said} -> {out}/")


CELL: dict[str, str] = {"panel": "judge", "judge": "+member"}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    panel = settings.option("judge", cell["panel"])
    run_panel_votes(panel, layout, cell["judge"], settings.group("sweep"))
