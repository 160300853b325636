"""A scenario's scripted follow-up material for the dynamic second turn (docs/dynamic.md),
checked whenever a scenario has one and kept out of the scenario table."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from losona.scenarios.validate import (
    Problem,
    RowProblems,
    ScenarioError,
    as_text,
    hidden_texts,
    is_text,
    normalize,
    shown,
    text_problem,
)

FIELD = "followup"
KEYS = ("sanction", "neutral", "elicitor")
MESSAGE_KEYS = ("actor", "content")
MIN_MESSAGES, MAX_MESSAGES = 1, 2
# A neutral message is "the same length" as its sanction within these bounds, message by
# message and in total (characters), so that length alone cannot tell the arms apart.
EACH_RATIO = (0.5, 2.0)
TOTAL_RATIO = (0.67, 1.5)
NORM_WORD = re.compile(r"\bnorms?\b")


@dataclass(frozen=True)
class Message:
    """One chat message of the follow-up: who says it and what."""

    actor: str
    content: str


@dataclass(frozen=True)
class Followup:
    """A scenario's follow-up material, checked, and where it came from."""

    sanction: tuple[Message, ...]
    neutral: tuple[Message, ...]
    elicitor: Message
    source: str  # e.g. "bundled:losona-bundled-followups@1"

    @classmethod
    def of(cls, raw: Mapping[str, Any], source: str) -> Followup:
        """The block as checked by `followup_problems` (call that first)."""

        def messages(key: str) -> tuple[Message, ...]:
            return tuple(Message(**m) for m in raw[key])

        return cls(messages("sanction"), messages("neutral"), Message(**raw["elicitor"]), source)


class _Checker(RowProblems):
    """Collects the problems of one scenario's follow-up block."""

    def __init__(self, row: Mapping[str, Any], origin: str) -> None:
        super().__init__(row, origin, prefix=FIELD)
        cast = row.get("cast")
        members = cast if isinstance(cast, list) else []
        self.cast = {m.get("name") for m in members if isinstance(m, Mapping)}
        norm = [as_text(row.get(field)) for field in ("norm_id", "norm_statement")]
        examples = [as_text(row.get(f"example_{k}_response")) for k in ("compliant", "breaching")]
        self.hidden = hidden_texts(*norm, *examples)

    def run(self, raw: Any) -> list[Problem]:
        if not isinstance(raw, Mapping):
            found = "nothing (the block is missing)" if raw is None else shown(raw)
            self.fail("", f"a mapping with {list(KEYS)}", found)
            return self.problems
        for key in sorted(set(raw) - set(KEYS), key=str):
            self.fail(f".{key}", f"one of {list(KEYS)}", "an unknown field")
        sanction = self.messages(raw.get("sanction"), ".sanction")
        neutral = self.messages(raw.get("neutral"), ".neutral")
        elicitor = self.message(raw.get("elicitor"), ".elicitor")
        if sanction is not None and neutral is not None:
            self.pair(sanction, neutral)
        first = self.row.get("elicitor_content")
        if (
            elicitor is not None
            and isinstance(first, str)
            and normalize(elicitor.content) == normalize(first)
        ):
            self.fail(
                ".elicitor.content",
                "a second elicitor that differs from the scenario's elicitor",
                "the same text as elicitor_content",
            )
        return self.problems

    def messages(self, raw: Any, field: str) -> list[Message] | None:
        if not isinstance(raw, list) or not MIN_MESSAGES <= len(raw) <= MAX_MESSAGES:
            self.fail(field, f"a list of {MIN_MESSAGES} or {MAX_MESSAGES} messages", shown(raw))
            return None
        checked = [self.message(item, f"{field}[{i}]") for i, item in enumerate(raw)]
        return [m for m in checked if m is not None] if all(checked) else None

    def message(self, raw: Any, field: str) -> Message | None:
        if not isinstance(raw, Mapping):
            self.fail(field, f"a mapping with {list(MESSAGE_KEYS)}", shown(raw))
            return None
        for key in sorted(set(raw) - set(MESSAGE_KEYS), key=str):
            self.fail(f"{field}.{key}", f"one of {list(MESSAGE_KEYS)}", "an unknown field")
        actor, content = raw.get("actor"), raw.get("content")
        ok = self.actor(actor, f"{field}.actor")
        ok = self.content(content, f"{field}.content") and ok
        return Message(str(actor), str(content)) if ok else None

    def actor(self, actor: Any, field: str) -> bool:
        subject = self.row.get("subject")
        if not is_text(actor):
            self.fail(field, "a cast member's name", shown(actor))
            return False
        if actor == subject:
            self.fail(field, "a cast member other than the subject", f"the subject '{actor}'")
            return False
        if self.cast and actor not in self.cast:
            self.fail(field, "a member of the cast", shown(actor))
            return False
        return True

    def content(self, content: Any, field: str) -> bool:
        problem = text_problem(content)
        if problem is not None:
            self.fail(field, *problem)
            return False
        named = norm_named(content, self.hidden)
        for what in named:
            self.fail(field, "chat text that never names the norm", what)
        return not named

    def pair(self, sanction: Sequence[Message], neutral: Sequence[Message]) -> None:
        if len(neutral) != len(sanction):
            self.fail(
                ".neutral", f"as many messages as the sanction ({len(sanction)})", str(len(neutral))
            )
            return
        low, high = EACH_RATIO
        for i, (s, n) in enumerate(zip(sanction, neutral, strict=True)):
            if n.actor != s.actor:
                self.fail(
                    f".neutral[{i}].actor",
                    f"the sanction's actor in the same place ({s.actor!r})",
                    shown(n.actor),
                )
            ratio = len(n.content) / len(s.content)
            if not low <= ratio <= high:
                self.fail(
                    f".neutral[{i}].content",
                    f"{low:g}x to {high:g}x the length of followup.sanction[{i}].content "
                    f"({len(s.content)} characters)",
                    f"{len(n.content)} characters ({ratio:.2f}x)",
                )
        low, high = TOTAL_RATIO
        total_s = sum(len(m.content) for m in sanction)
        total_n = sum(len(m.content) for m in neutral)
        ratio = total_n / total_s
        if not low <= ratio <= high:
            self.fail(
                ".neutral",
                f"{low:g}x to {high:g}x the sanction's total length ({total_s} characters)",
                f"{total_n} characters ({ratio:.2f}x)",
            )


def norm_named(text: str, hidden: Mapping[str, str]) -> list[str]:
    """What of the norm `text` names: each of the `hidden` texts it contains, then the word."""
    words = normalize(text)
    named = [what for what, value in hidden.items() if value and normalize(value) in words]
    if NORM_WORD.search(words):
        named.append("the word 'norm'")
    return named


def followup_problems(raw: Any, row: Mapping[str, Any], origin: str) -> list[Problem]:
    """What is wrong with a scenario's follow-up block (`raw`), given its contract `row`."""
    return _Checker(row, origin).run(raw)


def message_problems(
    messages: Sequence[Message], row: Mapping[str, Any], origin: str, field: str
) -> list[Problem]:
    """The actor and content rules alone, for messages written at run time (a group model);
    `field` names them after `followup`, e.g. ".sanction" gives followup.sanction[0].actor."""
    checker = _Checker(row, origin)
    for i, message in enumerate(messages):
        checker.actor(message.actor, f"{field}[{i}].actor")
        checker.content(message.content, f"{field}[{i}].content")
    return checker.problems


def check_followups(rows: Iterable[tuple[str, Mapping[str, Any]]]) -> None:
    """Check the follow-up block of every row that has one; raise ScenarioError listing all."""
    problems: list[Problem] = []
    for origin, row in rows:
        if isinstance(row, Mapping) and row.get(FIELD) is not None:
            problems += followup_problems(row[FIELD], row, origin)
    if problems:
        raise ScenarioError(problems)
