"""The judging stages as functions: one cell judged, a judge's validity controls, and the
epilogue every judging stage ends with (the dynamic second turn's too).

stages/judge.py and stages/judge_controls.py compose the config, check the groups they
read and call these; tests call them in-process with a composed config.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

import polars as pl

from losona.core.cli import RESTORE_COMMITTED_RUN
from losona.core.config import (
    ConditionConfig,
    ControlsSettings,
    JudgeConfig,
    ModelSpec,
    judge_kind_settings,
)
from losona.core.contracts import RESPONSE_SCHEMA, SCENARIO_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import (
    display_path,
    read_parquet,
    remove_empty_folders,
    write_json,
    write_parquet,
)
from losona.core.layout import RunLayout
from losona.judges.base import CallingJudge, Judge
from losona.judges.health import (
    TRUSTWORTHY_PERCENT,
    JudgeEvidence,
    cannot_judge,
    degenerate_signs,
    uniform_verdict,
)
from losona.judges.run import (
    call_sources,
    control_summary,
    judge_calls,
    judge_controls,
    judge_responses,
    make_judge,
    status_counts,
    unscored_notes,
)
from losona.models import CallOptions
from losona.models.call_store import call_store
from losona.models.runlog import record_table

# What a judging stage's account reads of its table once the table is written.
ACCOUNT_COLUMNS = ("complies", "judge_status", "reasoning")


def finish_judging(
    table: pl.DataFrame,
    *,
    stage: str,
    name: str,
    judge: Judge,
    out: Path,
    calls_out: Path,
    headline: Callable[[pl.DataFrame], str],
    warnings: Callable[[pl.DataFrame], Iterable[str]] = lambda outcomes: (),
    closing: Iterable[str] = (),
) -> None:
    """A judging stage's end: its table written, then the calls it was built from, then its
    account (`headline` and `warnings` of the table's outcomes, where the answers came
    from, the unscored replies, `closing`).

    The table goes as soon as it is written, before the calls table is made: pass it as an
    expression, so that no name of the caller's keeps it (tests/test_scale.py measures a
    judge cell's peak memory). The calls are collected rather than streamed: a cell's calls
    fit one row group, which the writer would hold whole anyway, and made on this thread
    they peaked a little lower.
    """
    write_parquet(table, out)
    for log in judge.run_logs if isinstance(judge, CallingJudge) else ():
        record_table(log, out)
    outcomes = table.select(ACCOUNT_COLUMNS)
    del table
    write_parquet(judge_calls(judge).collect(), calls_out)
    print(headline(outcomes))
    for line in warnings(outcomes):
        print(line)
    if (sources := call_sources(judge)) is not None:
        print(f"{stage} {name}: answers: {sources}")
    for note in unscored_notes(outcomes):
        print(f"note: {note}")
    for line in closing:
        print(line)


def run_judge(
    config: JudgeConfig, layout: RunLayout, model: ModelSpec, condition: ConditionConfig
) -> None:
    """judge: one judge's verdicts on one cell's responses (never resampled), with its calls."""
    name, model_name, condition_name = config.name, model.name, condition.name
    judge = make_judge(
        config,
        CallOptions(
            cache_path=call_store(layout),
            run_log=layout.judge_log(name, model_name, condition_name),
        ),
    )
    cell = f"{model_name}/{condition_name}"
    out = layout.verdicts(name, model_name, condition_name)

    def headline(outcomes: pl.DataFrame) -> str:
        return (
            f"judge {name} ({judge.model}) on {cell}: {outcomes.height} "
            f"verdicts, {status_counts(outcomes)} -> {out}"
        )

    def warnings(outcomes: pl.DataFrame) -> list[str]:
        evidence = JudgeEvidence(own_words=judge_kind_settings(config.kind).own_words)
        lines = [
            f"warning: judge {name}'s verdicts on {cell} say nothing: {sign}"
            for sign in degenerate_signs(outcomes, evidence)
        ]
        if (label := uniform_verdict(outcomes)) is not None:
            lines.append(
                f"note: every scored verdict of judge {name} on {cell} is "
                f"{'comply' if label else 'breach'}; if its validity controls fail "
                "(judge_controls), aggregate flags the cell as degenerate"
            )
        return lines

    finish_judging(
        _judged_cell(layout, judge, name, model_name, condition_name),
        stage="judge",
        name=name,
        judge=judge,
        out=out,
        calls_out=layout.judge_calls(name, model_name, condition_name),
        headline=headline,
        warnings=warnings,
    )


def _judged_cell(
    layout: RunLayout, judge: Judge, name: str, model: str, condition: str
) -> pl.DataFrame:
    # Its inputs are this function's own: they go when it returns the verdicts.
    responses_path = layout.responses(model, condition)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    responses = read_parquet(responses_path, RESPONSE_SCHEMA, made_by="sample")
    return judge_responses(
        scenarios,
        responses,
        judge,
        name,
        model=model,
        condition=condition,
        origin=display_path(responses_path),
    )


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
