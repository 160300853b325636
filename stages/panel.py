"""panel: a judge panel's verdicts and validity controls, from its members', no model call.

python stages/panel.py judge=offline_panel     # after panel_votes (dvc repro runs both)

Reads paths.panel_votes_dir/<panel>/ (each member's verdicts and controls, copied there by
panel_votes) and writes, in the verdict contract, data/verdicts/<panel>/<model>/<condition>.parquet
for every cell of the sweep, data/judge_controls/<panel>.parquet and
reports/judge_controls/<panel>.json: aggregate, audit and the report take the panel for
one more judge. How the votes combine: losona/judges/panels.py and docs/judges.md.
"""

import shutil

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen, judge_kind_settings, plain
from losona.contracts import CONTROL_SCHEMA, VERDICT_SCHEMA
from losona.errors import LosonaError
from losona.files import read_parquet, write_json, write_parquet
from losona.judges.panels import combine_controls, combine_verdicts, panel_description
from losona.judges.run import control_summary, status_counts
from losona.layout import RunLayout


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    panel = chosen(cfg, "judge")
    if not judge_kind_settings(panel.kind).combines:
        raise LosonaError(
            f"judge '{panel.name}' is of kind {panel.kind}, not a panel: judge it with "
            "python stages/judge.py"
        )
    judges = plain(cfg.sweep)["judges"]
    outside = [m for m in panel.members if m not in judges]
    if outside:
        raise LosonaError(
            f"panel '{panel.name}': member '{outside[0]}' is not in sweep.judges {judges} "
            "(params.yaml): a panel combines the verdicts of the run's judges; add it there"
        )
    verdicts = combine_verdicts(
        panel,
        {
            m: read_parquet(layout.panel_votes(panel.name, m), VERDICT_SCHEMA, "panel_votes")
            for m in panel.members
        },
    )
    controls = combine_controls(
        panel,
        {
            m: read_parquet(
                layout.panel_control_votes(panel.name, m), CONTROL_SCHEMA, "panel_votes"
            )
            for m in panel.members
        },
    )
    # Every table is built (and checked) before anything is written.
    out = layout.judge_verdicts(panel.name)
    shutil.rmtree(out, ignore_errors=True)  # cells the sweep no longer has go with the run
    for (model, condition), cell in verdicts.group_by(
        "subject_model", "condition", maintain_order=True
    ):
        cell_out = layout.verdicts(panel.name, str(model), str(condition))
        write_parquet(cell.sort("scenario_id", "trial"), cell_out)
    write_parquet(controls, layout.controls(panel.name))
    write_json({panel.name: control_summary(controls)}, layout.controls_summary(panel.name))
    print(
        f"panel {panel.name} ({panel_description(panel)}): {verdicts.height} verdicts, "
        f"{status_counts(verdicts)} -> {out}/; controls: {status_counts(controls)}"
    )


if __name__ == "__main__":
    launch(main)
