"""audit: how far the run's judges can be trusted, against each other and against people.

python stages/audit.py                             # or dvc repro audit
python stages/audit.py audit.export=true           # write a labelling sheet, then stop
python stages/audit.py audit.determinism.repeats=3 # re-judge a subset 3 times, cache bypassed
python stages/audit.py audit.determinism.repeats=3 judge=local_openai judge.model.api_base=...

Reads every verdict file, aggregate's results, each judge's validity controls and, once
people have labelled the sheet, their labels; writes reports/audit/ (CSV tables and
metrics.json, the DVC metrics). With audit.export=true it writes the labelling sheet
(paths.label_sheet, paths.label_sheet_html) and its key (paths.label_key) instead.
"""

import hydra
from omegaconf import DictConfig

from losona.core.cli import launch, reports_user_errors
from losona.pipeline.audit import run_audit_command


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    run_audit_command(cfg)


if __name__ == "__main__":
    launch(main)
