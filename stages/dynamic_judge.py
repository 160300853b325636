"""dynamic_judge: the same judge scores one cell's second replies, in the second turn's chat.

python stages/dynamic_judge.py judge=lexicon model=smollm2 condition=naive

Reads the cell's dynamic prompts and responses (data/dynamic/<judge>/...) and writes
data/dynamic/<judge>/verdicts/<model>/<condition>.parquet.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import dynamic_judge
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(dynamic_judge, cfg)


if __name__ == "__main__":
    launch(main)
