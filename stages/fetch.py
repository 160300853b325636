"""fetch: load the configured scenario set, validate every row, write the scenario table."""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import fetch
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(fetch, cfg)


if __name__ == "__main__":
    launch(main)
