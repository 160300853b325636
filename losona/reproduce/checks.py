"""The checks of a run (the whole list: losona/reproduce/__init__.py): the pipeline's table
run again, stage by stage, on the run's own files, and the run's inputs, calls and dvc.lock
held to its provenance record.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from losona.audit.files import DETERMINISM_FILES, read_audit
from losona.audit.inputs import audit_inputs
from losona.core.config import ModelSpec
from losona.core.contracts import (
    CONTROL_SCHEMA,
    PROMPT_SCHEMA,
    RESPONSE_SCHEMA,
    SCENARIO_SCHEMA,
    VERDICT_SCHEMA,
)
from losona.core.errors import LosonaError
from losona.core.files import display_path, read_parquet
from losona.core.layout import RunLayout
from losona.judges.kinds import judge_kind
from losona.judges.run import control_summary
from losona.models import CallNotFound, PublishedCalls, Request, call_key
from losona.models.call_store import LOCK_FILE, recorded_md5
from losona.pipeline.command import Cell, Settings
from losona.pipeline.table import STAGES, Stage
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
from losona.reproduce.recorded import RecordedSettings, read_provenance
from losona.reproduce.replay import Replay, replaying
from losona.results.bundle import METRICS
from losona.sampling.sample import condition_prompts, sample_requests

# The stages not run again, and why.
NOT_RERUN = {
    "preflight": "it checks a run's settings before its first stage; the run's are recorded",
    "fetch": "the dataset may not be reachable from here: the scenarios are held to the "
    "hash the provenance records",
    "model_config": "its file is the config the other stages are run again with",
    "judge_config": "its file is the config the other stages are run again with",
    "panel_config": "its file is the config the other stages are run again with",
    "provenance": "it records this machine's packages, which another's differ from: the run "
    "is held to the record instead",
}

# What a stage writes that is not compared value by value, and why.
NOT_COMPARED = {
    ".png": "a figure as drawn: the numbers it shows are its .csv, compared",
    ".svg": "a figure as drawn: the numbers it shows are its .csv, compared",
    ".log.json": "a run log: its latency and timing differ on every run, so it is no output",
}


def check_run(layout: RunLayout, repository: Settings | None = None) -> Check:
    """Recompute every reported number of the run `layout` places, and compare.

    Every stage of the pipeline's table but NOT_RERUN runs again on each of its cells, by its
    own function, in a replay of the run (losona/reproduce/replay.py): with the settings the
    run records (`RecordedSettings`; the dynamic turn's are `repository`'s, off without it),
    every model call answered from the run's published calls alone. Fetch's scenarios and the
    templates are held to the hashes the provenance records instead.
    """
    check = Check()
    record = read_provenance(layout.provenance)
    settings = RecordedSettings(layout, record, repository)
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
    if published is not None and settings.trials is None:
        check.notes.append(f"{provenance_file} records no K: the responses are not sampled again")
    with replaying(layout) as replay:
        check_stages(check, settings, layout, replay)
    check_calls(check, settings, layout, published)
    check_lock(check)
    return check


def check_stages(
    check: Check,
    settings: RecordedSettings,
    layout: RunLayout,
    replay: Replay,
    only: Collection[str] = (),
) -> None:
    """Each stage of the table but NOT_RERUN (`only`: those named), on each of its cells, run
    again in `replay` and every file it writes compared with the run's; where the run has no
    file to start from, or published no calls to answer a model call, as INSTEAD says."""
    answered = published_calls(layout) is not None
    for stage in STAGES:
        if stage.name in NOT_RERUN or (only and stage.name not in only):
            continue
        for cell in stage.cells_of(settings):
            instead = INSTEAD.get(stage.name)
            if instead is not None and instead(check, settings, layout, cell, answered):
                continue
            _rerun(check, stage, settings, cell, replay)


def _rerun(check: Check, stage: Stage, settings: Settings, cell: Cell, replay: Replay) -> None:
    run = stage.run
    assert run is not None  # NOT_RERUN holds the stages only their command runs
    rejudged = stage.name == "audit" and _rejudged(replay.scratch)
    skip = {"skip_files": DETERMINISM_FILES, "skip_keys": ("determinism",)} if rejudged else {}
    try:
        with replay.rerun(lambda scratch: run(settings, scratch, cell)):
            compare_written(check, replay, **skip)
    except CallNotFound as exc:
        at = ", ".join(f"{key}={value}" for key, value in cell.items())
        file = display_path(replay.original(replay.scratch.calls)) if replay.scratch.calls else ""
        check.add(
            file, 1, [Difference(file, f"{stage.name} {at}", "calls", "all present", str(exc))]
        )


def compare_written(
    check: Check, replay: Replay, skip_files: Sequence[str] = (), skip_keys: Sequence[str] = ()
) -> None:
    """Every file the stage just run again in `replay` wrote, against the run's: each output,
    value by value (`skip_files`: names not rechecked, `skip_keys`: JSON keys not rechecked),
    NOT_COMPARED aside."""
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


# -- what is checked instead of running a stage again on a cell -------------------------------
# Each returns True when it took the cell's place: no run's file to start from, or a model
# call that only the run's published calls could answer, and the run published none.

Instead = Callable[[Check, RecordedSettings, RunLayout, Cell, bool], bool]


def _render_instead(
    check: Check, settings: RecordedSettings, layout: RunLayout, cell: Cell, answered: bool
) -> bool:
    return not layout.prompts.is_file()  # a run made from its responses on (tests' runs)


def _sample_instead(
    check: Check, settings: RecordedSettings, layout: RunLayout, cell: Cell, answered: bool
) -> bool:
    # Only published calls answer it; an absent responses file is named by the judge's check.
    responses = layout.responses(cell["model"], cell["condition"])
    return not answered or settings.trials is None or not responses.is_file()


def _judge_instead(
    check: Check, settings: RecordedSettings, layout: RunLayout, cell: Cell, answered: bool
) -> bool:
    path = layout.verdicts(cell["judge"], cell["model"], cell["condition"])
    responses_path = layout.responses(cell["model"], cell["condition"])
    if not responses_path.is_file():
        check.notes.append(
            f"{display_path(path)}: not rechecked against responses "
            f"({display_path(responses_path)} is absent)"
        )
        return True
    if answered or settings.option("judge", cell["judge"]).model is None or not path.is_file():
        return False
    # An LLM judge with no published calls to answer it: each verdict quotes its response.
    found = read_parquet(path, VERDICT_SCHEMA, made_by="judge").sort("scenario_id", "trial")
    responses = read_parquet(responses_path, RESPONSE_SCHEMA, made_by="sample")
    expected = found.with_columns(pl.lit(None, pl.String).alias("response")).update(
        responses.select("scenario_id", "trial", "response"), on=["scenario_id", "trial"]
    )
    file = display_path(path)
    check.add(
        file, cell_count(expected), compare_tables(file, expected.select(found.columns), found)
    )
    return True


def _controls_instead(
    check: Check, settings: RecordedSettings, layout: RunLayout, cell: Cell, answered: bool
) -> bool:
    judge = cell["judge"]
    table_path, summary_path = layout.controls(judge), layout.controls_summary(judge)
    if not table_path.is_file():
        check.notes.append(f"{display_path(table_path)}: no validity controls for '{judge}'")
        return True
    if answered or settings.option("judge", judge).model is None:
        return False
    # An LLM judge with no published calls to answer it: its summary, from its verdicts.
    found = read_parquet(table_path, CONTROL_SCHEMA, made_by="judge_controls")
    file = display_path(summary_path)
    check.add(file, *compare_json(file, {judge: control_summary(found)}, _json_of(summary_path)))
    return True


def _dynamic_sample_instead(
    check: Check, settings: RecordedSettings, layout: RunLayout, cell: Cell, answered: bool
) -> bool:
    return not answered  # as the first turn's: only published calls answer it


def _dynamic_judge_instead(
    check: Check, settings: RecordedSettings, layout: RunLayout, cell: Cell, answered: bool
) -> bool:
    if answered or settings.option("judge", cell["judge"]).model is None:
        return False
    verdicts = layout.dynamic_verdicts(cell["judge"], cell["model"], cell["condition"])
    check.notes.append(
        f"{display_path(verdicts)}: not judged again (an LLM judge, and no published calls "
        "to answer it)"
    )
    return True


def _audit_instead(
    check: Check, settings: RecordedSettings, layout: RunLayout, cell: Cell, answered: bool
) -> bool:
    if not (layout.audit_folder / METRICS).is_file():
        check.notes.append(f"{display_path(layout.audit_folder)}: no audit in this run")
        return True
    if rejudged := _rejudged(layout):
        check.notes.append(
            f"{display_path(layout.audit_folder / 'determinism.csv')}: judges {rejudged} were "
            "re-judged by model calls; those figures are not rechecked"
        )
    return False


def _rejudged(layout: RunLayout) -> list[str]:
    """The judges whose determinism the run's audit measured by judging again: those
    figures came from model calls, so they are not rechecked."""
    table = read_audit(layout.audit_folder)["determinism.csv"]
    judges: list[str] = table.filter(pl.col("method") == "re-judged")["judge"].to_list()
    return judges


def _plot_instead(
    check: Check, settings: RecordedSettings, layout: RunLayout, cell: Cell, answered: bool
) -> bool:
    return not layout.figures_folder.is_dir()


def _calls_instead(
    check: Check, settings: RecordedSettings, layout: RunLayout, cell: Cell, answered: bool
) -> bool:
    # A cell's calls file absent is named by the stage that writes it, run again.
    sweep, dynamic = settings.group("sweep"), settings.group("dynamic")
    files = layout.sweep_calls(sweep) + layout.dynamic_call_files(dynamic)
    return not answered or not all(path.is_file() for path in files)


INSTEAD: dict[str, Instead] = {
    "render": _render_instead,
    "sample": _sample_instead,
    "judge": _judge_instead,
    "judge_controls": _controls_instead,
    "dynamic_sample": _dynamic_sample_instead,
    "dynamic_judge": _dynamic_judge_instead,
    "audit": _audit_instead,
    "plot": _plot_instead,
    "calls": _calls_instead,
}


def _json_of(path: Path) -> Any:
    file = display_path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise LosonaError(f"{file} not found: run the judge_controls stage (dvc repro)") from None
    except json.JSONDecodeError as exc:
        raise LosonaError(f"{file}: not a JSON file ({exc})") from None


# -- the run's inputs and calls against its record -------------------------------------------


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


# What a response row holds of the call it came from, by the calls table's column.
RESPONSE_FROM_CALL = {
    "text": "response",
    "finish_reason": "finish_reason",
    "prompt_tokens": "prompt_tokens",
    "completion_tokens": "completion_tokens",
    "cost_usd": "cost_usd",
}


def check_calls(
    check: Check, settings: RecordedSettings, layout: RunLayout, published: PublishedCalls | None
) -> None:
    """Every first-turn response is the published call its request was answered with, even
    in a run that records no K (so is not sampled again). That every cell's calls are in the
    run's file, and every second reply its call, the calls and dynamic_sample stages show,
    run again."""
    if layout.calls is None:
        check.notes.append("paths.calls is null: the run's calls are not rechecked")
        return
    if published is None:
        return  # a run that published no calls, like one without figures: nothing to check
    sweep = settings.group("sweep")
    prompts = read_parquet(layout.prompts, PROMPT_SCHEMA, made_by="render")
    for model in sweep["models"]:
        spec = settings.option("model", model)
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
            check_responses_against_calls(check, published, spec, responses, sent, cell)


def check_responses_against_calls(
    check: Check,
    published: PublishedCalls,
    spec: ModelSpec,
    responses: pl.DataFrame,
    sent: Mapping[tuple[Any, ...], Request],
    cell: str,
) -> None:
    """Every response row is the published call its request (`sent`, by scenario and trial)
    was answered with, looked up by the key the stages cache that call under."""
    by = ("scenario_id", "trial")
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


def check_lock(check: Check) -> None:
    """Every output file against the md5 dvc.lock records, and dvc.lock against git HEAD's.

    The first catches a table or calls file rewritten outside DVC; the second a run
    recomputed and recorded again (dvc.lock rewritten to match) since it was committed:
    its files agree with each other, but they are no longer the run that was published.
    A folder output is left to `dvc status`. Without a dvc.lock there is nothing to hold.
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
