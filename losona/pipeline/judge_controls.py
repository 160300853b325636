"""The judge_controls stage as a function: one judge on every scenario's example responses,
and its summary; a judge that cannot judge them stops the run before its cells."""

from __future__ import annotations

import polars as pl

from losona.core.cli import RESTORE_COMMITTED_RUN
from losona.core.config import (
    ControlsSettings,
    JudgeConfig,
)
from losona.core.contracts import SCENARIO_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import (
    read_parquet,
    remove_empty_folders,
    write_json,
)
from losona.core.layout import RunLayout
from losona.judges.finish import finish_judging
from losona.judges.health import (
    TRUSTWORTHY_PERCENT,
    cannot_judge,
)
from losona.judges.run import (
    control_summary,
    judge_controls,
    make_judge,
    status_counts,
)
from losona.models import CallOptions
from losona.models.call_store import call_store
from losona.pipeline.command import Cell, Settings


def run_judge_controls(config: JudgeConfig, settings: ControlsSettings, layout: RunLayout) -> None:
    """judge_controls: one judge on every scenario's example responses, and its summary; a
    judge that cannot judge them stops here, writing nothing, unless told to judge anyway."""
    name = config.name
    judge = make_judge(
        config, CallOptions(cache_path=call_store(layout), run_log=layout.controls_log(name))
    )
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    controls = judge_controls(scenarios, judge, name)
    del scenarios
    summary = control_summary(controls)
    out = layout.controls(name)
    signs = cannot_judge(controls)
    if signs and not settings.judge_anyway:
        # DVC made the folders of the judge's cells when it read the pipeline: the run stops
        # before any cell, so none stays behind, empty.
        for made_by_dvc in (layout.verdicts_folder, layout.calls_folder):
            remove_empty_folders(made_by_dvc)
        raise LosonaError(
            f"judge {name} ({judge.model}) cannot judge: {'; '.join(signs)} "
            f"({status_counts(controls)}). Its cells would cost their calls for verdicts "
            "that measure the judge, so the run stops before them; no table of it was "
            f"written (only its calls' run logs, in {layout.controls_log(name).parent}), and "
            "the calls made are kept in the call cache. Try structured_output in "
            f"conf/judge/{name}.yaml (docs/judges.md), or a larger judge model; to judge "
            "with it anyway: dvc exp run -S conf/run.yaml:judge_controls.judge_anyway=true; "
            "to get the committed run back instead (DVC then also removes "
            f"{layout.config('judge', name)}, which judge_config wrote): {RESTORE_COMMITTED_RUN}"
        )
    every, compliant, breaching = summary["all"], summary["compliant"], summary["breaching"]

    def headline(outcomes: pl.DataFrame) -> str:
        return (
            f"judge_controls {name} ({judge.model}): {every['right']} of {every['items']} "
            f"right ({every['accuracy']}%): compliant examples "
            f"{compliant['right']}/{compliant['items']}, breaching examples "
            f"{breaching['right']}/{breaching['items']}; {status_counts(outcomes)} -> {out}"
        )

    closing = []
    if (every["accuracy"] or 0.0) < TRUSTWORTHY_PERCENT:
        closing.append(
            f"warning: judge {name} got fewer than {TRUSTWORTHY_PERCENT:g}% of its controls "
            f"right; check its config and {out} before trusting its verdicts"
        )
    # Keyed by the judge, so `dvc exp show` puts several judges' figures side by side.
    write_json({name: summary}, layout.controls_summary(name))
    finish_judging(
        controls,
        stage="judge_controls",
        name=name,
        judge=judge,
        out=out,
        calls_out=layout.controls_calls(name),
        headline=headline,
        closing=closing,
    )


CELL: dict[str, str] = {"judge": "judge"}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    config = settings.option("judge", cell["judge"])
    run_judge_controls(config, settings.group("judge_controls"), layout)
