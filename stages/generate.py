"""generate: a generator model writes candidate scenarios for catalog cells (docs/generation.md)."""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.core.config import chosen
from losona.core.layout import RunLayout
from losona.pipeline.generate import run_generate


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_generate(chosen(cfg, "generation").generate, RunLayout(chosen(cfg, "paths")))


if __name__ == "__main__":
    launch(main)
