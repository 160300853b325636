"""Every kind of broken scenario is refused with a message naming file, scenario and field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from losona.core.catalog import load_catalog
from losona.scenarios.validate import MAX_MESSAGE_CHARS, ScenarioError, check_scenarios

Row = Callable[..., dict[str, Any]]


def problems_of(*rows: dict[str, Any]) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        check_scenarios([("in.jsonl", row) for row in rows], load_catalog())
    return [str(p) for p in caught.value.problems]


def test_a_valid_row_passes(scenario_row: Row) -> None:
    check_scenarios([("in.jsonl", scenario_row())], load_catalog())


def turns_with(**change: Any) -> list[dict[str, Any]]:
    turns = [
        {"index": 1, "actor": "Ana", "content": "Is the dashboard refreshed?", "is_demo": False},
        {"index": 2, "actor": "Bo", "content": "Yes.", "is_demo": True},
    ]
    turns[1].update(change)
    return turns


@pytest.mark.parametrize(
    ("changes", "field", "found"),
    [
        ({"norm_id": "made_up_norm"}, "norm_id", "'made_up_norm'"),
        ({"event_type": "picnic"}, "event_type", "'picnic'"),
        ({"turns": []}, "turns", "[]"),
        ({"turns": turns_with(index=1)}, "turns[1].index", "1"),
        ({"turns": turns_with(index="2")}, "turns[1].index", "'2'"),
        ({"turns": turns_with(is_demo=False)}, "turns", "none marked"),
        ({"turns": turns_with(actor="Zed")}, "turns[1].actor", "'Zed'"),
        ({"turns": turns_with(actor="Noor")}, "turns[1].actor", "the subject 'Noor'"),
        ({"turns": turns_with(content="")}, "turns[1].content", "''"),
        (
            {"turns": turns_with(content="x" * (MAX_MESSAGE_CHARS + 1))},
            "turns[1].content",
            f"{MAX_MESSAGE_CHARS + 1} characters",
        ),
        ({"elicitor_actor": "Noor"}, "elicitor_actor", "the subject 'Noor'"),
        ({"elicitor_actor": "Stranger"}, "elicitor_actor", "'Stranger'"),
        ({"elicitor_index": 2}, "elicitor_index", "2"),
        ({"norm_statement": None}, "norm_statement", "nothing"),
        ({"example_breaching_response": "  "}, "example_breaching_response", "'  '"),
        ({"cast": "Ana, Bo"}, "cast", "'Ana, Bo'"),
        (
            {"cast": [{"name": "Ana", "bio": "x"}, {"name": "Ana", "bio": "y"}]},
            "cast",
            "'Ana' listed 2 times",
        ),
        (
            {
                "cast": [
                    {"name": "Ana", "bio": "x"},
                    {"name": "Bo", "bio": "y"},
                    {"name": "Noor", "bio": "z"},
                ]
            },
            "cast",
            "the subject 'Noor'",
        ),
        ({"scenario_id": "has spaces"}, "scenario_id", "'has spaces'"),
        ({"subject_bio": 42}, "subject_bio", "42"),
    ],
)
def test_each_problem_names_the_file_scenario_and_field(
    scenario_row: Row, changes: dict[str, Any], field: str, found: str
) -> None:
    messages = problems_of(scenario_row(**changes))
    scenario_id = changes.get("scenario_id", scenario_row()["scenario_id"])
    matching = [m for m in messages if f"field '{field}'" in m]
    assert matching, messages
    assert matching[0].startswith(f"in.jsonl: scenario '{scenario_id}': field '{field}'")
    assert f"found {found}" in matching[0]


def test_duplicate_ids_are_refused(scenario_row: Row) -> None:
    messages = problems_of(scenario_row(), scenario_row())
    assert any("expected a unique id" in m for m in messages)


def test_the_norm_stated_in_the_chat_is_refused(scenario_row: Row) -> None:
    row = scenario_row()
    row["turns"][0]["content"] = "Reminder: " + row["norm_statement"].upper()
    messages = problems_of(row)
    assert any("field 'turns[0].content'" in m and "norm statement" in m for m in messages)


def test_the_norm_stated_after_a_malformed_turn_is_named_by_its_own_place(
    scenario_row: Row,
) -> None:
    row = scenario_row()
    stating = {**row["turns"][0], "content": "Reminder: " + row["norm_statement"]}
    row["turns"] = ["not a turn", stating, *row["turns"][1:]]
    messages = problems_of(row)
    stated = [m for m in messages if "norm statement" in m]
    assert len(stated) == 1 and "field 'turns[1].content'" in stated[0], messages


def test_all_problems_are_reported_together(scenario_row: Row) -> None:
    messages = problems_of(scenario_row(norm_id="x", elicitor_actor="Noor", venue=""))
    assert len(messages) >= 3
