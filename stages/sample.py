"""sample: K responses from one model to every prompt of one condition (docs/sampling.md)."""

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
