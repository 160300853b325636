"""dynamic_sample: the subject's second reply to every second-turn prompt of one cell.

python stages/dynamic_sample.py judge=lexicon model=smollm2 condition=naive

Reads data/dynamic/<judge>/prompts/<model>/<condition>.parquet and writes the responses
beside it (data/dynamic/<judge>/responses/...), with the calls they came from under
paths.calls_dir; its run log goes to paths.dynamic_logs_dir. With sampling.dry_run=true it
prints what the calls would cost (cached calls counted), and writes nothing.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import dynamic_sample
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(dynamic_sample, cfg)


if __name__ == "__main__":
    launch(main)
