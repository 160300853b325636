"""config: each model and judge config of the sweep, checked, one file each under data/configs/."""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline.config import run_config_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_config_stage(cfg)


if __name__ == "__main__":
    launch(main)
