"""provenance: what this run rests on, written to reports/provenance.json.

python stages/provenance.py

Package versions, the scenario set's source and content hash, every subject and judge
config of the sweep (provider model strings and sampling settings, never a key), the
prompt templates' versions and hashes, the sweep, and the K-vote and unscored-trial
policies. `python -m losona.reproduce` checks a run against it.
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen, load_option, plain
from losona.contracts import SCENARIO_SCHEMA
from losona.files import read_parquet, write_json
from losona.layout import RunLayout
from losona.provenance.record import provenance


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    sweep = plain(cfg.sweep)
    record = provenance(
        scenarios=read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch"),
        dataset=chosen(cfg, "dataset").settings(),
        sweep=sweep,
        models={name: plain(load_option("model", name)) for name in sweep["models"]},
        judges={
            name: plain(load_option("judge", name)) for name in [*sweep["judges"], *sweep["panels"]]
        },
        trials=chosen(cfg, "sampling").trials,
        bootstrap=chosen(cfg, "aggregate"),
    )
    write_json(record, layout.provenance)
    print(f"provenance -> {layout.provenance}")


if __name__ == "__main__":
    launch(main)
