"""The audit stage as functions: how far the run's judges can be trusted, and the labelling
sheet people fill in so that the audit can measure the judges against them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from omegaconf import DictConfig

from losona.audit.inputs import audit_inputs
from losona.audit.labelling import labelling_sheet, load_labels, load_responses, write_sheet
from losona.audit.run import audit
from losona.audit.settings import AuditSettings, DeterminismSettings
from losona.audit.summary import summary_lines
from losona.core.config import AggregateSettings, JudgeConfig, chosen, plain
from losona.core.contracts import CONTROL_SCHEMA, SCENARIO_SCHEMA
from losona.core.files import read_parquet
from losona.core.layout import RunLayout
from losona.judges.base import CallingJudge, Judge
from losona.judges.run import make_judge
from losona.models import CallOptions
from losona.models.runlog import record_table
from losona.pipeline.command import Cell, ComposedSettings, Settings
from losona.results.aggregate import read_reports


def run_audit(
    determinism: DeterminismSettings,
    layout: RunLayout,
    sweep: Mapping[str, Sequence[str]],
    bootstrap: AggregateSettings,
    judge_config: Callable[[str], JudgeConfig],
) -> None:
    """audit: judges against each other and against people's labels, determinism (judged
    again as `determinism` says) and the validity controls, written to the audit folder.
    `judge_config` gives a judge's config by name; it is asked only when determinism
    re-judges, so no other judge config is read."""
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    inputs = audit_inputs(layout.verdicts_folder, sweep)
    controls = {
        judge: read_parquet(layout.controls(judge), CONTROL_SCHEMA, made_by="judge_controls")
        for judge in inputs.judges
    }

    rejudged: list[Judge] = []

    def rejudge(name: str) -> Judge:
        judge = make_judge(
            judge_config(name),
            CallOptions(
                cache_path=layout.call_cache,
                use_cache=False,
                run_log=layout.determinism_log(name),
            ),
        )
        rejudged.append(judge)
        return judge

    result = audit(
        inputs.verdicts,
        scenarios,
        read_reports(layout.reports_folder),
        controls,
        load_labels(layout.label_key, layout.labels),
        presentation=inputs.presentation,
        bootstrap=bootstrap,
        determinism_settings=determinism,
        kinds=inputs.kinds,
        rejudge=rejudge,
        families=inputs.families,
    )
    result.write(layout.audit_folder)
    for judge in rejudged:
        for log in judge.run_logs if isinstance(judge, CallingJudge) else ():
            record_table(log, layout.audit_folder / "determinism.csv")
    for line in summary_lines(result):
        print(f"audit: {line}")
    print(f"audit -> {layout.audit_folder}/")


def run_audit_export(
    settings: AuditSettings, layout: RunLayout, sweep: Mapping[str, Sequence[str]]
) -> None:
    """audit.export=true: the labelling sheet (CSV and HTML) and its key, and nothing else."""
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
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


def run_audit_command(cfg: DictConfig) -> None:
    """audit as its command line asks: the audit, or with audit.export the labelling sheet."""
    settings = chosen(cfg, "audit")
    layout = RunLayout(chosen(cfg, "paths"))
    if settings.export:
        run_audit_export(settings, layout, plain(cfg.sweep))
    else:
        run(ComposedSettings(cfg), layout, {})


CELL: dict[str, str] = {}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_audit(
        settings.group("audit").determinism,
        layout,
        settings.group("sweep"),
        settings.group("aggregate"),
        lambda name: settings.option("judge", name),
    )
