"""fetch: load the configured scenario set, validate every row, write the scenario table.

python stages/fetch.py                      # the bundled set
python stages/fetch.py dataset.limit=5      # five of its scenarios (conf/run.yaml sets it for DVC)
python stages/fetch.py dataset=local dataset.path=my_scenarios.jsonl
python stages/fetch.py dataset=losona_hf    # the released set on the Hugging Face Hub
"""

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
