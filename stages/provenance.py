"""provenance: what this run rests on, written to reports/provenance.json.

python stages/provenance.py

Package versions, the scenario set's source and content hash, every subject and judge
config of the sweep (provider model strings and sampling settings, never a key), the
prompt templates' versions and hashes, the sweep, and the K-vote and unscored-trial
policies. `python -m losona.reproduce` checks a run against it.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import provenance
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(provenance, cfg)


if __name__ == "__main__":
    launch(main)
