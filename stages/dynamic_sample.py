"""dynamic_sample: the subject's second reply to every second-turn prompt of one cell.

python stages/dynamic_sample.py judge=lexicon model=smollm2 condition=naive

Reads data/dynamic/<judge>/prompts/<model>/<condition>.parquet and writes the responses
beside it (data/dynamic/<judge>/responses/...), with the calls they came from under
paths.calls_dir; its run log goes to paths.dynamic_logs_dir. With sampling.dry_run=true it
prints what the calls would cost (cached calls counted), and writes nothing.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.core.config import chosen
from losona.core.errors import LosonaError
from losona.core.layout import RunLayout
from losona.pipeline.dynamic_sample import run_dynamic_sample


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    if "condition" not in cfg:
        raise LosonaError(
            "dynamic_sample needs one cell, e.g. judge=lexicon model=smollm2 condition=naive"
        )
    settings = chosen(cfg, "sampling")
    spec = chosen(cfg, "model")
    judge, condition = chosen(cfg, "judge").name, chosen(cfg, "condition").name
    run_dynamic_sample(settings, layout, judge, spec, condition)


if __name__ == "__main__":
    launch(main)
