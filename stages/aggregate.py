"""aggregate: the paper's metrics from every verdict file, as report tables and DVC metrics.

python stages/aggregate.py
python stages/aggregate.py aggregate.seed=1              # another bootstrap seed
python stages/aggregate.py paths.verdicts_dir=runs/v paths.reports_dir=runs/reports
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.core.config import chosen, plain
from losona.core.layout import RunLayout
from losona.pipeline.aggregate import run_aggregate


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    run_aggregate(chosen(cfg, "aggregate"), layout, plain(cfg.sweep))


if __name__ == "__main__":
    launch(main)
