"""audit: how far the run's judges can be trusted, against each other and against people
(docs/judge-audit.md); with audit.export=true, the labelling sheet instead."""

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
