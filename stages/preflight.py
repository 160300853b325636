"""preflight: the whole run checked before any other stage runs.

python stages/preflight.py        # what dvc repro and dvc exp run start with

Every setting of the run (conf/run.yaml, params.yaml, conf/panels.yaml, the dynamic node)
and every model, condition, judge and panel the sweep names, checked as the stages will
read them. On any problem: one message naming each (file, key, what was expected), the
command that gets the committed settings back, exit 2, and nothing written, so DVC stops
before a stage removes its outputs (the outputs of cells a setting drops, which DVC removes
before any stage runs, the message names, and its command brings back). Otherwise it
writes the same few bytes every time (data/configs/run.checked): the first stages depend
on that file so that DVC runs this first, and nothing reruns because of it.
"""

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
