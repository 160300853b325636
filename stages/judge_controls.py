"""judge_controls: one judge scores every scenario's example compliant and breaching response.

python stages/judge_controls.py                    # the default judge
python stages/judge_controls.py judge=gemini_pro

Writes data/judge_controls/<judge>.parquet (one verdict per example) and
reports/judge_controls/<judge>.json (how many it got right, a DVC metric), so a broken
judge shows itself at once. Every judge cell depends on its judge's controls, so DVC runs
them first; a judge that cannot judge them (most unscored, or one verdict for every
example) stops the run here, before its cells are paid for, and writes nothing, unless
judge_controls.judge_anyway=true (conf/run.yaml). Its calls stay in the call cache.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import judge_controls
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(judge_controls, cfg)


if __name__ == "__main__":
    launch(main)
