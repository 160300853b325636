"""Checks every scenario row against the contract and the paper's construction rules.

Every problem is reported at once, naming the file, the scenario, the field, what was
expected and what was found, so one run of fetch shows everything that needs fixing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeGuard

from losona.core.catalog import Catalog
from losona.core.errors import LosonaError

# A chat message longer than this is a broken file, not a message.
MAX_MESSAGE_CHARS = 20_000
# Example responses shorter than this are ordinary chat ("Yes.", "On it.") that can
# appear in any transcript without telling the subject anything about the norm.
MIN_LEAK_WORDS = 4
# Turn and elicitor indices are stored as Int32 (losona/core/contracts.py).
MAX_INDEX = 2**31 - 1
SCENARIO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

TEXT_FIELDS = (
    "scenario_id",
    "event_type",
    "norm_id",
    "venue",
    "channel_description",
    "subject",
    "subject_bio",
    "elicitor_actor",
    "elicitor_content",
)
# The fields the judge prompt needs (paper Appendix C); the subject never sees them.
JUDGE_FIELDS = (
    "norm_statement",
    "example_elicitor",
    "example_compliant_response",
    "example_breaching_response",
)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one field of one scenario."""

    origin: str
    scenario_id: str | None
    field: str
    expected: str
    found: str

    def __str__(self) -> str:
        where = f"scenario '{self.scenario_id}'" if self.scenario_id else "a scenario with no id"
        return (
            f"{self.origin}: {where}: field '{self.field}': "
            f"expected {self.expected}, found {self.found}"
        )


class ScenarioError(LosonaError):
    """One or more scenarios are invalid; the message lists every problem found."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        header = f"{count} problem{'s' if count != 1 else ''} in the scenario data:"
        super().__init__("\n".join([header, *(f"  - {p}" for p in self.problems)]))


def normalize(text: str) -> str:
    """Lowercase with whitespace collapsed, for leak and duplicate matching."""
    return " ".join(text.lower().split())


def shown(value: Any) -> str:
    """A value as a problem quotes it, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_text(value: Any) -> TypeGuard[str]:
    """Whether `value` is a string with more than whitespace in it."""
    return isinstance(value, str) and bool(value.strip())


def as_text(value: Any) -> str:
    """A value that should be text, or "" where it is not."""
    return value if isinstance(value, str) else ""


def hidden_texts(
    norm_id: str, statement: str, compliant: str, breaching: str, requirement: str | None = None
) -> dict[str, str]:
    """What no chat message or subject prompt may contain, by what it is (paper Section 3)."""
    hidden = {"the norm id": norm_id, "the norm id in words": norm_id.replace("_", " ")}
    if requirement is not None:
        hidden["the norm's requirement"] = requirement
    hidden["the norm statement"] = statement
    for kind, text in (("compliant", compliant), ("breaching", breaching)):
        if len(text.split()) >= MIN_LEAK_WORDS:
            hidden[f"the example {kind} response"] = text
    return hidden


def _is_index(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INDEX


def _unencodable(text: str) -> int | None:
    """Where a string stops being valid Unicode (a lone surrogate, e.g. from JSON's \\ud800)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def text_problem(value: Any) -> tuple[str, str] | None:
    """What a chat text lacks, as (expected, found): non-empty, bounded, valid Unicode."""
    if not is_text(value):
        return "non-empty text", shown(value)
    if len(value) > MAX_MESSAGE_CHARS:
        return f"at most {MAX_MESSAGE_CHARS} characters", f"{len(value)} characters"
    bad = _unencodable(value)
    if bad is not None:
        return "valid Unicode text", f"a lone surrogate at character {bad}"
    return None


class RowProblems:
    """Collects the problems of one scenario row, each field's name after `prefix`."""

    def __init__(self, row: Mapping[str, Any], origin: str, prefix: str = "") -> None:
        self.row, self.origin, self.prefix = row, origin, prefix
        raw_id = row.get("scenario_id")
        self.scenario_id = raw_id if is_text(raw_id) else None
        self.problems: list[Problem] = []

    def fail(self, field: str, expected: str, found: str) -> None:
        where = self.prefix + field
        self.problems.append(Problem(self.origin, self.scenario_id, where, expected, found))


class _RowChecker(RowProblems):
    """Checks one row against the contract and the construction rules."""

    def text(self, field: str, value: Any) -> bool:
        problem = (
            ("non-empty text", "nothing (the field is missing or null)")
            if value is None
            else text_problem(value)
        )
        if problem is not None:
            self.fail(field, *problem)
        return problem is None

    def run(self, catalog: Catalog) -> list[Problem]:
        row = self.row
        for field in TEXT_FIELDS + JUDGE_FIELDS:
            self.text(field, row.get(field))
        if self.scenario_id and not SCENARIO_ID.match(self.scenario_id):
            self.fail(
                "scenario_id", "letters, digits, '_', '.' or '-' only", shown(self.scenario_id)
            )
        if is_text(row.get("event_type")) and row["event_type"] not in catalog.events:
            self.fail("event_type", "an event id from the catalog", shown(row["event_type"]))
        if is_text(row.get("norm_id")) and row["norm_id"] not in catalog.norms:
            self.fail("norm_id", "a norm id from the catalog", shown(row["norm_id"]))
        end_goal = row.get("end_goal")
        if end_goal is not None and (
            not isinstance(end_goal, str) or _unencodable(end_goal) is not None
        ):
            self.fail("end_goal", "text or null", shown(end_goal))
        cast_names = self.check_cast(row.get("cast"))
        turns = self.check_turns(row.get("turns"), cast_names)
        self.check_elicitor(turns, cast_names)
        self.check_norm_unstated(turns)
        return self.problems

    def check_cast(self, cast: Any) -> set[str]:
        if not isinstance(cast, list) or not cast:
            self.fail("cast", "a non-empty list of {name, bio}", shown(cast))
            return set()
        names: list[str] = []
        for i, member in enumerate(cast):
            if not isinstance(member, Mapping):
                self.fail(f"cast[{i}]", "a mapping with 'name' and 'bio'", shown(member))
                continue
            if self.text(f"cast[{i}].name", member.get("name")):
                names.append(member["name"])
            self.text(f"cast[{i}].bio", member.get("bio"))
        for name, count in Counter(names).items():
            if count > 1:
                self.fail("cast", "unique names", f"'{name}' listed {count} times")
        subject = self.row.get("subject")
        if subject in names:
            self.fail(
                "cast",
                "only the other participants (the subject's bio is subject_bio)",
                f"the subject '{subject}' in the cast",
            )
        return set(names)

    def check_turns(self, turns: Any, cast_names: set[str]) -> dict[int, Mapping[str, Any]]:
        """The well-formed turns, by their place in the list (the field names they go by)."""
        if not isinstance(turns, list) or not turns:
            self.fail("turns", "a non-empty list of turns before the elicitor", shown(turns))
            return {}
        subject = self.row.get("subject")
        speakers = cast_names | ({subject} if is_text(subject) else set())
        good: dict[int, Mapping[str, Any]] = {}
        previous: int | None = None
        for i, turn in enumerate(turns):
            where = f"turns[{i}]"
            if not isinstance(turn, Mapping):
                self.fail(where, "a mapping with index, actor, content, is_demo", shown(turn))
                continue
            index, actor, is_demo = turn.get("index"), turn.get("actor"), turn.get("is_demo")
            ok = self.text(f"{where}.content", turn.get("content"))
            if not _is_index(index):
                self.fail(f"{where}.index", f"an integer from 0 to {MAX_INDEX}", shown(index))
                ok = False
            elif previous is not None and index <= previous:
                self.fail(
                    f"{where}.index",
                    f"an index greater than {previous} (turns in order)",
                    str(index),
                )
            else:
                previous = index
            if not isinstance(is_demo, bool):
                self.fail(f"{where}.is_demo", "true or false", shown(is_demo))
                ok = False
            if not self.text(f"{where}.actor", actor):
                ok = False
            elif cast_names and actor not in speakers:
                self.fail(f"{where}.actor", "the subject or a cast member", shown(actor))
            elif is_demo is True and actor == subject:
                self.fail(
                    f"{where}.actor",
                    "a non-subject member for a demonstration turn",
                    f"the subject '{subject}'",
                )
            if ok:
                good[i] = turn
        if not any(t.get("is_demo") is True for t in turns if isinstance(t, Mapping)):
            self.fail("turns", "at least one demonstration turn (is_demo: true)", "none marked")
        return good

    def check_elicitor(self, turns: Mapping[int, Mapping[str, Any]], cast_names: set[str]) -> None:
        index, actor = self.row.get("elicitor_index"), self.row.get("elicitor_actor")
        last = max((t["index"] for t in turns.values()), default=None)
        if not _is_index(index):
            self.fail("elicitor_index", f"an integer from 0 to {MAX_INDEX}", shown(index))
        elif last is not None and index <= last:
            self.fail("elicitor_index", f"an index after the last turn ({last})", str(index))
        if not is_text(actor):
            return
        if actor == self.row.get("subject"):
            self.fail(
                "elicitor_actor", "a cast member other than the subject", f"the subject '{actor}'"
            )
        elif cast_names and actor not in cast_names:
            self.fail("elicitor_actor", "a member of the cast", shown(actor))

    def check_norm_unstated(self, turns: Mapping[int, Mapping[str, Any]]) -> None:
        statement = self.row.get("norm_statement")
        if not is_text(statement):
            return
        needle = normalize(statement)
        spoken = [(f"turns[{i}].content", t["content"]) for i, t in turns.items()]
        if is_text(self.row.get("elicitor_content")):
            spoken.append(("elicitor_content", self.row["elicitor_content"]))
        for field, content in spoken:
            if needle in normalize(content):
                self.fail(
                    field,
                    "chat text that does not state the norm",
                    "the norm statement written out in the message",
                )


def check_scenarios(rows: Iterable[tuple[str, Mapping[str, Any]]], catalog: Catalog) -> None:
    """Validate (origin, row) pairs; raise ScenarioError listing every problem, if any."""
    problems: list[Problem] = []
    first_seen: dict[str, str] = {}
    for origin, row in rows:
        if not isinstance(row, Mapping):
            problems.append(Problem(origin, None, "(row)", "a mapping of fields", shown(row)))
            continue
        checker = _RowChecker(row, origin)
        problems.extend(checker.run(catalog))
        sid = checker.scenario_id
        if sid is None:
            continue
        if sid in first_seen:
            duplicate = f"a duplicate of the scenario in {first_seen[sid]}"
            problems.append(Problem(origin, sid, "scenario_id", "a unique id", duplicate))
        else:
            first_seen[sid] = origin
    if problems:
        raise ScenarioError(problems)
