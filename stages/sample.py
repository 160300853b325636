"""sample: K responses from one model to every prompt of one condition.

python stages/sample.py condition=naive                        # smollm2, the offline default
python stages/sample.py model=claude_opus condition=style_adaptation
python stages/sample.py model=claude_opus condition=naive sampling.dry_run=true
python stages/sample.py +experiment=paper sampling.dry_run=true    # every cell of the sweep
python stages/sample.py model=gpt_5_5 condition=naive sampling.batch=true   # a batch job
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline.sample import run_sample_command


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_sample_command(cfg)


if __name__ == "__main__":
    launch(main)
