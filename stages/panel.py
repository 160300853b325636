"""panel: a judge panel's verdicts and validity controls, from its members', no model call.

python stages/panel.py judge=offline_panel     # after panel_votes (dvc repro runs both)

Reads paths.panel_votes_dir/<panel>/ (each member's verdicts and controls, copied there by
panel_votes) and writes, in the verdict contract, data/verdicts/<panel>/<model>/<condition>.parquet
for every cell of the sweep, data/judge_controls/<panel>.parquet and
reports/judge_controls/<panel>.json: aggregate, audit and the report take the panel for
one more judge. How the votes combine: losona/judges/panels.py and docs/judges.md.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import panel
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(panel, cfg)


if __name__ == "__main__":
    launch(main)
