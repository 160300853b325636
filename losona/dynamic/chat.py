"""The second turn's chat: everything said so far, the subject's own first reply shown as
a member's message, then the second elicitor."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from losona.core.contracts import Scenario, Turn
from losona.judges.base import JudgeCase
from losona.scenarios.followups import Message


@dataclass(frozen=True)
class SecondTurn:
    """One first-turn trial continued: its scenario, the first reply, the follow-up, the ask."""

    scenario: Scenario
    first_response: str
    followup: tuple[Message, ...]
    elicitor: Message

    @property
    def earlier(self) -> tuple[Turn, ...]:
        """Every message before the second elicitor: the transcript, the first elicitor, the
        subject's reply and the group's follow-up, in chat order."""
        s = self.scenario
        after = [(s.subject, self.first_response), *((m.actor, m.content) for m in self.followup)]
        said = tuple(
            Turn(s.elicitor_index + 1 + i, actor, content, False)
            for i, (actor, content) in enumerate(after)
        )
        return (*s.turns, s.elicitor, *said)

    def as_scenario(self) -> Scenario:
        """The scenario as the subject meets it now: the chat so far, the second elicitor last."""
        earlier = self.earlier
        return dataclasses.replace(
            self.scenario,
            turns=earlier,
            elicitor_index=earlier[-1].index + 1,
            elicitor_actor=self.elicitor.actor,
            elicitor_content=self.elicitor.content,
        )

    def judge_case(self, response: str | None) -> JudgeCase:
        """The second reply as the judge sees it: the same fields as a first-turn case."""
        return JudgeCase.in_chat(
            self.scenario, self.earlier, self.elicitor.actor, self.elicitor.content, response
        )
