"""The test server's group mode: the group model's prompt answered as a group model should."""

from __future__ import annotations

import json
import urllib.request

import pytest

from losona.core.contracts import Scenario, scenarios_from_table
from losona.dynamic.group import group_messages, read_group_reply
from losona.scenarios.datasets import fetch_scenarios
from losona.testing.openai_server import OpenAIServer, default_reply
from losona.testing.scripted_group import ScriptedGroup, group_lines
from losona.testing.scripted_judge import ScriptedJudge

BREACH = "Sure! Here is a long and thorough answer, with every detail you could want."


@pytest.fixture(scope="module")
def bundled() -> list[Scenario]:
    return scenarios_from_table(fetch_scenarios({"name": "bundled", "kind": "bundled"}))


@pytest.mark.parametrize("kind", ["sanction", "neutral", "elicitor"])
def test_every_bundled_scenario_gets_lines_the_pipeline_accepts(
    bundled: list[Scenario], kind: str
) -> None:
    counts = set()
    for scenario in bundled:
        first = None if kind == "elicitor" else BREACH
        reply = group_lines(group_messages(scenario, kind, first)[0]["content"])
        messages, problem = read_group_reply(reply, scenario, kind)
        assert problem is None, (scenario.scenario_id, reply, problem)
        cast = {member.name for member in scenario.cast}
        assert {m.actor for m in messages} <= cast and scenario.subject not in reply.split(":")[0]
        # Every line of the reply is read: nothing else (commentary, quotes) is written.
        assert len(messages) == len(reply.splitlines())
        counts.add(len(messages))
        if kind == "elicitor":
            assert messages[0].content.startswith(f"{scenario.subject}, ")
    # One or two messages where the prompt asks for one or two; one where it asks for one.
    assert counts == ({1} if kind == "elicitor" else {1, 2})


def test_a_sanction_and_its_control_are_written_by_the_same_members(
    bundled: list[Scenario],
) -> None:
    differ = 0
    for scenario in bundled:
        sanction, neutral = (
            read_group_reply(
                group_lines(group_messages(scenario, kind, BREACH)[0]["content"]),
                scenario,
                kind,
            )[0]
            for kind in ("sanction", "neutral")
        )
        assert [m.actor for m in sanction] == [m.actor for m in neutral]
        differ += sanction[0].content != neutral[0].content
    assert differ == len(bundled)  # same members, the arm's own words


def test_other_prompts_go_to_the_hook_it_wraps(bundled: list[Scenario]) -> None:
    body = {"messages": [{"role": "user", "content": "Recent messages:\nAna: hi"}], "seed": 3}
    assert ScriptedGroup()(body) == default_reply(body)
    judge = ScriptedJudge(disagree=0.0)
    assert ScriptedGroup(otherwise=judge)(body) == judge(body)
    # A system message before the group prompt does not hide it.
    prompt = group_messages(bundled[0], "neutral", BREACH)
    system = [{"role": "system", "content": "Be brief."}]
    assert ScriptedGroup()({"messages": system + prompt}) == group_lines(prompt[0]["content"])


def test_a_prompt_that_names_no_members_is_refused() -> None:
    with pytest.raises(ValueError, match="names no members"):
        group_lines("Write how the group carries on.")


def test_the_server_in_group_mode_answers_over_http(bundled: list[Scenario]) -> None:
    prompt = group_messages(bundled[1], "sanction", BREACH)
    with OpenAIServer(reply=ScriptedGroup()) as server:
        request = urllib.request.Request(
            f"{server.url}/chat/completions",
            data=json.dumps({"model": "test", "messages": prompt}).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as answer:
            text = json.load(answer)["choices"][0]["message"]["content"]
    assert text == group_lines(prompt[0]["content"])
    assert read_group_reply(text, bundled[1], "sanction")[1] is None
