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

from losona.core.cli import launch, reports_user_errors
from losona.pipeline.config import run_config_stage


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_config_stage(cfg, (o.split("=", 1)[0] for o in HydraConfig.get().overrides.task))


if __name__ == "__main__":
    launch(main)
