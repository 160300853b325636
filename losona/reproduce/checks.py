"""A run checked: the pipeline's table run again on the run's own files, and its inputs,
verdicts and dvc.lock held to its record (docs/reproducing.md)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from losona.audit.files import DETERMINISM_FILES, read_audit
from losona.audit.inputs import audit_inputs
from losona.core.contracts import CONTROL_SCHEMA, RESPONSE_SCHEMA, SCENARIO_SCHEMA, VERDICT_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import display_path, read_json_object, read_parquet
from losona.core.layout import RunLayout
from losona.judges.kinds import judge_kind
from losona.judges.run import control_summary
from losona.models import CallNotFound
from losona.models.call_store import LOCK_FILE, recorded_md5
from losona.pipeline.command import Cell, Settings
from losona.pipeline.recorded import RecordedSettings
from losona.pipeline.table import STAGES, Stage
from losona.provenance.lock import check_lock as lock_check
from losona.provenance.record import read_provenance, scenarios_sha256, template_hashes
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

# The stages not run again, and why.
CONFIG = "its file is the config the other stages are run again with"
NOT_RERUN = {
    "preflight": "it checks settings before a run; the run's are recorded",
    "fetch": "the dataset may be out of reach: the scenarios are held to the recorded hash",
    "model_config": CONFIG,
    "judge_config": CONFIG,
    "panel_config": CONFIG,
    "provenance": "it records this machine's packages: the run is held to its record instead",
}

# What a stage writes that is not compared value by value, and why.
DRAWN = "a figure as drawn: the numbers it shows are its .csv, compared"
NOT_COMPARED = {".png": DRAWN, ".svg": DRAWN, ".log.json": "a run log: its timings differ"}


@dataclass(frozen=True)
class Run:
    """The run being checked: what was found so far, its settings and files, and whether it
    published calls to answer a model call."""

    check: Check
    settings: RecordedSettings
    layout: RunLayout
    answered: bool


def check_run(layout: RunLayout, repository: Settings | None = None) -> Check:
    """Every stage but NOT_RERUN run again on the run `layout` places, in a replay of it, with
    the settings it records (the dynamic turn's: `repository`'s, off without it), and compared;
    its scenarios and templates held to the recorded hashes."""
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
    answered = published_calls(layout)
    if layout.calls is None:
        check.notes.append("paths.calls is null: the run's calls are not rechecked")
    elif answered and settings.trials is None:
        check.notes.append(f"{provenance_file} records no K: the responses are not sampled again")
    with replaying(layout) as replay:
        check_stages(Run(check, settings, layout, answered), replay)
    check_lock(check)
    return check


def check_stages(run: Run, replay: Replay, only: Collection[str] = ()) -> None:
    """Each stage but NOT_RERUN (`only`: those named), on each of its cells, run again in
    `replay` and what it writes compared; or, where INSTEAD says so, checked otherwise."""
    for stage in STAGES:
        if stage.name in NOT_RERUN or (only and stage.name not in only):
            continue
        for cell in stage.cells_of(run.settings):
            instead = INSTEAD.get(stage.name)
            if instead is None or not instead(run, cell):
                _rerun(run, stage, cell, replay)


def _rerun(run: Run, stage: Stage, cell: Cell, replay: Replay) -> None:
    stage_run = stage.run
    assert stage_run is not None  # NOT_RERUN holds the stages only their command runs
    rejudged = stage.name == "audit" and _rejudged(replay.scratch)
    skip = {"skip_files": DETERMINISM_FILES, "skip_keys": ("determinism",)} if rejudged else {}
    try:
        with replay.rerun(lambda scratch: stage_run(run.settings, scratch, cell)):
            compare_written(run.check, replay, **skip)
    except CallNotFound as exc:
        at = ", ".join(f"{key}={value}" for key, value in cell.items())
        file = display_path(replay.original(replay.scratch.calls)) if replay.scratch.calls else ""
        run.check.add(
            file, 1, [Difference(file, f"{stage.name} {at}", "calls", "all present", str(exc))]
        )


def compare_written(
    check: Check, replay: Replay, skip_files: Sequence[str] = (), skip_keys: Sequence[str] = ()
) -> None:
    """Each file the stage just run again wrote, NOT_COMPARED aside, against the run's, value
    by value (`skip_files`, `skip_keys`: file names and JSON keys not rechecked)."""
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


Instead = Callable[[Run, Cell], bool]


def _sample_instead(run: Run, cell: Cell) -> bool:
    # Only published calls answer it; an absent responses file is named by the judge's check.
    responses = run.layout.responses(cell["model"], cell["condition"])
    return not run.answered or run.settings.trials is None or not responses.is_file()


def _judge_instead(run: Run, cell: Cell) -> bool:
    path = run.layout.verdicts(cell["judge"], cell["model"], cell["condition"])
    responses_path = run.layout.responses(cell["model"], cell["condition"])
    if not responses_path.is_file():
        run.check.notes.append(
            f"{display_path(path)}: not rechecked against responses "
            f"({display_path(responses_path)} is absent)"
        )
        return True
    if run.answered or _calls_no_model(run, cell) or not path.is_file():
        return False
    # An LLM judge with no published calls to answer it: each verdict quotes its response.
    found = read_parquet(path, VERDICT_SCHEMA, made_by="judge").sort("scenario_id", "trial")
    responses = read_parquet(responses_path, RESPONSE_SCHEMA, made_by="sample")
    expected = found.with_columns(pl.lit(None, pl.String).alias("response")).update(
        responses.select("scenario_id", "trial", "response"), on=["scenario_id", "trial"]
    )
    file = display_path(path)
    run.check.add(
        file, cell_count(expected), compare_tables(file, expected.select(found.columns), found)
    )
    return True


def _controls_instead(run: Run, cell: Cell) -> bool:
    judge = cell["judge"]
    table_path, summary_path = run.layout.controls(judge), run.layout.controls_summary(judge)
    if not table_path.is_file():
        run.check.notes.append(f"{display_path(table_path)}: no validity controls for '{judge}'")
        return True
    if run.answered or _calls_no_model(run, cell):
        return False
    # An LLM judge with no published calls to answer it: its summary, from its verdicts.
    found = read_parquet(table_path, CONTROL_SCHEMA, made_by="judge_controls")
    summary = read_json_object(summary_path, (judge,), "run the judge_controls stage (dvc repro)")
    file = display_path(summary_path)
    run.check.add(file, *compare_json(file, {judge: control_summary(found)}, summary))
    return True


def _dynamic_judge_instead(run: Run, cell: Cell) -> bool:
    if run.answered or _calls_no_model(run, cell):
        return False
    verdicts = run.layout.dynamic_verdicts(cell["judge"], cell["model"], cell["condition"])
    run.check.notes.append(
        f"{display_path(verdicts)}: not judged again (an LLM judge, and no published calls "
        "to answer it)"
    )
    return True


def _calls_no_model(run: Run, cell: Cell) -> bool:
    return run.settings.option("judge", cell["judge"]).model is None


def _audit_instead(run: Run, cell: Cell) -> bool:
    if not (run.layout.audit_folder / METRICS).is_file():
        run.check.notes.append(f"{display_path(run.layout.audit_folder)}: no audit in this run")
        return True
    if rejudged := _rejudged(run.layout):
        run.check.notes.append(
            f"{display_path(run.layout.audit_folder / 'determinism.csv')}: judges {rejudged} "
            "were re-judged by model calls; those figures are not rechecked"
        )
    return False


def _rejudged(layout: RunLayout) -> list[str]:
    """The judges whose determinism the audit measured by model calls: not rechecked."""
    table = read_audit(layout.audit_folder)["determinism.csv"]
    judges: list[str] = table.filter(pl.col("method") == "re-judged")["judge"].to_list()
    return judges


def _calls_instead(run: Run, cell: Cell) -> bool:
    # A cell's calls file absent is named by the stage that writes it, run again.
    sweep, dynamic = run.settings.group("sweep"), run.settings.group("dynamic")
    files = run.layout.sweep_calls(sweep) + run.layout.dynamic_call_files(dynamic)
    return not run.answered or not all(path.is_file() for path in files)


INSTEAD: dict[str, Instead] = {
    # A run made from its responses on (tests' runs) has no prompt table to start from.
    "render": lambda run, cell: not run.layout.prompts.is_file(),
    "sample": _sample_instead,
    "judge": _judge_instead,
    "judge_controls": _controls_instead,
    "dynamic_sample": lambda run, cell: not run.answered,  # as sample: only published calls
    "dynamic_judge": _dynamic_judge_instead,
    "audit": _audit_instead,
    "plot": lambda run, cell: not run.layout.figures_folder.is_dir(),
    "calls": _calls_instead,
}


# -- the run's inputs and dvc.lock against its record -------------------------------------------


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


def published_calls(layout: RunLayout) -> bool:
    """Whether the run published calls (their bytes: check_lock's); a file dvc.lock records
    must be there."""
    published = layout.calls
    if published is None or published.is_file():
        return published is not None
    if recorded_md5(published) is not None:
        file = display_path(published)
        raise LosonaError(
            f"{file} not found, though dvc.lock records it: get it with `dvc pull {file}`"
        )
    return False


def check_lock(check: Check) -> None:
    """Every output file against dvc.lock's md5 (a file rewritten outside DVC), and dvc.lock
    against git HEAD's (a run recomputed since it was committed); folders are `dvc status`'s."""
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
