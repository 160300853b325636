"""preflight: the whole run checked before any other stage runs (docs/configuration.md)."""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline.preflight import run_preflight


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_preflight(cfg)


if __name__ == "__main__":
    launch(main)
