"""judge: score one subject model's responses under one condition with one judge.

python stages/judge.py condition=naive                                # the default judge and model
python stages/judge.py judge=gemini_pro model=claude_opus condition=style_adaptation

Reads data/responses/<model>/<condition>.parquet (never resamples) and writes
data/verdicts/<judge>/<model>/<condition>.parquet.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.core.config import chosen
from losona.core.errors import LosonaError
from losona.core.layout import RunLayout
from losona.pipeline.judge import run_judge


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    if "condition" not in cfg:
        raise LosonaError("judge needs one condition, e.g. condition=naive")
    run_judge(chosen(cfg, "judge"), layout, chosen(cfg, "model"), chosen(cfg, "condition"))


if __name__ == "__main__":
    launch(main)
