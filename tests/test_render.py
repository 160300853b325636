"""The subject prompt is the paper's Appendix C text, and nothing hidden ever reaches it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from losona.core.contracts import PROMPT_SCHEMA, SCENARIO_SCHEMA, Scenario
from losona.prompts.render import (
    LeakError,
    format_transcript,
    messages_sha256,
    render_prompts,
    subject_messages,
    subject_prompt,
)
from losona.prompts.subject import CONDITION_PREFIXES, SUBJECT_TEMPLATE_VERSION
from losona.scenarios.datasets import fetch_scenarios

Row = Callable[..., dict[str, Any]]
EXPECTED = Path(__file__).parent / "fixtures" / "prompts"
PAPER_CONDITIONS = ["naive", "elicitor_only", "style_adaptation", "norm_informed"]


def scenario(row: dict[str, Any]) -> Scenario:
    return Scenario.from_row(row | {"source": "test"})


@pytest.mark.parametrize("condition", [*PAPER_CONDITIONS, "oracle"])
def test_prompt_matches_the_expected_text(scenario_row: Row, condition: str) -> None:
    expected = (EXPECTED / f"{condition}.txt").read_text(encoding="utf-8")
    assert subject_prompt(scenario(scenario_row()), condition) == expected


def test_prefixes_appear_only_in_their_condition(scenario_row: Row) -> None:
    naive = subject_prompt(scenario(scenario_row()), "naive")
    assert "Reply only to the latest message." not in naive
    informed = subject_prompt(scenario(scenario_row()), "norm_informed")
    assert "There may be a repeated local pattern or norm" in informed
    assert "final message from Ana." in informed
    style = subject_prompt(scenario(scenario_row()), "style_adaptation")
    assert "norm" not in style.lower()


def test_transcript_is_name_colon_text_with_the_elicitor_last(scenario_row: Row) -> None:
    s = scenario(scenario_row())
    assert format_transcript([*s.turns, s.elicitor]).splitlines() == [
        "Ana: Morning! Is the dashboard refreshed?",
        "Bo: Yes.",
        "Ana: Thanks. Loads look slow today.",
        "Ana: Noor, did the nightly load finish?",
    ]


@pytest.mark.parametrize(
    ("leak", "what"),
    [
        ("btw we follow binary_answer_norm here", "the norm id"),
        ("lol binary answer norm", "the norm id in words"),
        (
            "In this group, a yes/no question is answered with a bare yes or no and nothing else.",
            "the norm statement",
        ),
        (
            "Yes, I swapped the toner this morning so it should be fine now.",
            "the example breaching response",
        ),
        ("Yes.  ## DEMO", "the demonstration marker '## demo'"),
    ],
)
def test_leak_guard_fires_naming_the_scenario(scenario_row: Row, leak: str, what: str) -> None:
    row = scenario_row()
    row["turns"][2]["content"] = leak
    with pytest.raises(LeakError) as caught:
        subject_messages(scenario(row), "naive")
    message = str(caught.value)
    assert "scenario 'standup__binary_answer_norm__fixture', condition 'naive'" in message
    assert what in message


def test_short_example_responses_are_ordinary_chat_not_leaks(scenario_row: Row) -> None:
    # The compliant example is "Yes.", which the transcript also contains.
    assert subject_messages(scenario(scenario_row()), "naive")


def test_render_table_is_sorted_hashed_and_versioned(scenario_row: Row) -> None:
    rows = [scenario_row(scenario_id="b"), scenario_row(scenario_id="a")]
    scenarios = pl.DataFrame([r | {"source": "t"} for r in rows], schema=SCENARIO_SCHEMA)
    prompts = render_prompts(scenarios, ["norm_informed", "naive"])
    assert prompts.schema == PROMPT_SCHEMA
    assert prompts.select("scenario_id", "condition").rows() == [
        ("a", "naive"),
        ("a", "norm_informed"),
        ("b", "naive"),
        ("b", "norm_informed"),
    ]
    assert set(prompts["template_version"]) == {SUBJECT_TEMPLATE_VERSION}
    first = prompts.row(0, named=True)
    assert first["prompt_sha256"] == messages_sha256(first["messages"])


def test_no_bundled_scenario_trips_the_leak_guard() -> None:
    scenarios = fetch_scenarios({"kind": "bundled", "name": "bundled"})
    prompts = render_prompts(scenarios, list(CONDITION_PREFIXES))
    assert prompts.height == scenarios.height * len(CONDITION_PREFIXES)
