"""curate: the review sheet, and the accepted candidates as a versioned scenario file.

python stages/curate.py
python stages/curate.py curate.version=2

Reads data/generation/screened.parquet and the accept list (generation/accept.txt: one
candidate id a line). Writes reports/generation/review.html and review.csv (every
candidate that passed the screen, for a person to read) and
data/generated/<name>-v<version>.jsonl (the accepted ones, usable with dataset=local)
with its provenance beside it (<name>-v<version>.provenance.json).
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.core.config import chosen
from losona.core.layout import RunLayout
from losona.pipeline.curate import run_curate


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_curate(chosen(cfg, "generation").curate, RunLayout(chosen(cfg, "paths")))


if __name__ == "__main__":
    launch(main)
