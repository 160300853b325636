"""Judging a table: a judge from its config, verdicts for a responses table, and the
validity controls (each scenario's example responses judged, so a broken judge shows)."""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from losona.core.cell_tables import check_cell_table
from losona.core.config import JudgeConfig
from losona.core.contracts import (
    CONTROL_SCHEMA,
    VERDICT_SCHEMA,
    Scenario,
    scenarios_from_table,
    table,
)
from losona.core.errors import LosonaError
from losona.core.files import OnDemand
from losona.core.formatting import percent
from losona.judges.base import (
    NOT_A_VERDICT,
    CallingJudge,
    Judge,
    JudgeCase,
    Judgement,
    JudgementTable,
)
from losona.judges.kinds import judge_kind
from losona.models import CallOptions


def make_judge(config: JudgeConfig | Mapping[str, Any], options: CallOptions) -> Judge:
    """The judge a `conf/judge/*.yaml` node describes (checked here when given plain values);
    an LLM judge's cost is capped by its config's own max_cost_usd, whatever `options` says."""
    if not isinstance(config, JudgeConfig):
        config = JudgeConfig.from_config(config, origin=f"judge '{config.get('name')}'")
    return judge_kind(config).make(config, options)


def verdict_columns(judge: Judge, name: str, judgements: Sequence[Judgement]) -> pl.DataFrame:
    """The verdict columns (VERDICT_SCHEMA's judge part) of each judgement, in order: the
    judgements' own columns (no copy of a JudgementTable's) beside the judge's name."""
    if not isinstance(judgements, JudgementTable):
        judgements = JudgementTable.of(judgements)
    return judgements.table.select(
        pl.lit(name, pl.String).alias("judge"),
        pl.lit(judge.model, pl.String).alias("judge_model"),
        pl.lit(judge.version, pl.String).alias("judge_version"),
        pl.exclude("status", "non_answer"),
        pl.col("status").alias("judge_status"),
        "non_answer",
    )


def name_cell(judge: Judge, cell: str) -> None:
    """Have an LLM judge's progress lines name what it judges (rules make no calls to show)."""
    if isinstance(judge, CallingJudge):
        judge.progress = cell


def judge_responses(
    scenarios: pl.DataFrame,
    responses: pl.DataFrame,
    judge: Judge,
    name: str,
    *,
    model: str,
    condition: str,
    origin: str,
) -> pl.DataFrame:
    """The verdict table for one responses table (one subject model x condition), sorted;
    `origin` names the file in errors. Cases are built as the judge asks for them, so a cell
    of any size holds no prompt, and no row twice."""
    check_cell_table(
        responses,
        origin,
        cell={"subject_model": model, "condition": condition},
        rows="responses",
        rerun="sample",
    )
    unknown = responses.filter(~pl.col("scenario_id").is_in(scenarios["scenario_id"].implode()))
    if not unknown.is_empty():
        raise LosonaError(
            f"{origin}: scenario '{unknown['scenario_id'].sort()[0]}' is not in the scenario "
            "table; rerun sample after fetch"
        )
    name_cell(judge, f"judge {name} on {model}/{condition}")
    # Sample writes its rows in this order: sorting them again would hold them twice.
    order = responses.select(pl.arg_sort_by("scenario_id", "trial")).to_series()
    rows = responses if order.equals(pl.int_range(len(order), eager=True)) else responses[order]
    scenario = _scenarios_by_id(scenarios)
    ids, texts = rows["scenario_id"], rows["response"]
    cases = OnDemand(
        len(ids),
        lambda i: JudgeCase.for_response(
            scenario(ids.slice(i, 1).item()), texts.slice(i, 1).item()
        ),
    )
    keys = rows.select("scenario_id", "trial", "response").join(
        # The last row of an id wins, as in `_scenarios_by_id`.
        scenarios.select("scenario_id", "event_type", "norm_id").unique(
            "scenario_id", keep="last", maintain_order=True
        ),
        on="scenario_id",
        how="left",
        maintain_order="left",
    )
    verdicts = pl.concat(
        [
            keys.select(
                "scenario_id",
                "event_type",
                "norm_id",
                pl.lit(condition, pl.String).alias("condition"),
                pl.lit(model, pl.String).alias("subject_model"),
                "trial",
                "response",
            ),
            verdict_columns(judge, name, judge.judge(cases)),
        ],
        how="horizontal",
    )
    assert verdicts.schema == VERDICT_SCHEMA, verdicts.schema
    # One chunk per column, as a table made of rows has: the bytes written depend on it.
    return verdicts.rechunk()


def _scenarios_by_id(scenarios: pl.DataFrame) -> Callable[[str], Scenario]:
    """A scenario table's scenarios by id, each built when asked for, the last few kept: a
    cell's cases come a scenario's trials together, so each is built about once."""
    # The last row of an id wins, as in a dict built from the rows.
    row_of = {sid: row for row, sid in enumerate(scenarios["scenario_id"].to_list())}

    # A closure, not a cached method of an object that holds the table: such a cache
    # refers back to its object, a cycle only the garbage collector breaks, and the whole
    # scenario table would outlive the judging for as long as it waits.
    @functools.lru_cache(maxsize=8)
    def scenario(scenario_id: str) -> Scenario:
        return Scenario.from_row(scenarios.row(row_of[scenario_id], named=True))

    return scenario


def judge_controls(scenarios: pl.DataFrame, judge: Judge, name: str) -> pl.DataFrame:
    """Each scenario's example compliant and breaching response, judged: the control table."""
    cases, keys = [], []
    for scenario in scenarios_from_table(scenarios):
        for example, expected, response in (
            ("compliant", True, scenario.example_compliant_response),
            ("breaching", False, scenario.example_breaching_response),
        ):
            cases.append(JudgeCase.control(scenario, response))
            keys.append(
                {
                    "scenario_id": scenario.scenario_id,
                    "event_type": scenario.event_type,
                    "norm_id": scenario.norm_id,
                    "example": example,
                    "expected": expected,
                    "response": response,
                }
            )
    name_cell(judge, f"judge_controls {name}")
    fields = verdict_columns(judge, name, judge.judge(cases)).to_dicts()
    rows = [{**key, **field} for key, field in zip(keys, fields, strict=True)]
    return table(rows, CONTROL_SCHEMA, sort_by=["scenario_id", "example"])


def control_summary(controls: pl.DataFrame) -> dict[str, Any]:
    """How many controls the judge got right, overall and per example kind (DVC metrics)."""
    summary: dict[str, Any] = {"judge_model": controls["judge_model"][0]}
    for label in ("all", "compliant", "breaching"):
        part = controls if label == "all" else controls.filter(pl.col("example") == label)
        right = part.filter(pl.col("complies") == pl.col("expected")).height
        unscored = part["complies"].null_count()
        summary[label] = {
            "items": part.height,
            "right": right,
            "wrong": part.height - right - unscored,
            "unscored": unscored,
            "accuracy": percent(right, part.height),
        }
    return summary


def status_counts(verdicts: pl.DataFrame) -> str:
    """A one-line account of a verdict or control table: comply, breach, unscored by reason."""
    complies = Counter(verdicts["complies"].to_list())
    statuses = Counter(verdicts["judge_status"].to_list())
    unscored = ", ".join(f"{n} {s}" for s, n in sorted(statuses.items()) if s != "ok")
    line = f"{complies[True]} comply, {complies[False]} breach, {complies[None]} unscored"
    return f"{line} ({unscored})" if unscored else line


def unscored_notes(verdicts: pl.DataFrame) -> list[str]:
    """What a user should know about the unscored verdicts of a table, one line each."""
    statuses = Counter(verdicts["judge_status"].to_list())
    notes = [
        f"{statuses[status]} judge replies {why}, even after one repair: complies is "
        f"null (judge_status {status}), the raw replies are in `evidence`"
        for status, why in NOT_A_VERDICT.items()
        if statuses[status]
    ]

    if statuses["no_response"]:
        null = "response was" if statuses["no_response"] == 1 else "responses were"
        notes.append(f"{statuses['no_response']} {null} null: nothing to judge")
    return notes
