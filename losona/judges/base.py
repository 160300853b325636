"""What every judge takes and returns: one case to judge, one judgement of it."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import polars as pl

from losona.core.contracts import Scenario, Turn
from losona.core.files import CHUNK, OnDemand
from losona.prompts.render import format_transcript

# "ok": scored; NOT_A_VERDICT: a reply with no verdict of the judge's own, even after one
# repair; "failed": only in older verdict tables; "no_response": a null response.
Status = Literal[
    "ok",
    "unparseable",
    "placeholder",
    "copied_prompt",
    "echoed_message",
    "failed",
    "no_response",
]
# Each status of a reply that held no verdict of the judge's own, and what such replies did.
NOT_A_VERDICT: dict[Status, str] = {
    "unparseable": "were unparseable",
    "placeholder": "left the answer template's placeholders or no reasoning",
    "copied_prompt": "copied their reasoning from the prompt",
    "echoed_message": "handed back JSON or reasoning from the judged message itself",
}

# The control cases' stand-in names: the catalog's example elicitor has no speaker.
CONTROL_ELICITOR_ACTOR = "Member A"
CONTROL_SUBJECT = "Member B"
# What the judge reads as the transcript when a case has no earlier messages.
NO_EARLIER_MESSAGES = "(no earlier messages)"


@dataclass(frozen=True)
class JudgeCase:
    """Everything a judge may see about one message: never the generation-only end goal."""

    scenario_id: str
    norm_id: str
    norm_statement: str
    example_elicitor: str
    example_compliant_response: str
    example_breaching_response: str
    prior_transcript: str
    elicitor_actor: str
    elicitor_content: str
    subject: str
    response: str | None
    # Everyone else in the chat: the judged message's author is not among them.
    members: tuple[str, ...] = ()
    # The text of each message before the elicitor, in order (the transcript's contents
    # without the `Name:` labels), so a judge can tell a reply from an echo of the chat.
    earlier_messages: tuple[str, ...] = ()

    @classmethod
    def for_response(cls, scenario: Scenario, response: str | None) -> JudgeCase:
        """A subject's reply to the scenario's final elicitor, in the scenario's own chat."""
        return cls.in_chat(
            scenario, scenario.turns, scenario.elicitor_actor, scenario.elicitor_content, response
        )

    @classmethod
    def in_chat(
        cls,
        scenario: Scenario,
        earlier: Sequence[Turn],
        elicitor_actor: str,
        elicitor_content: str,
        response: str | None,
    ) -> JudgeCase:
        """A subject's reply to this elicitor after these messages, under the scenario's norm
        (the first turn's chat, or the second turn's, which goes on from it)."""
        return cls(
            **_norm_fields(scenario),
            prior_transcript=format_transcript(earlier) or NO_EARLIER_MESSAGES,
            elicitor_actor=elicitor_actor,
            elicitor_content=elicitor_content,
            subject=scenario.subject,
            response=response,
            members=tuple(member.name for member in scenario.cast),
            earlier_messages=tuple(turn.content for turn in earlier),
        )

    @classmethod
    def control(cls, scenario: Scenario, response: str) -> JudgeCase:
        """An example response judged as a reply to the example elicitor it was written for,
        with no earlier messages: against the scenario's chat it would be off-topic and its
        expected label no longer certain."""
        return cls(
            **_norm_fields(scenario),
            prior_transcript=NO_EARLIER_MESSAGES,
            elicitor_actor=CONTROL_ELICITOR_ACTOR,
            elicitor_content=scenario.example_elicitor,
            subject=CONTROL_SUBJECT,
            response=response,
            members=(CONTROL_ELICITOR_ACTOR,),
        )


# What every case of a scenario shares: its id, its norm and the catalog's examples.
_NORM_FIELDS = (
    "scenario_id",
    "norm_id",
    "norm_statement",
    "example_elicitor",
    "example_compliant_response",
    "example_breaching_response",
)


def _norm_fields(scenario: Scenario) -> dict[str, Any]:
    return {field: getattr(scenario, field) for field in _NORM_FIELDS}


def demonstration_cases(scenario: Scenario) -> list[JudgeCase]:
    """Each demonstration turn as a reply to the message right before it (expected to comply),
    the chat up to that message its transcript, as a judge sees a subject's reply."""
    cases = []
    for position, turn in enumerate(scenario.turns):
        if not turn.is_demo or position == 0:
            continue
        before, elicitor = scenario.turns[: position - 1], scenario.turns[position - 1]
        case = JudgeCase.in_chat(scenario, before, elicitor.actor, elicitor.content, turn.content)
        everyone = (scenario.subject, *(m.name for m in scenario.cast))
        members = tuple(name for name in everyone if name != turn.actor)
        cases.append(dataclasses.replace(case, subject=turn.actor, members=members))
    return cases


@dataclass(frozen=True)
class Judgement:
    """A judge's verdict on one case: the five fields of Appendix C and how it was reached."""

    complies: bool | None  # None whenever status is not "ok"
    elicitor_uptake: str | None
    norm_requirement: str | None
    evidence: str | None
    reasoning: str | None
    status: Status
    # The reply takes up no elicitor at all (empty, filler, off-topic, an echo, ...); None
    # when the judge does not check it (an LLM judge's five fields hold no such flag).
    non_answer: bool | None = None

    @classmethod
    def unscored(cls, status: Status, reasoning: str, evidence: str | None = None) -> Judgement:
        """A case the judge could not score, with why and whatever the judge did say."""
        return cls(None, None, None, evidence, reasoning, status)


# A Judgement's fields as columns.
JUDGEMENT_SCHEMA = pl.Schema(
    {
        "complies": pl.Boolean(),
        "elicitor_uptake": pl.String(),
        "norm_requirement": pl.String(),
        "evidence": pl.String(),
        "reasoning": pl.String(),
        "status": pl.String(),
        "non_answer": pl.Boolean(),
    }
)


class JudgementTable(OnDemand[Judgement]):
    """Judgements kept as one compact table, a Judgement made of a row when asked for; a
    verdict table is made of these columns without a copy (judges.run.verdict_columns)."""

    def __init__(self, table: pl.DataFrame) -> None:
        super().__init__(table.height, lambda i: Judgement(**table.row(i, named=True)))
        self.table = table

    @classmethod
    def of(cls, judgements: Iterable[Judgement]) -> JudgementTable:
        """Judgements as they come, CHUNK at a time: no list of them all is ever made."""
        chunks, judgements = [], iter(judgements)
        while chunk := list(itertools.islice(judgements, CHUNK)):
            rows = [dataclasses.asdict(j) for j in chunk]
            chunks.append(pl.DataFrame(rows, schema=JUDGEMENT_SCHEMA))
        return cls(pl.concat([JUDGEMENT_SCHEMA.to_frame(), *chunks], rechunk=True))


class Judge(Protocol):
    """Anything that turns cases into judgements, one per case, in order."""

    @property
    def model(self) -> str:
        """What decided the verdicts, as written to `judge_model`."""
        ...

    @property
    def version(self) -> str:
        """The version of the prompt or rules it used, as written to `judge_version`."""
        ...

    def judge(self, cases: Sequence[JudgeCase]) -> Sequence[Judgement]:
        """One judgement per case, in the same order (a long run's may be made on demand)."""
        ...


@runtime_checkable
class CallingJudge(Judge, Protocol):
    """A judge that calls a model: its calls and run logs go with the run, and its progress
    lines name the cell it judges."""

    # What its progress lines call the cell it judges.
    progress: str
    # Each round of calls it made (losona.models.Completion), first rounds and repairs.
    calls: list[Sequence[Any]]
    # The run log of each round it made.
    run_logs: list[Path]
