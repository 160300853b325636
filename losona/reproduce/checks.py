"""The checks of a run: every reported number recomputed from the verdict files and
compared with the files on disk, and the run's inputs, calls and dvc.lock against its
provenance record (the whole list: losona/reproduce/__init__.py).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from losona.audit.files import AUDIT, read_audit
from losona.audit.inputs import audit_inputs
from losona.audit.labelling import load_labels
from losona.audit.run import audit
from losona.audit.settings import DeterminismSettings
from losona.config import AggregateSettings, judge_kind_settings, option
from losona.contracts import (
    CONTROL_SCHEMA,
    PROMPT_SCHEMA,
    RESPONSE_SCHEMA,
    SCENARIO_SCHEMA,
    VERDICT_SCHEMA,
)
from losona.dynamic.aggregate import (
    DYNAMIC_FILES,
    aggregate_dynamic,
    load_cells,
    presentation_of,
    read_dynamic_reports,
)
from losona.dynamic.aggregate import FIGURE as DYNAMIC_FIGURE
from losona.dynamic.judge import judge_second_turn
from losona.dynamic.render import GroupModel, render_cell
from losona.dynamic.settings import DynamicSettings
from losona.dynamic.tables import (
    DYNAMIC_PROMPT_SCHEMA,
    DYNAMIC_RESPONSE_SCHEMA,
    DYNAMIC_VERDICT_SCHEMA,
)
from losona.errors import LosonaError
from losona.files import display_path, read_parquet
from losona.judges.base import Judge
from losona.judges.health import JudgeEvidence, controls_accuracy
from losona.judges.kinds import judge_kind
from losona.judges.run import control_summary, judge_responses
from losona.judges.verdicts import verdict_files
from losona.layout import RunLayout
from losona.models import (
    CallNotFound,
    CallOptions,
    CallStore,
    PublishedCalls,
    Request,
    call_key,
    read_calls,
)
from losona.provenance.call_files import LOCK_FILE, recorded_md5
from losona.provenance.lock import check_lock as lock_check
from losona.provenance.record import scenarios_sha256, template_hashes
from losona.reproduce.compare import (
    Check,
    Difference,
    cell_count,
    compare_json,
    compare_tables,
    compare_text,
    same,
)
from losona.results.aggregate import REPORT_FILES, Reports, aggregate, read_reports
from losona.results.bundle import METRICS, BundleFiles, ReportBundle
from losona.scenarios.datasets import fetch_followups

DETERMINISM_FILES = ("determinism.csv", "determinism_flips.csv")


def read_provenance(path: str | Path) -> dict[str, Any]:
    """The run's provenance record, refusing a missing or malformed file."""
    path = Path(path)
    if not path.is_file():
        raise LosonaError(
            f"{display_path(path)} not found: run the provenance stage first "
            "(python stages/provenance.py, or dvc repro)"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LosonaError(f"{display_path(path)}: not a JSON file ({exc})") from None
    for key in ("dataset", "templates", "sweep", "judges", "aggregate"):
        if not isinstance(record, dict) or not isinstance(record.get(key), dict):
            raise LosonaError(
                f"{display_path(path)}: no '{key}' section; rerun the provenance stage"
            )
    checked: dict[str, Any] = record
    return checked


def check_inputs(
    record: Mapping[str, Any], scenarios: pl.DataFrame, provenance_file: str
) -> tuple[int, list[Difference]]:
    """The scenario table's content hash and the templates against the provenance record."""
    recorded = {
        "dataset.content_sha256": record["dataset"].get("content_sha256"),
        **{f"templates.{k}": v for k, v in record["templates"].items()},
    }
    current = {
        "dataset.content_sha256": scenarios_sha256(scenarios),
        **{f"templates.{k}": v for k, v in template_hashes().items()},
    }
    return compare_json(provenance_file, recorded, current)


def check_verdict_origins(
    verdicts: pl.DataFrame, record: Mapping[str, Any], verdicts_dir: str
) -> tuple[int, list[Difference]]:
    """Each judge's verdicts name the judge model and version the provenance records."""
    differences, compared = [], 0
    for judge, model, version in (
        verdicts.select("judge", "judge_model", "judge_version").unique().sort(pl.all()).iter_rows()
    ):
        entry = record["judges"].get(judge)
        if entry is None:
            continue  # outside the recorded sweep: reported by aggregate, noted by the caller
        expected = judge_kind(entry.get("kind")).verdict_origin(
            entry, f"{display_path(verdicts_dir)} (provenance: judges.{judge})"
        )
        for column, found in (("judge_model", model), ("judge_version", version)):
            compared += 1
            if not same(expected[column], found):
                where = f"judge '{judge}' (provenance: judges.{judge})"
                differences.append(
                    Difference(f"{verdicts_dir}/{judge}", where, column, expected[column], found)
                )
    return compared, differences


def check_judgements(
    check: Check,
    scenarios: pl.DataFrame,
    kinds: Mapping[str, str],
    layout: RunLayout,
    published: PublishedCalls | None = None,
) -> None:
    """Verdicts against the responses they judge, and judged again where that costs nothing.

    Each judge's kind judges its verdicts again with no model call (losona/judges/kinds/):
    the lexicon judge's from the responses (rules cost nothing), an LLM judge's from the
    run's published calls alone (`published`), a panel's by combining its members' again,
    so that every field of every verdict is checked, not only the response it quotes.
    """
    for path, (judge, model, condition) in verdict_files(layout.verdicts_folder):
        responses_path = layout.responses(model, condition)
        if not responses_path.is_file():
            check.notes.append(
                f"{display_path(path)}: not rechecked against responses "
                f"({display_path(responses_path)} is absent)"
            )
            continue
        found = read_parquet(path, VERDICT_SCHEMA, made_by="judge").sort("scenario_id", "trial")
        responses = read_parquet(responses_path, RESPONSE_SCHEMA, made_by="sample")
        kind = judge_kind(kinds[judge])
        if kind.recombine is not None:
            # Its verdicts follow from other judges': combine theirs again.
            expected = kind.recombine(judge, layout, model, condition).sort("scenario_id", "trial")
        else:
            with tempfile.TemporaryDirectory() as scratch:
                # A cache of its own, so that only the published calls can answer.
                store = CallStore(Path(scratch) / "calls.sqlite", published, offline=True)
                rejudger = kind.rejudge(judge, store)
                if rejudger is None:
                    expected = _quoting(found, responses)
                else:
                    try:
                        expected = judge_responses(
                            scenarios,
                            responses,
                            rejudger,
                            judge,
                            model=model,
                            condition=condition,
                            origin=display_path(responses_path),
                        )
                    except CallNotFound as exc:
                        assert published is not None  # only published calls are looked up
                        file = display_path(published.path)
                        where = f"judge {judge} on {model}/{condition}"
                        check.add(
                            file, 1, [Difference(file, where, "calls", "all present", str(exc))]
                        )
                        continue
        file = display_path(path)
        check.add(file, cell_count(expected), compare_tables(file, expected, found))


def _quoting(found: pl.DataFrame, responses: pl.DataFrame) -> pl.DataFrame:
    """Verdicts that nothing can judge again offline, as they must be: each quoting the
    response of its scenario and trial."""
    expected = found.with_columns(pl.lit(None, pl.String).alias("response")).update(
        responses.select("scenario_id", "trial", "response"),
        on=["scenario_id", "trial"],
        how="left",
    )
    return expected.select(found.columns)


def _no_model_calls(name: str) -> Judge:
    raise LosonaError(f"reproduce makes no model calls (judge '{name}' would be re-judged)")


def check_run(layout: RunLayout, dynamic: DynamicRun | None = None) -> Check:
    """Recompute every reported number of the run `layout` places (conf/paths) and compare.

    With `dynamic` (the extension on), its tables are checked too (`check_dynamic`).
    """
    check = Check()
    record = read_provenance(layout.provenance)
    provenance_file = display_path(layout.provenance)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    check.add(layout.provenance, *check_inputs(record, scenarios, provenance_file))

    recorded_kinds = {j: node.get("kind") for j, node in record["judges"].items()}
    inputs = audit_inputs(layout.verdicts_folder, record["sweep"], recorded_kinds)
    check.add(
        layout.verdicts_folder,
        *check_verdict_origins(inputs.verdicts, record, display_path(layout.verdicts_folder)),
    )
    unrecorded = sorted(set(inputs.judges) - set(record["judges"]))
    if unrecorded:
        check.notes.append(
            f"judge(s) {unrecorded} have verdicts but are not in the provenance's sweep"
        )
    published = published_calls(layout)
    check_judgements(check, scenarios, inputs.kinds, layout, published)

    bootstrap = AggregateSettings.from_config(
        record["aggregate"]["bootstrap"], origin=provenance_file, key="aggregate.bootstrap"
    )
    controls = check_controls(check, inputs.judges, layout)
    expected = aggregate(
        inputs.verdicts,
        scenarios,
        bootstrap=bootstrap,
        presentation=inputs.presentation,
        judges={
            judge: JudgeEvidence(
                controls=controls_accuracy(controls[judge]) if judge in controls else None,
                own_words=judge_kind_settings(kind).own_words,
            )
            for judge, kind in inputs.kinds.items()
        },
    )
    reported = read_reports(layout.reports_folder)
    check_bundle(check, REPORT_FILES, layout.reports_folder, expected, reported)
    if (layout.audit_folder / METRICS).is_file():
        recomputed = audit(
            inputs.verdicts,
            scenarios,
            expected,
            controls,
            load_labels(layout.label_key, layout.labels),
            presentation=inputs.presentation,
            bootstrap=bootstrap,
            determinism_settings=DeterminismSettings(repeats=0),
            kinds=inputs.kinds,
            rejudge=_no_model_calls,
            families=inputs.families,
        )
        check_audit(check, recomputed, layout.audit_folder)
    else:
        check.notes.append(f"{display_path(layout.audit_folder)}: no audit in this run")
    if layout.figures_folder.is_dir():
        check_figures(check, expected, layout.figures_folder)
    check_calls(check, record["sweep"], layout, published)
    if dynamic is not None and dynamic.settings.on:
        check_dynamic(check, dynamic, layout, scenarios, bootstrap, published)
    check_lock(check)
    return check


# What a response row holds of the call it came from, by the calls table's column.
RESPONSE_FROM_CALL = {
    "text": "response",
    "finish_reason": "finish_reason",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "cost_usd": "cost_usd",
}


def published_calls(layout: RunLayout) -> PublishedCalls | None:
    """The run's published calls, if it has any; a file dvc.lock records must be there."""
    published = layout.calls
    if published is None:
        return None
    file = display_path(published)
    if not published.is_file():
        if recorded_md5(published) is not None:
            raise LosonaError(
                f"{file} not found, though dvc.lock records it: get it with `dvc pull {file}`"
            )
        return None
    # Its bytes are held against dvc.lock by check_lock: an edited file is read here, so
    # that what differs is named value by value too.
    return PublishedCalls(published, None, remedy=f"get the run's own with `dvc pull {file}`")


def check_calls(
    check: Check,
    sweep: Mapping[str, Sequence[str]],
    layout: RunLayout,
    published: PublishedCalls | None,
) -> None:
    """The run's published calls (`published`, read once for every check of the run): every
    cell's calls in the run's file, every response in them.

    Each response is looked up by the call-cache key of the request that produced it (the
    prompt sent, the trial, the model config), so a calls file that would serve a rerun
    anything but the run's own responses is named value by value.
    """
    if layout.calls is None:
        check.notes.append("paths.calls is null: the run's calls are not rechecked")
        return
    if published is None:
        return  # a run that published no calls, like one without figures: nothing to check
    file, by_key = display_path(published.path), published.rows_by_key
    check_call_files(check, layout.sweep_calls(sweep), file, by_key)
    prompts = read_parquet(layout.prompts, PROMPT_SCHEMA, made_by="render")
    messages = {
        (row["scenario_id"], row["condition"]): tuple(row["messages"])
        for row in prompts.iter_rows(named=True)
    }
    for model in sweep["models"]:
        spec = option("model", model)
        for condition in sweep["conditions"]:
            path = layout.responses(model, condition)
            if not path.is_file():
                continue  # named by the verdict checks, which need it too
            responses = read_parquet(path, RESPONSE_SCHEMA, made_by="sample")
            differences, compared = [], 0
            for row in responses.iter_rows(named=True):
                sent = messages.get((row["scenario_id"], condition))
                key = call_key(spec, Request(messages=sent or (), trial=row["trial"]))
                where = (
                    f"key {key} (subject_model={model}, condition={condition}, "
                    f"scenario_id={row['scenario_id']}, trial={row['trial']})"
                )
                compared += len(RESPONSE_FROM_CALL)
                differences += response_against_call(row, by_key.get(key, {}), file, where)
            check.add(published.path, compared, differences)


def response_against_call(
    row: Mapping[str, Any], call: Mapping[str, Any], file: str, where: str
) -> list[Difference]:
    """Where a response row differs from the published call it came from (`{}`: no call)."""
    missing = "(missing)"
    return [
        Difference(file, where, column, row[response_column], call.get(column, missing))
        for column, response_column in RESPONSE_FROM_CALL.items()
        if not same(row[response_column], call.get(column, missing))
    ]


def check_call_files(
    check: Check, files: Sequence[Path], file: str, by_key: Mapping[str, Mapping[str, Any]]
) -> None:
    """Every call of each cell's calls file is in the run's published calls (`file`, read
    into `by_key`), as it is there."""
    missing = "(missing)"
    for cell_file in files:
        if not cell_file.is_file():
            check.notes.append(f"{display_path(cell_file)}: absent, not rechecked")
            continue
        cell = read_calls(cell_file, remedy="rerun the stage that writes it")
        differences = [
            Difference(
                file,
                f"key {row['key']} (from {display_path(cell_file)})",
                column,
                value,
                by_key.get(row["key"], {}).get(column, missing),
            )
            for row in cell.iter_rows(named=True)
            for column, value in row.items()
            if not same(value, by_key.get(row["key"], {}).get(column, missing))
        ]
        check.add(cell_file, cell_count(cell), differences)


def check_lock(check: Check) -> None:
    """Every output file against the md5 dvc.lock records, and dvc.lock against git HEAD's.

    The first catches a table or calls file rewritten outside DVC; the second a run
    recomputed and recorded again (dvc.lock rewritten to match) since it was committed:
    its files agree with each other, but they are no longer the run that was published.
    A folder output is left to `dvc status`. Without a dvc.lock there is nothing to hold.
    The check itself is `losona.provenance.lock`'s, which publishable applies too.
    """
    found = lock_check()
    if found is None:
        return
    file = display_path(LOCK_FILE)
    check.add(
        LOCK_FILE,
        found.compared,
        [Difference(file, f"out {d.path}", "md5", d.expected, d.found) for d in found.drifted],
    )
    if not found.lock_changed or found.committed_outputs is None:
        return
    changed = [
        Difference(
            file, f"out {d.path} (expected: as committed at git HEAD)", "md5", d.expected, d.found
        )
        for d in found.recomputed
    ]
    check.add(f"{file} at git HEAD", found.committed_outputs, changed)
    check.notes.append(
        f"{file} differs from the one committed at git HEAD"
        + (
            f": {len(changed)} outputs were recomputed since, so the files checked are not the "
            "committed run (to check that one: git checkout dvc.lock && dvc checkout; to "
            "check a new run: commit it first)"
            if changed
            else " in what it records of the inputs only; every output is the committed one"
        )
    )


def check_bundle(
    check: Check,
    files: BundleFiles,
    folder: str | Path,
    expected: ReportBundle,
    reported: ReportBundle,
    *,
    skip_tables: Sequence[str] = (),
    skip_metrics: Sequence[str] = (),
) -> None:
    """A stage's reports against what is on disk: every table cell by cell, every text line
    by line, every metric leaf by leaf, each difference named by file and line or key.

    `skip_tables` (file names) and `skip_metrics` (metrics.json's keys) are not rechecked;
    the caller notes why.
    """
    root = Path(folder)
    for name in files.tables:
        if name not in skip_tables:
            file = display_path(root / name)
            check.add(
                file,
                cell_count(expected[name]),
                compare_tables(file, expected[name], reported[name]),
            )
    for name in files.texts:
        file = display_path(root / name)
        check.add(file, *compare_text(file, expected.texts[name], reported.texts[name]))
    file = display_path(root / METRICS)
    check.add(file, *compare_json(file, expected.metrics, reported.metrics, skip=skip_metrics))


def check_controls(
    check: Check, judges: Sequence[str], layout: RunLayout
) -> dict[str, pl.DataFrame]:
    """Each judge's control summary (reports/judge_controls/) from its control verdicts."""
    controls = {}
    for judge in judges:
        table_path = layout.controls(judge)
        summary_path = layout.controls_summary(judge)
        if not table_path.is_file():
            check.notes.append(f"{display_path(table_path)}: no validity controls for '{judge}'")
            continue
        controls[judge] = read_parquet(table_path, CONTROL_SCHEMA, made_by="judge_controls")
        file = display_path(summary_path)
        try:
            reported = json.loads(summary_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise LosonaError(
                f"{file} not found: run the judge_controls stage "
                f"(python stages/judge_controls.py judge={judge}, or dvc repro)"
            ) from None
        except json.JSONDecodeError as exc:
            raise LosonaError(f"{file}: not a JSON file ({exc})") from None
        check.add(file, *compare_json(file, {judge: control_summary(controls[judge])}, reported))
    return controls


def check_audit(check: Check, recomputed: ReportBundle, root: Path) -> None:
    """The judge audit's tables and metrics (under `root`); re-judged determinism figures
    are only noted."""
    reported = read_audit(root)
    rejudged = reported["determinism.csv"].filter(pl.col("method") == "re-judged")
    if rejudged.height:
        check.notes.append(
            f"{display_path(root / 'determinism.csv')}: judges {rejudged['judge'].to_list()} "
            "were re-judged by model calls; those figures are not rechecked"
        )
    skip = rejudged.height > 0
    check_bundle(
        check,
        AUDIT,
        root,
        recomputed,
        reported,
        skip_tables=DETERMINISM_FILES if skip else (),
        skip_metrics=("determinism",) if skip else (),
    )


def check_figures(check: Check, expected: Reports, figures_folder: Path) -> None:
    """The numbers behind each figure (<figure>.csv), from the recomputed reports."""
    from losona.report.plots import draw_figures  # matplotlib: imported only when there are figures

    for figure in draw_figures(expected):
        path = figures_folder / f"{figure.name}.csv"
        file = display_path(path)
        if not path.is_file():
            check.add(file, 1, [Difference(file, "", "file", "present", "(missing)")])
            continue
        try:
            found = pl.read_csv(path, schema=figure.data.schema)
        except pl.exceptions.PolarsError as exc:
            check.add(file, 1, [Difference(file, "", "contents", "a readable CSV", str(exc))])
            continue
        check.add(file, cell_count(figure.data), compare_tables(file, figure.data, found))


# -- the dynamic extension ------------------------------------------------------------------------


@dataclass(frozen=True)
class DynamicRun:
    """What checking the dynamic extension needs beyond the layout: its settings, its dataset."""

    settings: DynamicSettings
    dataset: Mapping[str, Any]


def check_dynamic(
    check: Check,
    run: DynamicRun,
    layout: RunLayout,
    scenarios: pl.DataFrame,
    bootstrap: AggregateSettings,
    published: PublishedCalls | None,
) -> None:
    """The dynamic extension's files, stage by stage, from the first turn's, with no call.

    Each cell's prompts are rendered again from the first-turn verdicts (scripted
    follow-ups from the dataset, a group model's from the published calls), its responses
    are looked up in the published calls by key, its verdicts judged again (rules for
    free, an LLM judge from the published calls), and every table, metric and figure
    number of reports/dynamic/<judge>/ is recomputed with the bootstrap settings the
    provenance records (`bootstrap`, as the first turn's are; a metrics.json that says
    others differs from the recomputed one).
    """
    settings = run.settings
    if published is not None:
        file, by_key = display_path(published.path), published.rows_by_key
        check_call_files(check, layout.dynamic_call_files(settings), file, by_key)
    for judge in settings.judges:
        root = layout.dynamic_reports(judge)
        reported = read_dynamic_reports(root)
        for model in settings.models:
            for condition in settings.conditions:
                cell = (judge, model, condition)
                _check_dynamic_cell(check, run, layout, cell, scenarios, published)
        cells = load_cells(layout, judge, settings.models, settings.conditions)
        expected = aggregate_dynamic(
            cells,
            scenarios,
            judge=judge,
            bootstrap=bootstrap,
            presentation=presentation_of(settings.models, settings.conditions, [judge]),
        )
        check_bundle(check, DYNAMIC_FILES, root, expected, reported)
        from losona.dynamic.plots import figure_data  # matplotlib: only when it is on

        figure = root / f"{DYNAMIC_FIGURE}.csv"
        data = figure_data(expected["results.csv"])
        try:
            found = pl.read_csv(figure, schema=data.schema)
        except (OSError, pl.exceptions.PolarsError) as exc:
            check.add(
                figure, 1, [Difference(display_path(figure), "", "contents", "readable", str(exc))]
            )
            continue
        check.add(figure, cell_count(data), compare_tables(display_path(figure), data, found))


def _check_dynamic_cell(
    check: Check,
    run: DynamicRun,
    layout: RunLayout,
    cell: tuple[str, str, str],
    scenarios: pl.DataFrame,
    published: PublishedCalls | None,
) -> None:
    judge, model, condition = cell
    first = layout.verdicts(judge, model, condition)
    prompts_file = layout.dynamic_prompts(judge, model, condition)
    responses_file = layout.dynamic_responses(judge, model, condition)
    verdicts_file = layout.dynamic_verdicts(judge, model, condition)
    prompts = read_parquet(prompts_file, DYNAMIC_PROMPT_SCHEMA, made_by="dynamic_render")
    responses = read_parquet(responses_file, DYNAMIC_RESPONSE_SCHEMA, made_by="dynamic_sample")
    verdicts = read_parquet(verdicts_file, DYNAMIC_VERDICT_SCHEMA, made_by="dynamic_judge")
    with tempfile.TemporaryDirectory() as scratch:
        # A cache of its own: only the published calls may answer, and nothing is called.
        store = CallStore(Path(scratch) / "calls.sqlite", published, offline=True)
        offline = CallOptions(cache_path=store)
        try:
            group = None
            if run.settings.source == "simulated":
                group = GroupModel(option("model", run.settings.group_model), offline)
            rendered = render_cell(
                scenarios,
                read_parquet(first, VERDICT_SCHEMA, made_by="judge"),
                judge=judge,
                model=model,
                condition=condition,
                followups=fetch_followups(run.dataset),
                group=group,
                origin=display_path(first),
            )
            file = display_path(prompts_file)
            check.add(file, cell_count(prompts), compare_tables(file, rendered.prompts, prompts))
            rejudger = judge_kind(option("judge", judge)).rejudge(judge, store)
            if rejudger is None:
                check.notes.append(
                    f"{display_path(verdicts_file)}: not judged again (an LLM judge, and no "
                    "published calls to answer it)"
                )
            if rejudger is not None:
                expected = judge_second_turn(
                    scenarios,
                    prompts,
                    responses,
                    rejudger,
                    judge,
                    origin=display_path(responses_file),
                )
                file = display_path(verdicts_file)
                check.add(file, cell_count(verdicts), compare_tables(file, expected, verdicts))
        except CallNotFound as exc:
            where = f"dynamic cell {judge}/{model}/{condition}"
            calls_file = display_path(published.path) if published else "paths.calls"
            check.add(
                calls_file, 1, [Difference(calls_file, where, "calls", "all present", str(exc))]
            )
    _check_second_replies(check, model, prompts, responses, published)


def _check_second_replies(
    check: Check,
    model: str,
    prompts: pl.DataFrame,
    responses: pl.DataFrame,
    published: PublishedCalls | None,
) -> None:
    """Every second reply is the published call its prompt and trial were answered with."""
    if published is None:
        return
    by_key = published.rows_by_key
    spec = option("model", model)
    sent = {
        (row["scenario_id"], row["trial"], row["arm"]): tuple(row["messages"])
        for row in prompts.iter_rows(named=True)
    }
    differences, compared = [], 0
    file = display_path(published.path)
    for row in responses.iter_rows(named=True):
        key = call_key(
            spec,
            Request(sent.get((row["scenario_id"], row["trial"], row["arm"]), ()), row["trial"]),
        )
        where = (
            f"key {key} (dynamic, subject_model={model}, scenario_id={row['scenario_id']}, "
            f"trial={row['trial']}, arm={row['arm']})"
        )
        compared += len(RESPONSE_FROM_CALL)
        differences += response_against_call(row, by_key.get(key, {}), file, where)
    check.add(published.path, compared, differences)
