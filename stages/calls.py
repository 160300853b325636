"""calls: the run's model calls in one file, published with it (docs/reproducing.md).

python stages/calls.py

Merges the calls file of every sample, judge and judge_controls cell of the sweep, and of
every dynamic cell when that extension is on (paths.calls_dir), into paths.calls, one row
per call, sorted by key. Every stage that calls a model reads that file as a read-only
layer below the user's call cache, so on another machine, after `dvc pull`,
`dvc repro --force` needs no key and makes no call.
"""

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
