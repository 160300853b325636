"""screen: the no-demonstration control, asked of the baseline models and judged.

python stages/screen.py                                        # conf/generation/default.yaml
python stages/screen.py 'screen.models=[gemini_pro,claude_opus]' screen.keep=majority

Reads data/generation/candidates.parquet; writes data/generation/screened.parquet (every
candidate with its outcome), data/generation/screen_verdicts.parquet (each baseline
answer and its verdict), reports/generation/cells.csv (per cell: generated, rejected by
validation, rejected by screening, undetermined, accepted) and reports/generation/screen.json.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.core.config import chosen
from losona.core.layout import RunLayout
from losona.pipeline.screen import run_screen


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_screen(chosen(cfg, "generation").screen, RunLayout(chosen(cfg, "paths")))


if __name__ == "__main__":
    launch(main)
