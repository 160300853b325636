"""judge: score one subject model's responses under one condition with one judge.

python stages/judge.py condition=naive                                # the default judge and model
python stages/judge.py judge=gemini_pro model=claude_opus condition=style_adaptation

Reads data/responses/<model>/<condition>.parquet (never resamples) and writes
data/verdicts/<judge>/<model>/<condition>.parquet.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import judge
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(judge, cfg)


if __name__ == "__main__":
    launch(main)
