"""dynamic_judge: the same judge scores one cell's second replies, in the second turn's chat.

python stages/dynamic_judge.py judge=lexicon model=smollm2 condition=naive

Reads the cell's dynamic prompts and responses (data/dynamic/<judge>/...) and writes
data/dynamic/<judge>/verdicts/<model>/<condition>.parquet.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.core.config import chosen
from losona.core.errors import LosonaError
from losona.core.layout import RunLayout
from losona.pipeline.dynamic_judge import run_dynamic_judge


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    if "condition" not in cfg:
        raise LosonaError(
            "dynamic_judge needs one cell, e.g. judge=lexicon model=smollm2 condition=naive"
        )
    run_dynamic_judge(chosen(cfg, "judge"), layout, chosen(cfg, "model"), chosen(cfg, "condition"))


if __name__ == "__main__":
    launch(main)
