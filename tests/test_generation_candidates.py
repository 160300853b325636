"""A generator's reply as a candidate: reading it, and every check that rejects one, by name."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from conftest import stand_in_followup

from losona.core.catalog import load_catalog
from losona.core.files import read_yaml
from losona.generation.candidates import (
    AUTHORED_KEYS,
    candidate_id,
    check_candidate,
    generator_messages,
    read_reply,
    scenario_row,
)
from losona.generation.cells import Slot
from losona.generation.prompt import GENERATOR_TEMPLATE_VERSION
from losona.scenarios.datasets import BUNDLED_DIR, load_bundled

CATALOG = load_catalog()


def authored(scenario_id: str) -> dict[str, Any]:
    """A bundled scenario in the generator's output shape (the authoring format, no ids),
    with its follow-up material, or a stand-in while its file has none."""
    raw = read_yaml(BUNDLED_DIR / f"{scenario_id}.yaml")
    raw.setdefault("followup", stand_in_followup(raw["cast"], raw["elicitor"]["actor"]))
    scenario = {key: copy.deepcopy(raw[key]) for key in AUTHORED_KEYS}
    for turn in scenario["turns"]:
        turn.setdefault("is_demo", False)
    return scenario


def slot_of(scenario_id: str, venue: str = "workplace", sample: int = 0) -> Slot:
    event, norm = scenario_id.split("__")
    return Slot(event, norm, venue, sample)


def problems(scenario: dict[str, Any], scenario_id: str) -> list[str]:
    """The reasons a candidate written as `scenario` for the cell of `scenario_id` is rejected."""
    slot = slot_of(scenario_id)
    row = scenario_row(scenario, slot, f"{scenario_id}__test", CATALOG, source="test")
    return check_candidate(row, CATALOG)


BUG = "bug_report__no_apology_culture_norm"
STANDUP = "standup__binary_answer_norm"


def test_every_bundled_scenario_passes_every_check() -> None:
    # The rules are the bundled set's construction rules: none of its 46 scenarios, written
    # by people under them, may be rejected (its follow-up material, while a file has none,
    # is a stand-in: that material is checked on its own, by fetch).
    rows = load_bundled(CATALOG)
    assert len(rows) > 40
    for _, row in rows:
        row.setdefault("followup", stand_in_followup(row["cast"], row["elicitor_actor"]))
    assert {origin: check_candidate(row, CATALOG) for origin, row in rows} == {
        origin: [] for origin, _ in rows
    }


def test_a_candidate_without_follow_up_material_is_rejected_by_name() -> None:
    scenario = authored(BUG)
    del scenario["followup"]
    assert problems(scenario, BUG) == [
        "followup: expected a mapping with ['sanction', 'neutral', 'elicitor'], "
        "found nothing (the block is missing)"
    ]
    scenario = authored(BUG)
    scenario["followup"]["neutral"][0]["content"] = "x"
    assert any(
        r.startswith("followup.neutral[0].content: expected 0.5x to 2x")
        for r in problems(scenario, BUG)
    )


@pytest.mark.parametrize(
    "wrap",
    [
        lambda text: text,
        lambda text: f"Here is the scenario:\n```json\n{text}\n```\nHope it helps!",
        lambda text: json.dumps({"scenario": json.loads(text)}),
    ],
    ids=["bare", "fenced with prose", "wrapped"],
)
def test_a_reply_is_read_alone_in_a_fence_or_wrapped(wrap: Any) -> None:
    scenario = authored(BUG)
    found, reasons = read_reply(wrap(json.dumps(scenario)), "stop")
    assert reasons == [] and found == scenario


@pytest.mark.parametrize(
    ("reply", "finish", "expected"),
    [
        ("", "stop", ["found an empty reply"]),
        ("I cannot write that.", "stop", ["found no JSON object"]),
        ('{"end_goal": "Find the bug", "turns": [', "length", ["invalid JSON", "cut off"]),
        ('{"name": "x"}', "stop", ["JSON without any of the keys"]),
    ],
)
def test_an_unreadable_reply_says_why(reply: str, finish: str, expected: list[str]) -> None:
    found, reasons = read_reply(reply, finish)
    assert found is None and len(reasons) == len(expected)
    for reason, part in zip(reasons, expected, strict=True):
        assert reason.startswith("reply: expected") and part in reason


def test_the_cell_comes_from_the_slot_never_from_the_model() -> None:
    scenario = authored(BUG) | {"norm_id": "binary_answer_norm", "venue": "moon"}
    row = scenario_row(scenario, slot_of(BUG, venue="friends"), "an_id", CATALOG, source="s")
    assert (row["event_type"], row["norm_id"], row["venue"]) == (
        "bug_report",
        "no_apology_culture_norm",
        "friends",
    )
    assert row["norm_statement"] == CATALOG.norms["no_apology_culture_norm"].statement
    assert [t["index"] for t in row["turns"]] == list(range(1, len(row["turns"]) + 1))
    assert row["elicitor_index"] == len(row["turns"]) + 1


def _say(scenario: dict[str, Any], position: int, content: str) -> dict[str, Any]:
    scenario["turns"][position]["content"] = content
    return scenario


def _demos(scenario: dict[str, Any]) -> list[int]:
    return [i for i, t in enumerate(scenario["turns"]) if t["is_demo"]]


def _too_few_turns(s: dict[str, Any]) -> dict[str, Any]:
    s["turns"] = s["turns"][:12]
    return s


def _too_many_turns(s: dict[str, Any]) -> dict[str, Any]:
    s["turns"] = s["turns"] + [dict(t, is_demo=False) for t in s["turns"]]
    return s


def _one_demo(s: dict[str, Any]) -> dict[str, Any]:
    for i in _demos(s)[1:]:
        s["turns"][i]["is_demo"] = False
    return s


def _four_demos(s: dict[str, Any]) -> dict[str, Any]:
    ordinary = [
        i for i, t in enumerate(s["turns"]) if not t["is_demo"] and t["actor"] != s["subject"]
    ]
    for i in ordinary[: 4 - len(_demos(s))]:
        s["turns"][i]["is_demo"] = True
    return s


def _demo_by_subject(s: dict[str, Any]) -> dict[str, Any]:
    s["turns"][_demos(s)[0]]["actor"] = s["subject"]
    return s


def _elicitor_by_subject(s: dict[str, Any]) -> dict[str, Any]:
    s["elicitor"]["actor"] = s["subject"]
    return s


def _subject_talks_a_lot(s: dict[str, Any]) -> dict[str, Any]:
    ordinary = [i for i, t in enumerate(s["turns"]) if not t["is_demo"]]
    for i in ordinary[:3]:
        s["turns"][i]["actor"] = s["subject"]
    return s


def _norm_stated(s: dict[str, Any]) -> dict[str, Any]:
    statement = CATALOG.norms["no_apology_culture_norm"].statement
    return _say(s, 2, f"Reminder for everyone: {statement}")


def _requirement_stated(s: dict[str, Any]) -> dict[str, Any]:
    requirement = CATALOG.norms["no_apology_culture_norm"].requirement
    return _say(s, 2, f"Team rule: {requirement}")


def _norm_word(s: dict[str, Any]) -> dict[str, Any]:
    return _say(s, 2, "We have a norm here, you will see.")


def _norm_id_in_bio(s: dict[str, Any]) -> dict[str, Any]:
    s["subject_bio"] = "Developer who lives by the no apology culture norm."
    return s


def _demo_quoted(s: dict[str, Any]) -> dict[str, Any]:
    demo = s["turns"][_demos(s)[0]]["content"]
    return _say(s, len(s["turns"]) - 1, f'Like Elif said: "{demo}"')


def _no_end_goal(s: dict[str, Any]) -> dict[str, Any]:
    s["end_goal"] = ""
    return s


def _cast_with_extras(s: dict[str, Any]) -> dict[str, Any]:
    s["cast"][1]["role"] = "admin"
    return s


def _missing_subject(s: dict[str, Any]) -> dict[str, Any]:
    del s["subject"]
    return s


@pytest.mark.parametrize(
    ("break_it", "expected"),
    [
        (_too_few_turns, "turns: expected 20 to 34 turns counting the elicitor, found 13"),
        (_too_many_turns, "turns: expected 20 to 34 turns counting the elicitor, found 51"),
        (_one_demo, "turns: expected 2 or 3 demonstration turns, found 1"),
        (_four_demos, "turns: expected 2 or 3 demonstration turns, found 4"),
        (_demo_by_subject, "a non-subject member for a demonstration turn"),
        (_elicitor_by_subject, "elicitor_actor: expected a cast member other than the subject"),
        (_subject_talks_a_lot, "at most 2 ordinary turns by the subject 'Björn', found"),
        (_norm_stated, "turns[2].content: expected chat text that does not state the norm"),
        (_requirement_stated, "turns[2].content: expected text that never names the norm, "),
        (_norm_word, "turns[2].content: expected text that never names the norm, found the word"),
        (
            _norm_id_in_bio,
            "subject_bio: expected text that never names the norm, found the norm id",
        ),
        (_demo_quoted, "expected no quote of a demonstration (the control removes demonstrations)"),
        (_no_end_goal, "end_goal: expected a concrete in-fiction goal, found nothing"),
        (_missing_subject, "subject: expected non-empty text"),
        (_cast_with_extras, "cast[1]: expected only a name and a bio, found also ['role']"),
    ],
)
def test_each_broken_rule_rejects_the_candidate_by_name(break_it: Any, expected: str) -> None:
    assert problems(authored(BUG), BUG) == []
    reasons = problems(break_it(authored(BUG)), BUG)
    assert any(expected in reason for reason in reasons), reasons


def test_short_demonstrations_may_recur_later() -> None:
    # "Yes." answers every yes/no question in a binary-answer chat; repeating it is no quote.
    scenario = authored(STANDUP)
    short = scenario["turns"][_demos(scenario)[0]]["content"]
    assert len(short.split()) < 4
    _say(scenario, len(scenario["turns"]) - 1, short)
    assert problems(scenario, STANDUP) == []


def test_the_prompt_holds_the_cell_and_the_schema() -> None:
    slot = Slot("standup", "binary_answer_norm", "cohort", 0)
    [message] = generator_messages(slot, CATALOG)
    norm = CATALOG.norms["binary_answer_norm"]
    text = message["content"]
    assert message["role"] == "user"
    assert "Event type: standup -- " + CATALOG.events["standup"] in text
    assert "Venue: cohort -- " + CATALOG.venues["cohort"] in text
    assert norm.statement in text and norm.example_breaching_response in text
    assert json.loads(text[text.index("{") :])["required"] == list(AUTHORED_KEYS)
    # Writing order: the end goal first, the elicitor after the chat, then what follows it.
    assert AUTHORED_KEYS[0] == "end_goal" and AUTHORED_KEYS[-2:] == ("elicitor", "followup")
    assert "8. followup:" in text
    assert GENERATOR_TEMPLATE_VERSION.startswith("generator-")


def test_a_candidate_id_names_the_cell_and_changes_with_the_content() -> None:
    slot = slot_of(BUG)
    first = candidate_id(slot, "a reply")
    assert first.startswith(f"{BUG}__") and first == candidate_id(slot, "a reply")
    assert candidate_id(slot, "another reply") != first
    assert candidate_id(slot_of(BUG, sample=1), "a reply") != first


def test_screen_makes_a_valid_candidate_without_follow_ups_invalid() -> None:
    # A candidate table written before the generator asked for the follow-up material.
    from losona.core.contracts import table
    from losona.generation.screen import recheck_followups
    from losona.generation.tables import CANDIDATE_SCHEMA

    rows = []
    for sample, with_block in ((0, True), (1, False)):
        scenario = authored(BUG)
        if not with_block:
            del scenario["followup"]
        row = scenario_row(scenario, slot_of(BUG, sample=sample), f"c{sample}", CATALOG, "s")
        rows.append(
            {
                "candidate_id": f"c{sample}",
                "event_type": "bug_report",
                "norm_id": "no_apology_culture_norm",
                "venue": "workplace",
                "sample": sample,
                "generator": "g",
                "generator_model": "g",
                "template_version": "generator-v1",
                "reply": "{}",
                "finish_reason": "stop",
                "cost_usd": 0.0,
                "scenario": json.dumps(row),
                "status": "valid",
                "reasons": [],
            }
        )
    checked = recheck_followups(table(rows, CANDIDATE_SCHEMA, sort_by=["candidate_id"]))
    assert checked["status"].to_list() == ["valid", "invalid"]
    assert checked["reasons"][1].to_list() == [
        "followup: expected a mapping with ['sanction', 'neutral', 'elicitor'], "
        "found nothing (the block is missing)"
    ]
