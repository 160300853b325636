"""sample: K responses from one model to every prompt of one condition.

python stages/sample.py condition=naive                        # smollm2, the offline default
python stages/sample.py model=claude_opus condition=style_adaptation
python stages/sample.py model=claude_opus condition=naive sampling.dry_run=true
python stages/sample.py +experiment=paper sampling.dry_run=true    # every cell of the sweep
python stages/sample.py model=gpt_5_5 condition=naive sampling.batch=true   # a batch job
"""

import functools

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.core.config import chosen, option, plain
from losona.core.errors import LosonaError
from losona.core.layout import RunLayout
from losona.pipeline.sample import run_sample, run_sample_dry_sweep


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    settings = chosen(cfg, "sampling")
    dataset = functools.partial(chosen, cfg, "dataset")  # read only by a dry run before fetch
    if "condition" in cfg:  # one cell: the model and the condition chosen on the command line
        run_sample(settings, layout, chosen(cfg, "model"), chosen(cfg, "condition"), dataset)
    elif settings.dry_run:  # every cell of the sweep; a condition must have its config
        sweep = plain(cfg.sweep)
        specs = [option("model", name) for name in sweep["models"]]
        conditions = [option("condition", name).name for name in sweep["conditions"]]
        run_sample_dry_sweep(settings, layout, specs, conditions, dataset)
    else:
        raise LosonaError(
            "sample needs one condition, e.g. python stages/sample.py condition=naive "
            "(or sampling.dry_run=true, without a condition, for the whole sweep's cost)"
        )


if __name__ == "__main__":
    launch(main)
