"""dynamic_aggregate: one judge's second-turn metrics, tables and figure (docs/dynamic.md)."""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import dynamic_aggregate
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(dynamic_aggregate, cfg)


if __name__ == "__main__":
    launch(main)
