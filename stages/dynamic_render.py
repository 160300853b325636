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
from losona.core.config import chosen
from losona.core.errors import LosonaError
from losona.core.layout import RunLayout
from losona.pipeline.dynamic_render import run_dynamic_render


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    settings = chosen(cfg, "dynamic")
    if "condition" not in cfg:
        raise LosonaError(
            "dynamic_render needs one cell, e.g. judge=lexicon model=smollm2 condition=naive"
        )
    cell = (chosen(cfg, "judge").name, chosen(cfg, "model").name, chosen(cfg, "condition").name)
    run_dynamic_render(settings, layout, cell, chosen(cfg, "sampling"), chosen(cfg, "dataset"))


if __name__ == "__main__":
    launch(main)
