"""audit: the run's judges against each other and against people (docs/judge-audit.md)."""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline.audit import run_audit_command


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_audit_command(cfg)


if __name__ == "__main__":
    launch(main)
