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
import polars as pl
from omegaconf import DictConfig

from losona.audit.inputs import audit_inputs
from losona.audit.labelling import labelling_sheet, load_labels, load_responses, write_sheet
from losona.audit.run import audit
from losona.audit.settings import AuditSettings
from losona.audit.summary import summary_lines
from losona.cli import launch, reports_user_errors
from losona.config import chosen, option, plain
from losona.contracts import CONTROL_SCHEMA, SCENARIO_SCHEMA
from losona.files import read_parquet
from losona.judges.base import Judge
from losona.judges.run import make_judge
from losona.layout import RunLayout
from losona.models import CallOptions
from losona.results.aggregate import read_reports


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    settings = chosen(cfg, "audit")
    layout = RunLayout(chosen(cfg, "paths"))
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    if settings.export:
        export(cfg, layout, settings, scenarios)
        return

    inputs = audit_inputs(layout.verdicts_folder, plain(cfg.sweep))
    controls = {
        judge: read_parquet(layout.controls(judge), CONTROL_SCHEMA, made_by="judge_controls")
        for judge in inputs.judges
    }

    def rejudge(name: str) -> Judge:
        # The judge chosen with judge= keeps its command-line overrides (judge.model...).
        config = chosen(cfg, "judge") if cfg.judge.name == name else option("judge", name)
        return make_judge(
            config,
            CallOptions(
                cache_path=layout.call_cache,
                use_cache=False,
                run_log=layout.determinism_log(name),
            ),
        )

    result = audit(
        inputs.verdicts,
        scenarios,
        read_reports(layout.reports_folder),
        controls,
        load_labels(layout.label_key, layout.labels),
        presentation=inputs.presentation,
        bootstrap=chosen(cfg, "aggregate"),
        determinism_settings=settings.determinism,
        kinds=inputs.kinds,
        rejudge=rejudge,
        families=inputs.families,
    )
    result.write(layout.audit_folder)
    for line in summary_lines(result):
        print(f"audit: {line}")
    print(f"audit -> {layout.audit_folder}/")


def export(
    cfg: DictConfig, layout: RunLayout, settings: AuditSettings, scenarios: pl.DataFrame
) -> None:
    """Write the labelling sheet and its key."""
    sweep = plain(cfg.sweep)
    responses = load_responses(layout, sweep["models"], sweep["conditions"])
    sheet = labelling_sheet(
        responses, scenarios, items=settings.sheet.items, seed=settings.sheet.seed
    )
    write_sheet(
        sheet,
        csv_path=layout.label_sheet,
        html_path=layout.label_sheet_html,
        key_path=layout.label_key,
    )
    print(
        f"audit: a labelling sheet of {sheet.items.height} responses (seed "
        f"{settings.sheet.seed}) -> {layout.label_sheet_html} and {layout.label_sheet}; "
        f"its key -> {layout.label_key} (do not show it to labellers). Save the labels "
        f"as {layout.labels} (columns item_id and complies: true or false) and rerun "
        "the audit (python stages/audit.py, or dvc repro)."
    )


if __name__ == "__main__":
    launch(main)
