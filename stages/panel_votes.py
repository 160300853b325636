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

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import panel_votes
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(panel_votes, cfg)


if __name__ == "__main__":
    launch(main)
