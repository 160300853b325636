"""render: the subject prompt of every scenario under every condition of the sweep.

python stages/render.py                          # every condition in params.yaml's sweep
python stages/render.py condition=norm_informed  # just one condition
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.core.config import chosen, option
from losona.core.layout import RunLayout
from losona.pipeline.render import run_render


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    if "condition" in cfg:
        conditions = [chosen(cfg, "condition").name]
    else:  # a condition must have its config, not only a template
        conditions = [option("condition", name).name for name in cfg.sweep.conditions]
    run_render(conditions, layout)


if __name__ == "__main__":
    launch(main)
