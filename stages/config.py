"""config: the sweep's model and judge configs, checked, one file each.

python stages/config.py model=smollm2        # -> data/configs/model/smollm2.json
python stages/config.py judge=local_openai   # -> data/configs/judge/local_openai.json

Each file is the option as the run used it: checked, with its defaults, no password. The
stages that read several configs of the sweep (aggregate's labels, provenance's record,
the audit's judges) depend on these files rather than on the whole conf/model/ and
conf/judge/ folders, so a config the sweep does not use, written after a run, leaves the
run up to date, and one it does use reruns what it should.
"""

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen
from losona.config.stage import run_config
from losona.errors import LosonaError
from losona.layout import RunLayout

GROUPS = ("model", "judge")


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    # The groups chosen on the command line: both have defaults, so only those are meant.
    given = {o.split("=", 1)[0] for o in HydraConfig.get().overrides.task}
    groups = [group for group in GROUPS if group in given]
    if not groups:
        raise LosonaError("config needs an option to record: model=<name> or judge=<name>")
    for group in groups:
        run_config(chosen(cfg, group), layout)


if __name__ == "__main__":
    launch(main)
