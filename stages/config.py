"""config: each model and judge config of the sweep, checked, one file each under data/configs/."""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline.config import run_config_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_config_stage(cfg, (o.split("=", 1)[0] for o in HydraConfig.get().overrides.task))


if __name__ == "__main__":
    launch(main)
