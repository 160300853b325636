"""generate: a generator model writes candidate scenarios for cells of the catalog.

python stages/generate.py                                  # conf/generation/default.yaml
python stages/generate.py generate.generator=gemini_pro generate.structured_output=json_schema \
    generate.cells.mode=per_norm generate.cells.per_norm=2

Writes data/generation/candidates.parquet (every candidate, valid or not, with its
reasons) and reports/generation/generate.json (counts and rejection reasons).
"""

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
