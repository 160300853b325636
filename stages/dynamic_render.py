"""dynamic_render: one cell's second-turn prompts, from its first turn's verdicts.

python stages/dynamic_render.py judge=lexicon model=smollm2 condition=naive
python stages/dynamic_render.py judge=lexicon model=smollm2 condition=naive \
    dynamic.source=simulated dynamic.group_model=smollm2

Reads data/verdicts/<judge>/<model>/<condition>.parquet (the first turn, judged) and the
dataset's follow-up material, and writes data/dynamic/<judge>/prompts/<model>/<condition>.parquet
(docs/dynamic.md). With dynamic.source=simulated the group model writes the follow-ups,
through the call cache, and its calls are written under paths.calls_dir; with
sampling.dry_run=true it prints what those calls would cost, and writes nothing.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline import dynamic_render
from losona.pipeline.command import run_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_stage(dynamic_render, cfg)


if __name__ == "__main__":
    launch(main)
