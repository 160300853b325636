"""A generator's reply as a candidate scenario: the prompt, reading the reply, every check.

A candidate must pass fetch's validators and the construction rules (docs/generation.md);
each problem is one reason, written like the validator's: `field: expected ..., found ...`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from losona.core.catalog import Catalog
from losona.core.contracts import Scenario
from losona.core.files import sha256_text
from losona.generation.cells import Slot
from losona.generation.prompt import GENERATOR_JSON_SCHEMA, GENERATOR_TEMPLATE
from losona.prompts.render import LeakError, subject_messages
from losona.scenarios.datasets import bundled_row
from losona.scenarios.followups import FIELD as FOLLOWUP
from losona.scenarios.followups import followup_problems, norm_named
from losona.scenarios.validate import (
    MIN_LEAK_WORDS,
    ScenarioError,
    as_text,
    check_scenarios,
    hidden_texts,
    normalize,
)
from losona.scenarios.view import without_demonstrations

MIN_TURNS, MAX_TURNS = 20, 34  # counting the elicitor (paper Appendix B)
MIN_DEMOS, MAX_DEMOS = 2, 3
MAX_SUBJECT_TURNS = 2
AUTHORED_KEYS: tuple[str, ...] = tuple(cast(dict[str, Any], GENERATOR_JSON_SCHEMA["properties"]))


def generator_messages(slot: Slot, catalog: Catalog) -> list[dict[str, str]]:
    """The generator prompt for one candidate, as one user message."""
    norm = catalog.norms[slot.norm_id]
    prompt = GENERATOR_TEMPLATE.format(
        event_type=slot.event_type,
        event_description=catalog.events[slot.event_type],
        venue=slot.venue,
        venue_description=catalog.venues[slot.venue],
        norm_statement=norm.statement,
        norm_requirement=norm.requirement,
        example_elicitor=norm.example_elicitor,
        example_compliant_response=norm.example_compliant_response,
        example_breaching_response=norm.example_breaching_response,
        json_schema=json.dumps(GENERATOR_JSON_SCHEMA, indent=2),
    )
    return [{"role": "user", "content": prompt}]


def candidate_id(slot: Slot, reply: str) -> str:
    """A scenario id naming the cell and the content: an accept list always means what was read."""
    digest = sha256_text(f"{slot.venue}\0{slot.sample}\0{reply}")[:8]
    return f"{slot.event_type}__{slot.norm_id}__{digest}"


def _json_objects(text: str) -> tuple[list[dict[str, Any]], str | None]:
    """Every JSON object starting somewhere in the text, and why the first one, if any, failed."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    error = None
    start = first = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            if start == first:
                error = f"{exc.msg}, line {exc.lineno} column {exc.colno}"
        else:
            if isinstance(value, dict):
                found.append(value)
        start = text.find("{", start + 1)
    return found, error


def read_reply(reply: str, finish_reason: str | None) -> tuple[dict[str, Any] | None, list[str]]:
    """The authored scenario object in a reply, or None and why it could not be read."""
    objects, error = _json_objects(reply)
    # The outermost object with an authoring key comes first; a wrapper has none.
    authored = [obj for obj in objects if any(key in obj for key in AUTHORED_KEYS)]
    if authored:
        return authored[0], []
    if not reply.strip():
        found = "an empty reply"
    elif error:  # the outermost object is broken (its inner ones may still parse)
        found = f"invalid JSON ({error})"
    elif objects:
        found = f"JSON without any of the keys {list(AUTHORED_KEYS)}"
    else:
        found = "no JSON object"
    reasons = [f"reply: expected one JSON object in the scenario schema, found {found}"]
    if finish_reason == "length":
        reasons.append(
            "reply: expected a complete reply, found one cut off at the token limit "
            "(finish_reason 'length'); raise generate.params.max_tokens"
        )
    return None, reasons


def scenario_row(
    authored: Mapping[str, Any], slot: Slot, scenario_id: str, catalog: Catalog, source: str
) -> dict[str, Any]:
    """The authored object as a contract row; the cell comes from the slot, not the model."""
    raw = {key: authored.get(key) for key in AUTHORED_KEYS}
    raw.update(
        scenario_id=scenario_id, event_type=slot.event_type, norm_id=slot.norm_id, venue=slot.venue
    )
    return bundled_row(raw, catalog, source)


def _problem(field: str, expected: str, found: str) -> str:
    return f"{field}: expected {expected}, found {found}"


def contract_problems(row: Mapping[str, Any], catalog: Catalog) -> list[str]:
    """What fetch's validator finds wrong with the row."""
    try:
        check_scenarios([("candidate", row)], catalog)
    except ScenarioError as error:
        return [_problem(p.field, p.expected, p.found) for p in error.problems]
    return []


def _entries(row: Mapping[str, Any], field: str) -> list[Mapping[str, Any]]:
    """The row's list `field`, each malformed entry as an empty mapping (the validator names it)."""
    entries = row.get(field)
    if not isinstance(entries, list):
        return []
    return [entry if isinstance(entry, Mapping) else {} for entry in entries]


def construction_problems(row: Mapping[str, Any], catalog: Catalog) -> list[str]:
    """The construction rules the contract does not cover (see the module docstring)."""
    problems = []
    turns = _entries(row, "turns")
    count = len(turns) + 1
    if not MIN_TURNS <= count <= MAX_TURNS:
        expected = f"{MIN_TURNS} to {MAX_TURNS} turns counting the elicitor"
        problems.append(_problem("turns", expected, f"{count} ({len(turns)} before the elicitor)"))
    demos = [i for i, turn in enumerate(turns) if turn.get("is_demo") is True]
    if not MIN_DEMOS <= len(demos) <= MAX_DEMOS:
        problems.append(
            _problem("turns", f"{MIN_DEMOS} or {MAX_DEMOS} demonstration turns", str(len(demos)))
        )
    subject = as_text(row.get("subject"))
    spoken = sum(1 for t in turns if subject and t.get("actor") == subject and not t.get("is_demo"))
    if spoken > MAX_SUBJECT_TURNS:
        expected = f"at most {MAX_SUBJECT_TURNS} ordinary turns by the subject '{subject}'"
        problems.append(_problem("turns", expected, str(spoken)))
    for i, member in enumerate(_entries(row, "cast")):
        extra = sorted(set(member) - {"name", "bio"})
        if extra:
            problems.append(_problem(f"cast[{i}]", "only a name and a bio", f"also {extra}"))
    if not as_text(row.get("end_goal")).strip():
        problems.append(_problem("end_goal", "a concrete in-fiction goal", "nothing"))
    event, norm_id = row.get("event_type"), row.get("norm_id")
    if not catalog.is_applicable(str(event), str(norm_id)):
        problems.append(
            _problem("event_type", f"an event where '{norm_id}' applies (catalog)", repr(event))
        )
    return problems + _norm_named(row, catalog) + _quoted_demos(row, demos)


def _chat(row: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every message of the chat as (field, text), the elicitor last."""
    spoken = [
        (f"turns[{i}].content", as_text(t.get("content")))
        for i, t in enumerate(_entries(row, "turns"))
    ]
    return [*spoken, ("elicitor_content", as_text(row.get("elicitor_content")))]


def _norm_named(row: Mapping[str, Any], catalog: Catalog) -> list[str]:
    norm = catalog.norms.get(str(row.get("norm_id")))
    if norm is None:
        return []
    hidden = hidden_texts(
        norm.id,
        norm.statement,
        norm.example_compliant_response,
        norm.example_breaching_response,
        requirement=norm.requirement,
    )
    # The validator already reports the statement written into the chat.
    in_chat = {what: text for what, text in hidden.items() if what != "the norm statement"}
    setting = [
        ("channel_description", as_text(row.get("channel_description"))),
        ("subject_bio", as_text(row.get("subject_bio"))),
        *((f"cast[{i}].bio", as_text(m.get("bio"))) for i, m in enumerate(_entries(row, "cast"))),
    ]
    return [
        _problem(field, "text that never names the norm", what)
        for needles, fields in ((hidden, setting), (in_chat, _chat(row)))
        for field, text in fields
        for what in norm_named(text, needles)
    ]


def _quoted_demos(row: Mapping[str, Any], demos: list[int]) -> list[str]:
    chat = _chat(row)
    problems = []
    for d in demos:
        demo = normalize(chat[d][1])
        if len(demo.split()) < MIN_LEAK_WORDS:
            continue  # a short reply ("Yes.") recurs in any chat without quoting anyone
        for field, content in chat[d + 1 :]:
            if demo in normalize(content):
                expected = "no quote of a demonstration (the control removes demonstrations)"
                problems.append(_problem(field, expected, f"the text of demonstration turns[{d}]"))
    return problems


def render_problems(row: Mapping[str, Any]) -> list[str]:
    """Whether the subject prompt renders, with and without demonstrations, leaking nothing."""
    scenario = Scenario.from_row(row)
    problems = []
    for version, field in (
        (scenario, "prompt"),
        (without_demonstrations(scenario), "control prompt"),
    ):
        try:
            subject_messages(version, "naive")
        except LeakError as leak:
            problems.append(_problem(field, "nothing only the judge may see", str(leak)))
    return problems


def followup_check(row: Mapping[str, Any]) -> list[str]:
    """What the follow-up validator (losona/scenarios/followups.py, as fetch runs it) finds."""
    return [
        _problem(p.field, p.expected, p.found)
        for p in followup_problems(row.get(FOLLOWUP), row, "candidate")
    ]


def check_candidate(row: Mapping[str, Any], catalog: Catalog) -> list[str]:
    """Every reason to reject the candidate row; empty when it passes."""
    problems = contract_problems(row, catalog) + construction_problems(row, catalog)
    problems += followup_check(row)
    if not problems:  # rendering needs a well-formed row
        problems = render_problems(row)
    return list(dict.fromkeys(problems))
