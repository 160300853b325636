"""plot: the paper's figures and the self-contained HTML report, from aggregate's tables,
the judge audit's (reports/audit/), each cell's calls (data/calls/) and, when the dynamic
extension is on, its section from reports/dynamic/.

python stages/plot.py
python stages/plot.py paths.reports_dir=runs/reports paths.figures_dir=runs/reports/figures
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import plot
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(plot, cfg)


if __name__ == "__main__":
    launch(main)
