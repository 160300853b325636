"""panel_votes: one judge's verdicts and validity controls, as a panel reads them.

python stages/panel_votes.py judge=offline_panel +member=lexicon

A panel combines judges' verdicts with no model call (losona/judges/panels.py). dvc.yaml cannot
list a panel's members as its dependencies (a list read from conf/judge/<panel>.yaml), so
this stage runs for each panel x judge of the sweep: for a member it copies the judge's
verdicts on the sweep's cells and its control table to paths.panel_votes_dir/<panel>/, for
any other judge it writes empty tables. The panel stage then depends on that one folder.
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen, judge_kind_settings, plain
from losona.contracts import CONTROL_SCHEMA, table
from losona.errors import LosonaError
from losona.files import read_parquet, write_parquet
from losona.judges.panels import member_verdicts
from losona.layout import RunLayout


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    panel = chosen(cfg, "judge")
    if not judge_kind_settings(panel.kind).combines:
        raise LosonaError(f"judge '{panel.name}' is of kind {panel.kind}, not a panel")
    if "member" not in cfg:
        raise LosonaError("panel_votes needs the judge whose votes to copy: +member=NAME")
    member = str(cfg.member)
    sweep = plain(cfg.sweep)
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


if __name__ == "__main__":
    launch(main)
