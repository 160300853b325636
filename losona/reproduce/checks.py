"""The checks of a run: every reported number recomputed from the verdict files and
compared with the files on disk, and the run's inputs, calls and dvc.lock against its
provenance record (the whole list: losona/reproduce/__init__.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import polars as pl

from losona.audit.files import DETERMINISM_FILES, read_audit
from losona.audit.inputs import audit_inputs
from losona.audit.settings import DeterminismSettings
from losona.core.config import (
    AggregateSettings,
    ControlsSettings,
    DatasetConfig,
    JudgeConfig,
    ModelSpec,
    SamplingSettings,
    judge_kind_settings,
    option,
)
from losona.core.contracts import (
    CONTROL_SCHEMA,
    PROMPT_SCHEMA,
    RESPONSE_SCHEMA,
    SCENARIO_SCHEMA,
    VERDICT_SCHEMA,
)
from losona.core.errors import LosonaError
from losona.core.files import display_path, read_parquet, write_parquet
from losona.core.layout import RunLayout
from losona.dynamic.arms import OK
from losona.dynamic.sample import SEND_ORDER, second_turn_requests
from losona.dynamic.settings import DynamicSettings
from losona.dynamic.tables import (
    DYNAMIC_PROMPT_SCHEMA,
    DYNAMIC_RESPONSE_SCHEMA,
)
from losona.judges.kinds import judge_kind
from losona.judges.run import control_summary
from losona.judges.verdicts import verdict_files
from losona.models import CallNotFound, PublishedCalls, Request, call_key, read_calls
from losona.models.call_store import LOCK_FILE, call_store, recorded_md5
from losona.pipeline.aggregate import run_aggregate
from losona.pipeline.audit import run_audit
from losona.pipeline.calls import run_calls
from losona.pipeline.dynamic_aggregate import run_dynamic_aggregate
from losona.pipeline.dynamic_judge import run_dynamic_judge
from losona.pipeline.dynamic_render import run_dynamic_render
from losona.pipeline.dynamic_sample import run_dynamic_sample
from losona.pipeline.judge import run_judge
from losona.pipeline.judge_controls import run_judge_controls
from losona.pipeline.panel import run_panel
from losona.pipeline.panel_votes import run_panel_votes
from losona.pipeline.plot import run_plot
from losona.pipeline.render import run_render
from losona.pipeline.sample import run_sample
from losona.provenance.lock import check_lock as lock_check
from losona.provenance.record import scenarios_sha256, template_hashes
from losona.reproduce.compare import (
    Check,
    Difference,
    cell_count,
    compare_files,
    compare_json,
    compare_tables,
    same,
)
from losona.reproduce.replay import Replay, replaying
from losona.results.bundle import METRICS
from losona.sampling.sample import condition_prompts, sample_requests


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


def recorded_config(layout: RunLayout, record: Mapping[str, Any], group: str, name: str) -> Any:
    """A model or judge option as the run used it: the config stage's checked copy
    (data/configs/<group>/<name>.json), else what the provenance records of it; never
    conf/ as it is now."""
    path = layout.config(group, name)
    schema = ModelSpec if group == "model" else JudgeConfig
    key = f"{group}s"
    if path.is_file():
        node, origin = json.loads(path.read_text(encoding="utf-8")), display_path(path)
    elif (node := record.get(key, {}).get(name)) is not None:
        origin = f"{display_path(layout.provenance)} ({key}.{name})"
    else:
        raise LosonaError(
            f"{display_path(layout.provenance)}: no '{key}.{name}' and no {display_path(path)}: "
            "the run does not record the config it used; rerun the config and provenance stages"
        )
    return schema.from_config(_settings(node, schema), origin)


def _settings(node: Mapping[str, Any], schema: Any) -> dict[str, Any]:
    """A recorded config's settings: what the schema has and a value was given for (a record
    writes out unset ones as null and adds facts of its own, such as a judge's versions)."""
    settings = {k: v for k, v in node.items() if k in schema.model_fields and v is not None}
    if isinstance(settings.get("model"), Mapping):  # a judge's model
        settings["model"] = _settings(settings["model"], ModelSpec)
    return settings


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


def check_prompts(
    check: Check, conditions: Sequence[str], layout: RunLayout, replay: Replay
) -> None:
    """The prompt table, by the render stage's own function in the replay."""
    with replay.rerun(partial(run_render, conditions)):
        compare_written(check, replay)


# What a stage writes that is not compared value by value, and why.
NOT_COMPARED = {
    ".png": "a figure as drawn: the numbers it shows are its .csv, compared",
    ".svg": "a figure as drawn: the numbers it shows are its .csv, compared",
    ".log.json": "a run log: its latency and timing differ on every run, so it is no output",
}


def compare_written(
    check: Check, replay: Replay, *, skip_files: Sequence[str] = (), skip_keys: Sequence[str] = ()
) -> None:
    """Every file the stage just run again in `replay` wrote, against the run's: each output,
    value by value (`skip_files`: names not rechecked, `skip_keys`: JSON keys not rechecked;
    the caller notes why), NOT_COMPARED aside."""
    for again in replay.written:
        if again.name.endswith(tuple(NOT_COMPARED)) or again.name in skip_files:
            continue
        original = replay.original(again)
        file = display_path(original)
        if not original.is_file():
            # dvc.lock holds a run's outputs (check_lock): one it does not is not the run's.
            check.notes.append(f"{file}: absent, not rechecked")
            continue
        check.add(file, *compare_files(file, again, original, skip=skip_keys))


def check_samples(
    check: Check,
    record: Mapping[str, Any],
    trials: int,
    layout: RunLayout,
    published: PublishedCalls,
    replay: Replay,
) -> None:
    """Every cell's responses, by the sample stage's own function in the replay: K trials
    of each prompt (`trials`, as the provenance records), each answered from the run's
    published calls alone; a call that is not there is named."""
    settings = SamplingSettings(trials=trials, dry_run=False, max_cost_usd=None)
    sweep = record["sweep"]
    for model in sweep["models"]:
        for condition in sweep["conditions"]:
            path = layout.responses(model, condition)
            if not path.is_file():
                continue  # named by the verdict checks, which need it too
            stage = partial(
                run_sample,
                settings,
                spec=recorded_config(layout, record, "model", model),
                condition=option("condition", condition),
                dataset=_no_dataset,
            )
            try:
                with replay.rerun(stage):
                    compare_written(check, replay)
            except CallNotFound as exc:
                _calls_missing(check, layout, f"sample {model}/{condition}", exc)


def _no_dataset() -> DatasetConfig:
    raise LosonaError("reproduce samples from the run's prompt table, never the dataset")


def check_merged_calls(
    check: Check,
    sweep: Mapping[str, Sequence[str]],
    dynamic: DynamicRun | None,
    layout: RunLayout,
    published: PublishedCalls,
    replay: Replay,
) -> None:
    """The run's calls file, by the calls stage's own function in the replay, merging the
    cells' calls files; with one of them absent (noted by `check_calls`), not rechecked."""
    settings = dynamic.settings if dynamic is not None else DYNAMIC_OFF
    if not all(
        p.is_file() for p in layout.sweep_calls(sweep) + layout.dynamic_call_files(settings)
    ):
        return
    with replay.rerun(partial(run_calls, sweep=sweep, dynamic=settings)):
        compare_written(check, replay)


def check_judgements(
    check: Check,
    scenarios: pl.DataFrame,
    record: Mapping[str, Any],
    layout: RunLayout,
    replay: Replay | None = None,
) -> None:
    """Verdicts against the responses they judge, each verdict file judged again by the
    judge stage's own function (`run_judge`) in a replay of the run (`replay`, or one of its
    own), with the judge config the run recorded (`record`, the provenance) and the
    `scenarios` given: the rules for free, an LLM judge answered from the run's published
    calls alone. An LLM judge with no published calls to answer it is held to the response
    it quotes. A panel's verdicts are its stage's (`check_panels`).
    """
    with _replay_of(layout, replay) as replay:
        write_parquet(scenarios, replay.scratch.scenarios)
        published = call_store(replay.scratch).published
        for path, (judge, model, condition) in verdict_files(layout.verdicts_folder):
            responses_path = layout.responses(model, condition)
            if not responses_path.is_file():
                check.notes.append(
                    f"{display_path(path)}: not rechecked against responses "
                    f"({display_path(responses_path)} is absent)"
                )
                continue
            if judge not in record["judges"]:
                continue  # noted by check_run: outside the recorded sweep
            config = recorded_config(layout, record, "judge", judge)
            if judge_kind_settings(config.kind).combines:
                continue
            if config.model is None or (published is not None and published.expected):
                stage = partial(
                    run_judge,
                    config,
                    model=recorded_config(layout, record, "model", model),
                    condition=option("condition", condition),
                )
                try:
                    with replay.rerun(stage):
                        compare_written(check, replay)
                except CallNotFound as exc:
                    _calls_missing(check, layout, f"judge {judge} on {model}/{condition}", exc)
                continue
            found = read_parquet(path, VERDICT_SCHEMA, made_by="judge").sort("scenario_id", "trial")
            responses = read_parquet(responses_path, RESPONSE_SCHEMA, made_by="sample")
            expected = _quoting(found, responses).sort("scenario_id", "trial")
            file = display_path(path)
            check.add(file, cell_count(expected), compare_tables(file, expected, found))


def check_panels(
    check: Check, record: Mapping[str, Any], layout: RunLayout, replay: Replay
) -> None:
    """Each panel of the sweep by its own stages in the replay: its members' votes copied
    again (panel_votes), then combined again (panel) into every cell's verdicts, its
    validity controls and their summary."""
    sweep = record["sweep"]
    for name in sweep.get("panels", ()):
        panel = recorded_config(layout, record, "judge", name)
        for member in sweep["judges"]:
            with replay.rerun(partial(run_panel_votes, panel, member=member, sweep=sweep)):
                compare_written(check, replay)
        with replay.rerun(partial(run_panel, panel, judges=sweep["judges"])):
            compare_written(check, replay)


@contextmanager
def _replay_of(layout: RunLayout, replay: Replay | None) -> Iterator[Replay]:
    """`replay`, or a replay of the run of its own while the caller needs it."""
    if replay is not None:
        yield replay
        return
    with replaying(layout) as own:
        yield own


def _calls_missing(check: Check, layout: RunLayout, where: str, missing: CallNotFound) -> None:
    """A stage run again needed a call the run's published calls do not hold."""
    file = display_path(layout.calls) if layout.calls is not None else "paths.calls"
    check.add(file, 1, [Difference(file, where, "calls", "all present", str(missing))])


def _quoting(found: pl.DataFrame, responses: pl.DataFrame) -> pl.DataFrame:
    """Verdicts that nothing can judge again offline, as they must be: each quoting the
    response of its scenario and trial."""
    expected = found.with_columns(pl.lit(None, pl.String).alias("response")).update(
        responses.select("scenario_id", "trial", "response"),
        on=["scenario_id", "trial"],
        how="left",
    )
    return expected.select(found.columns)


def _no_model_calls(name: str) -> JudgeConfig:
    raise LosonaError(f"reproduce makes no model calls (judge '{name}' would be re-judged)")


def check_run(layout: RunLayout, dynamic: DynamicRun | None = None) -> Check:
    """Recompute every reported number of the run `layout` places (conf/paths) and compare.

    Each stage from render on is run again by its own function in a replay of the run
    (losona/reproduce/replay.py), its model calls answered from the run's published calls
    alone (sample only when the run published them), and its outputs are compared with the
    run's. With `dynamic` (the extension on), its stages are replayed and compared too
    (`check_dynamic`). Fetch's scenarios and the templates are held to the hashes the
    provenance records instead: the dataset may not be reachable from here, and the
    provenance itself records this machine's packages, which another machine's differ from.
    """
    check = Check()
    record = read_provenance(layout.provenance)
    provenance_file = display_path(layout.provenance)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    check.add(layout.provenance, *check_inputs(record, scenarios, provenance_file))

    recorded_kinds = {j: node.get("kind") for j, node in record["judges"].items()}
    sweep = record["sweep"]
    inputs = audit_inputs(layout.verdicts_folder, sweep, recorded_kinds)
    check.add(
        layout.verdicts_folder,
        *check_verdict_origins(inputs.verdicts, record, display_path(layout.verdicts_folder)),
    )
    unrecorded = sorted(set(inputs.judges) - set(record["judges"]))
    if unrecorded:
        check.notes.append(
            f"judge(s) {unrecorded} have verdicts but are not in the provenance's sweep"
        )
    bootstrap = AggregateSettings.from_config(
        record["aggregate"]["bootstrap"], origin=provenance_file, key="aggregate.bootstrap"
    )
    published = published_calls(layout)
    with replaying(layout) as replay:
        if layout.prompts.is_file():
            check_prompts(check, sweep["conditions"], layout, replay)
        trials = (record.get("sampling") or {}).get("trials")
        if published is not None and isinstance(trials, int):
            check_samples(check, record, trials, layout, published, replay)
        elif published is not None:
            check.notes.append(
                f"{provenance_file} records no K: the responses are not sampled again"
            )
        check_judgements(check, scenarios, record, layout, replay)
        judges = [j for j in inputs.kinds if j in record["judges"]]
        check_controls(check, record, judges, layout, replay)
        check_panels(check, record, layout, replay)
        with replay.rerun(partial(run_aggregate, bootstrap, sweep=sweep)):
            compare_written(check, replay)
        if (layout.audit_folder / METRICS).is_file():
            check_audit(check, layout, replay, sweep, bootstrap)
        else:
            check.notes.append(f"{display_path(layout.audit_folder)}: no audit in this run")
        if layout.figures_folder.is_dir():
            settings = dynamic.settings if dynamic is not None else DYNAMIC_OFF
            check_figures(check, layout, replay, settings)
        check_calls(check, record, layout, published)
        if dynamic is not None and dynamic.settings.on:
            check_dynamic(check, dynamic, record, layout, bootstrap, published, replay)
        if published is not None:
            check_merged_calls(check, sweep, dynamic, layout, published, replay)
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
    record: Mapping[str, Any],
    layout: RunLayout,
    published: PublishedCalls | None,
) -> None:
    """The run's published calls (`published`, read once for every check of the run): every
    cell's calls in the run's file, every response in them (`check_responses_against_calls`)."""
    if layout.calls is None:
        check.notes.append("paths.calls is null: the run's calls are not rechecked")
        return
    if published is None:
        return  # a run that published no calls, like one without figures: nothing to check
    sweep = record["sweep"]
    check_call_files(
        check, layout.sweep_calls(sweep), display_path(published.path), published.rows_by_key
    )
    prompts = read_parquet(layout.prompts, PROMPT_SCHEMA, made_by="render")
    for model in sweep["models"]:
        spec = recorded_config(layout, record, "model", model)
        for condition in sweep["conditions"]:
            path = layout.responses(model, condition)
            if not path.is_file():
                continue  # named by the verdict checks, which need it too
            responses = read_parquet(path, RESPONSE_SCHEMA, made_by="sample")
            # The requests the sample stage sends, K trials of each prompt in turn.
            rows = condition_prompts(prompts, condition)
            trials: int = responses.select(pl.col("trial").max() + 1).item()
            ids = [sid for sid in rows["scenario_id"] for _ in range(trials)]
            sent = {
                (sid, request.trial): request
                for sid, request in zip(ids, sample_requests(rows, trials), strict=True)
            }
            cell = f"subject_model={model}, condition={condition}"
            check_responses_against_calls(
                check, published, spec, responses, sent, ("scenario_id", "trial"), cell
            )


def check_responses_against_calls(
    check: Check,
    published: PublishedCalls,
    spec: ModelSpec,
    responses: pl.DataFrame,
    sent: Mapping[tuple[Any, ...], Request],
    by: Sequence[str],
    cell: str,
) -> None:
    """Every response row is the published call its request (`sent`, by the columns `by`)
    was answered with, looked up by the key the stages cache that call under."""
    file, by_key, missing = display_path(published.path), published.rows_by_key, "(missing)"
    differences, compared = [], 0
    for row in responses.iter_rows(named=True):
        at = tuple(row[c] for c in by)
        request = sent.get(at, Request(messages=(), trial=row["trial"]))
        key = call_key(spec, request)
        call = by_key.get(key, {})
        where = (
            f"key {key} ({cell}, "
            + ", ".join(f"{c}={v}" for c, v in zip(by, at, strict=True))
            + ")"
        )
        compared += len(RESPONSE_FROM_CALL)
        differences += [
            Difference(file, where, column, row[response_column], call.get(column, missing))
            for column, response_column in RESPONSE_FROM_CALL.items()
            if not same(row[response_column], call.get(column, missing))
        ]
    check.add(published.path, compared, differences)


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


def check_controls(
    check: Check,
    record: Mapping[str, Any],
    judges: Sequence[str],
    layout: RunLayout,
    replay: Replay,
) -> None:
    """Each judge's validity controls (data/judge_controls/) and their summary
    (reports/judge_controls/), by the judge_controls stage's own function in the replay,
    with the judge config the run recorded. An LLM judge with no published calls to answer
    it has its summary recomputed from its control verdicts; a panel's are its stage's."""
    published = call_store(replay.scratch).published
    for judge in judges:
        config = recorded_config(layout, record, "judge", judge)
        table_path = layout.controls(judge)
        summary_path = layout.controls_summary(judge)
        if judge_kind_settings(config.kind).combines:
            continue
        if not table_path.is_file():
            check.notes.append(f"{display_path(table_path)}: no validity controls for '{judge}'")
            continue
        reported = _json_of(summary_path, judge)
        if config.model is None or (published is not None and published.expected):
            # Judged again whatever they show: the run judged them, and so does the check.
            stage = partial(run_judge_controls, config, ControlsSettings(judge_anyway=True))
            try:
                with replay.rerun(stage):
                    compare_written(check, replay)
            except CallNotFound as exc:
                _calls_missing(check, layout, f"judge_controls {judge}", exc)
            continue
        found = read_parquet(table_path, CONTROL_SCHEMA, made_by="judge_controls")
        file = display_path(summary_path)
        check.add(file, *compare_json(file, {judge: control_summary(found)}, reported))


def _json_of(path: Path, judge: str) -> Any:
    file = display_path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LosonaError(
            f"{file} not found: run the judge_controls stage "
            f"(python stages/judge_controls.py judge={judge}, or dvc repro)"
        ) from None
    except json.JSONDecodeError as exc:
        raise LosonaError(f"{file}: not a JSON file ({exc})") from None


def check_audit(
    check: Check,
    layout: RunLayout,
    replay: Replay,
    sweep: Mapping[str, Sequence[str]],
    bootstrap: AggregateSettings,
) -> None:
    """The judge audit's tables and metrics, by the audit stage's own function in the
    replay, with no judge judged again; re-judged determinism figures are only noted."""
    root = layout.audit_folder
    rejudged = read_audit(root)["determinism.csv"].filter(pl.col("method") == "re-judged")
    if rejudged.height:
        check.notes.append(
            f"{display_path(root / 'determinism.csv')}: judges {rejudged['judge'].to_list()} "
            "were re-judged by model calls; those figures are not rechecked"
        )
    skip = rejudged.height > 0
    no_rejudging = DeterminismSettings(repeats=0)
    with replay.rerun(
        partial(
            run_audit, no_rejudging, sweep=sweep, bootstrap=bootstrap, judge_config=_no_model_calls
        )
    ):
        compare_written(
            check,
            replay,
            skip_files=DETERMINISM_FILES if skip else (),
            skip_keys=("determinism",) if skip else (),
        )


def check_figures(
    check: Check, layout: RunLayout, replay: Replay, dynamic: DynamicSettings
) -> None:
    """Everything the plot stage writes again in the replay: the numbers behind each figure
    (<figure>.csv; the drawings are NOT_COMPARED) and the report page."""
    with replay.rerun(partial(run_plot, dynamic=dynamic)):
        compare_written(check, replay)


# -- the dynamic extension ------------------------------------------------------------------------


@dataclass(frozen=True)
class DynamicRun:
    """What checking the dynamic extension needs beyond the layout: its settings, and the
    dataset and sampling settings its render stage reads."""

    settings: DynamicSettings
    dataset: DatasetConfig
    sampling: SamplingSettings


# The dynamic extension's settings while it is off: no judge, so no cell.
DYNAMIC_OFF = DynamicSettings(
    judges=(), models=(), conditions=(), source="scripted", group_model="smollm2"
)


def check_dynamic(
    check: Check,
    run: DynamicRun,
    record: Mapping[str, Any],
    layout: RunLayout,
    bootstrap: AggregateSettings,
    published: PublishedCalls | None,
    replay: Replay,
) -> None:
    """The dynamic extension's files, stage by stage, each by the stage's own function in
    the replay, from the first turn's files, with no call.

    Each cell's prompts are rendered again from its first-turn verdicts (scripted
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
        for model in settings.models:
            for condition in settings.conditions:
                _check_dynamic_cell(check, run, record, layout, (judge, model, condition), replay)
        with replay.rerun(
            partial(
                run_dynamic_aggregate,
                settings,
                judge=judge,
                bootstrap=bootstrap,
                sweep=record["sweep"],
            )
        ):
            compare_written(check, replay)


def _check_dynamic_cell(
    check: Check,
    run: DynamicRun,
    record: Mapping[str, Any],
    layout: RunLayout,
    cell: tuple[str, str, str],
    replay: Replay,
) -> None:
    judge, model, condition = cell
    prompts_file = layout.dynamic_prompts(*cell)
    responses_file = layout.dynamic_responses(*cell)
    verdicts_file = layout.dynamic_verdicts(*cell)
    prompts = read_parquet(prompts_file, DYNAMIC_PROMPT_SCHEMA, made_by="dynamic_render")
    responses = read_parquet(responses_file, DYNAMIC_RESPONSE_SCHEMA, made_by="dynamic_sample")
    sampling = run.sampling.model_copy(update={"dry_run": False})
    published = call_store(replay.scratch).published
    if published is not None and not published.expected:
        published = None
    spec = recorded_config(layout, record, "model", model)
    config = recorded_config(layout, record, "judge", judge)
    try:
        with replay.rerun(
            partial(
                run_dynamic_render,
                run.settings,
                cell=cell,
                sampling=sampling,
                dataset=run.dataset,
            )
        ):
            compare_written(check, replay)
        if published is not None:  # as the first turn's: only published calls answer it
            stage = partial(run_dynamic_sample, sampling, judge=judge, spec=spec)
            with replay.rerun(partial(stage, condition=condition)):
                compare_written(check, replay)
        if config.model is not None and published is None:
            check.notes.append(
                f"{display_path(verdicts_file)}: not judged again (an LLM judge, and no "
                "published calls to answer it)"
            )
        else:
            with replay.rerun(
                partial(
                    run_dynamic_judge, config, model=spec, condition=option("condition", condition)
                )
            ):
                compare_written(check, replay)
    except CallNotFound as exc:
        _calls_missing(check, layout, f"dynamic cell {judge}/{model}/{condition}", exc)
    _check_second_replies(check, spec, prompts, responses, published)


def _check_second_replies(
    check: Check,
    spec: ModelSpec,
    prompts: pl.DataFrame,
    responses: pl.DataFrame,
    published: PublishedCalls | None,
) -> None:
    """Every second reply is the published call its prompt and trial were answered with."""
    if published is None:
        return
    rendered = prompts.filter(pl.col("status") == OK).sort(SEND_ORDER, maintain_order=True)
    sent = dict(
        zip(rendered.select(SEND_ORDER).iter_rows(), second_turn_requests(prompts), strict=True)
    )
    cell = f"dynamic, subject_model={spec.name}"
    check_responses_against_calls(check, published, spec, responses, sent, SEND_ORDER, cell)
