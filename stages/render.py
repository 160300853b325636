"""render: the subject prompt of every scenario under every condition of the sweep."""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline.render import run_render_command


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_render_command(cfg)


if __name__ == "__main__":
    launch(main)
