"""dynamic_render: each first-turn trial of a cell continued into its second-turn
prompt(s), the follow-ups scripted or written by the group model; a trial left out stays
in the table with its status and why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from losona.core.cell_tables import check_cell_table
from losona.core.contracts import Scenario, scenarios_from_table, table
from losona.core.errors import LosonaError
from losona.core.formatting import first_of
from losona.dynamic.arms import (
    CONTINUATION,
    FIRST_TURN_UNSCORED,
    NO_FOLLOWUP,
    OK,
    SANCTIONING,
    arms_for,
)
from losona.dynamic.chat import SecondTurn
from losona.dynamic.group import GROUP_TEMPLATE_VERSION, group_messages, read_group_reply
from losona.dynamic.tables import DYNAMIC_PROMPT_SCHEMA
from losona.models import CallOptions, ModelSpec, Request, calls_table, complete_all
from losona.prompts.render import LeakError, check_no_leak, messages_sha256, subject_prompt
from losona.prompts.subject import SUBJECT_TEMPLATE_VERSION
from losona.scenarios.followups import Followup, Message

SHOWN = 5  # scenario ids named in a message before "and N more"


@dataclass(frozen=True)
class GroupModel:
    """The group model of source simulated, and how its calls are made."""

    spec: ModelSpec
    options: CallOptions

    @property
    def source(self) -> str:
        """What the follow-ups it writes are recorded as coming from."""
        return f"simulated:{self.spec.name}@{GROUP_TEMPLATE_VERSION}"


@dataclass(frozen=True)
class Rendered:
    """One cell's second-turn prompts, and the group model's calls they were built from."""

    prompts: pl.DataFrame  # DYNAMIC_PROMPT_SCHEMA
    calls: pl.DataFrame  # CALL_SCHEMA; empty when the follow-ups are scripted


def first_turn(
    verdicts: pl.DataFrame,
    scenarios: pl.DataFrame,
    *,
    judge: str,
    model: str,
    condition: str,
    origin: str,
) -> list[dict[str, Any]]:
    """The first turn's verdicts of one cell as rows, refusing a file that is not that cell."""
    check_cell_table(
        verdicts,
        origin,
        cell={"judge": judge, "subject_model": model, "condition": condition},
        rows="verdicts",
        rerun="judge",
        rerun_duplicates="sample and judge",
    )
    known = set(scenarios["scenario_id"])
    unknown = sorted(set(verdicts["scenario_id"]) - known)
    missing = sorted(known - set(verdicts["scenario_id"]))
    if unknown or missing:
        what = f"scenarios not in the scenario table ({_named(unknown)})" if unknown else ""
        what = what or f"no verdicts for scenarios of the table ({_named(missing)})"
        raise LosonaError(f"{origin}: {what}; rerun sample and judge after fetch")
    return list(verdicts.sort("scenario_id", "trial").iter_rows(named=True))


def render_cell(
    scenarios: pl.DataFrame,
    verdicts: pl.DataFrame,
    *,
    judge: str,
    model: str,
    condition: str,
    followups: Mapping[str, Followup],
    group: GroupModel | None = None,
    origin: str = "the first-turn verdicts",
) -> Rendered:
    """Every first-turn trial of one cell with its second-turn prompt(s), sorted. Without
    `group` the follow-ups are scripted (every scenario needs its material); with it, the
    group model writes them, and any second elicitor not scripted."""
    trials = first_turn(
        verdicts, scenarios, judge=judge, model=model, condition=condition, origin=origin
    )
    by_id = {s.scenario_id: s for s in scenarios_from_table(scenarios)}
    if group is None:
        lacking = sorted(sid for sid in by_id if sid not in followups)
        if lacking:
            raise LosonaError(
                f"dynamic.source=scripted needs every scenario's follow-up material (a "
                f"followup: block: losona/data/scenarios/README.md), and {len(lacking)} of "
                f"{len(by_id)} scenarios have none: {_named(lacking)}. Write it, or set "
                "dynamic.source=simulated to have a group model write the follow-ups"
            )
        writer = _Writer(followups)
        calls = calls_table("").collect()
    else:
        asks = group_asks(followups, by_id, trials)
        requests = [request for *_, request in asks]
        to = f"the group model '{group.spec.name}'"
        completions = complete_all(group.spec, requests, group.options, to=to)
        calls = calls_table(group.spec.model, completions).collect()
        written = {
            key: read_group_reply(completion.text or "", scenario, kind)
            for (key, scenario, kind, _), completion in zip(asks, completions, strict=True)
        }
        writer = _Writer(followups, group, written)
    rows = []
    for trial in trials:
        scenario = by_id[trial["scenario_id"]]
        key = {
            "scenario_id": scenario.scenario_id,
            "condition": condition,
            "subject_model": model,
            "judge": judge,
            "trial": trial["trial"],
            "first_response": trial["response"],
            "first_complies": trial["complies"],
            "template_version": SUBJECT_TEMPLATE_VERSION,
            "group_template_version": None if group is None else GROUP_TEMPLATE_VERSION,
            "messages": [],
        }
        arms = arms_for(trial["complies"])
        if not arms:
            note = f"the first-turn judge left this trial unscored ({trial['judge_status']})"
            rows.append(key | {"status": FIRST_TURN_UNSCORED, "note": note})
        for arm in arms:
            rows.append(key | _continued(writer, scenario, trial, arm, condition))
    prompts = table(rows, DYNAMIC_PROMPT_SCHEMA, sort_by=["scenario_id", "trial", "arm"])
    return Rendered(prompts, calls)


def _continued(
    writer: _Writer, scenario: Scenario, trial: Mapping[str, Any], arm: str, condition: str
) -> dict[str, Any]:
    """One arm of one trial: the follow-up, the second elicitor and the subject's prompt."""
    continuation = CONTINUATION[arm]
    said, elicitor, problem = writer.followup(scenario, trial, continuation)
    row: dict[str, Any] = {
        "arm": arm,
        "continuation": continuation,
        "followup": [{"actor": m.actor, "content": m.content} for m in said],
        "followup_source": writer.followup_source(scenario),
        "elicitor_actor": None if elicitor is None else elicitor.actor,
        "elicitor_content": None if elicitor is None else elicitor.content,
        "elicitor_source": writer.elicitor_source(scenario),
    }
    if problem is not None or elicitor is None:
        return row | {"status": NO_FOLLOWUP, "note": problem}
    shown = SecondTurn(scenario, trial["response"], said, elicitor).as_scenario()
    # The subject's own reply is not ours to police: the check reads the prompt without it,
    # so that only what this stage adds (follow-up, second elicitor) can fail it.
    blank = SecondTurn(scenario, "", said, elicitor).as_scenario()
    try:
        check_no_leak(blank, condition, subject_prompt(blank, condition))
    except LeakError as leak:
        # Scripted material was checked by fetch, so a leak in it stops us; a leak in what
        # a model wrote during the run leaves only its trial out.
        if writer.group is None:
            raise
        return row | {"status": NO_FOLLOWUP, "note": f"the group model's follow-up: {leak}"}
    messages = [{"role": "user", "content": subject_prompt(shown, condition)}]
    return row | {
        "status": OK,
        "note": None,
        "messages": messages,
        "prompt_sha256": messages_sha256(messages),
    }


Ask = tuple[tuple[str, ...], Scenario, str, Request]


def group_asks(
    followups: Mapping[str, Followup],
    scenarios: Mapping[str, Scenario],
    trials: list[dict[str, Any]],
) -> list[Ask]:
    """What the group model is asked for a cell: (key, scenario, kind, request) each. First
    a second elicitor per scenario without a scripted one (key: the scenario id), then a
    reaction per arm of every trial (key: scenario id, trial, kind)."""
    asks: list[Ask] = [
        ((sid,), scenario, "elicitor", Request(tuple(group_messages(scenario, "elicitor", None))))
        for sid, scenario in sorted(scenarios.items())
        if sid not in followups
    ]
    for trial in trials:
        scenario = scenarios[trial["scenario_id"]]
        for arm in arms_for(trial["complies"]):
            kind = CONTINUATION[arm]
            messages = group_messages(scenario, kind, trial["response"])
            request = Request(tuple(messages), trial=trial["trial"])
            asks.append(
                ((scenario.scenario_id, str(trial["trial"]), kind), scenario, kind, request)
            )
    return asks


# What the group model wrote, by its ask's key: the messages, or why they cannot be used.
Written = Mapping[tuple[str, ...], tuple[tuple[Message, ...], str | None]]


@dataclass(frozen=True)
class _Writer:
    """Where a trial's follow-up and second elicitor come from: the scenario's own material,
    the same for every trial; or, with `group`, the group model's reactions to each actual
    reply (`written`), and a second elicitor for a scenario without a scripted one."""

    followups: Mapping[str, Followup]
    group: GroupModel | None = None
    written: Written = field(default_factory=dict)

    def followup(
        self, scenario: Scenario, trial: Mapping[str, Any], continuation: str
    ) -> tuple[tuple[Message, ...], Message | None, str | None]:
        """The follow-up messages, the second elicitor, and why they cannot be used (if so)."""
        sid = scenario.scenario_id
        if self.group is None:
            material = self.followups[sid]
            said = material.sanction if continuation == SANCTIONING else material.neutral
            return said, material.elicitor, None
        if sid in self.followups:
            elicitor = self.followups[sid].elicitor
        else:
            written, problem = self.written[(sid,)]
            if problem is not None:
                return (), None, problem
            elicitor = written[0]
        said, problem = self.written[(sid, str(trial["trial"]), continuation)]
        return said, elicitor, problem

    def followup_source(self, scenario: Scenario) -> str:
        """The follow-up's source, with its version."""
        if self.group is None:
            return self.followups[scenario.scenario_id].source
        return self.group.source

    def elicitor_source(self, scenario: Scenario) -> str:
        """The second elicitor's source, with its version: a scripted one's, else the group's."""
        if self.group is None or scenario.scenario_id in self.followups:
            return self.followups[scenario.scenario_id].source
        return self.group.source


def _named(ids: list[str]) -> str:
    return first_of([f"'{sid}'" for sid in ids], SHOWN)
