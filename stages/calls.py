"""calls: every cell's model calls in one file, published with the run (docs/reproducing.md)."""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import calls
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(calls, cfg)


if __name__ == "__main__":
    launch(main)
