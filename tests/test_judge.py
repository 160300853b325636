"""Judging a table: verdicts for a responses table, validity controls, judges from config."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import CONF_DIR, compose_config

from losona.core.config import option, plain
from losona.core.contracts import (
    CONTROL_SCHEMA,
    RESPONSE_SCHEMA,
    SCENARIO_SCHEMA,
    VERDICT_SCHEMA,
    Scenario,
    table,
)
from losona.core.errors import LosonaError
from losona.judges.base import JudgeCase, Judgement, demonstration_cases
from losona.judges.lexicon import LexiconJudge
from losona.judges.llm import LLMJudge
from losona.judges.run import (
    control_summary,
    judge_controls,
    judge_responses,
    make_judge,
    status_counts,
)
from losona.models import CallOptions
from losona.scenarios.datasets import fetch_scenarios

Row = Callable[..., dict[str, Any]]


def scenarios_table(*rows: dict[str, Any]) -> pl.DataFrame:
    return table([r | {"source": "test"} for r in rows], SCENARIO_SCHEMA, sort_by=["scenario_id"])


def responses_table(
    items: Sequence[tuple[str, int, str | None]], model: str = "smollm2", condition: str = "naive"
) -> pl.DataFrame:
    rows = [
        {
            "scenario_id": scenario_id,
            "condition": condition,
            "subject_model": model,
            "provider_model": "test/model",
            "trial": trial,
            "prompt_sha256": "0" * 64,
            "response": response,
            "finish_reason": "stop",
            "prompt_tokens": 10,
            "completion_tokens": 2,
            "cost_usd": 0.0,
        }
        for scenario_id, trial, response in items
    ]
    return table(rows, RESPONSE_SCHEMA, sort_by=["scenario_id", "trial"])


class AlwaysComplies:
    """A broken judge: it says every message complies."""

    model = "broken@0"
    version = "0"

    def judge(self, cases: Sequence[JudgeCase]) -> list[Judgement]:
        self.seen = list(cases)
        return [Judgement(True, None, None, None, "always yes", "ok") for _ in cases]


def judge_one_cell(scenarios: pl.DataFrame, responses: pl.DataFrame, **cell: str) -> pl.DataFrame:
    where = {"model": "smollm2", "condition": "naive"} | cell
    return judge_responses(
        scenarios, responses, LexiconJudge(), "lexicon", origin="responses.parquet", **where
    )


def test_verdicts_follow_the_contract_one_per_response(scenario_row: Row) -> None:
    sid = scenario_row()["scenario_id"]
    responses = responses_table(
        [(sid, 2, "Yes, and it finished early."), (sid, 0, "Yes."), (sid, 1, None)]
    )
    verdicts = judge_one_cell(scenarios_table(scenario_row()), responses)
    assert verdicts.schema == VERDICT_SCHEMA
    assert verdicts["trial"].to_list() == [0, 1, 2]
    assert verdicts["complies"].to_list() == [True, None, False]
    assert verdicts["judge_status"].to_list() == ["ok", "no_response", "ok"]
    first = verdicts.row(0, named=True)
    assert first["scenario_id"] == sid
    assert (first["event_type"], first["norm_id"]) == ("standup", "binary_answer_norm")
    assert (first["subject_model"], first["condition"]) == ("smollm2", "naive")
    assert (first["judge"], first["judge_model"]) == ("lexicon", LexiconJudge().model)
    assert first["judge_version"] == LexiconJudge().version
    assert status_counts(verdicts) == "1 comply, 1 breach, 1 unscored (1 no_response)"


def test_the_judge_sees_the_scenario_chat_and_never_the_end_goal(scenario_row: Row) -> None:
    row = scenario_row()
    judge = AlwaysComplies()
    responses = responses_table([(row["scenario_id"], 0, "Yes.")])
    judge_responses(
        scenarios_table(row),
        responses,
        judge,
        "broken",
        model="smollm2",
        condition="naive",
        origin="r",
    )
    (case,) = judge.seen
    assert case.elicitor_content == row["elicitor_content"]
    assert case.prior_transcript.splitlines()[0] == "Ana: Morning! Is the dashboard refreshed?"
    assert case.norm_statement == row["norm_statement"]
    assert row["end_goal"] not in repr(case)


@pytest.mark.parametrize(
    ("responses", "cell", "message"),
    [
        (
            responses_table([("no_such_scenario", 0, "Yes.")]),
            {},
            "responses.parquet: scenario 'no_such_scenario' is not in the scenario table",
        ),
        (
            responses_table([("standup__binary_answer_norm__fixture", 0, "Yes.")], model="other"),
            {},
            "responses.parquet: column 'subject_model' holds ['other'], expected only 'smollm2'",
        ),
        (
            responses_table([("standup__binary_answer_norm__fixture", 0, "Yes.")]),
            {"condition": "oracle"},
            "column 'condition' holds ['naive'], expected only 'oracle'",
        ),
        (
            responses_table(
                [
                    ("standup__binary_answer_norm__fixture", 0, "Yes."),
                    ("standup__binary_answer_norm__fixture", 0, "No."),
                ]
            ),
            {},
            "scenario 'standup__binary_answer_norm__fixture' has trial 0 more than once",
        ),
        (responses_table([]), {}, "responses.parquet: holds no responses"),
    ],
)
def test_responses_that_do_not_fit_are_refused(
    scenario_row: Row, responses: pl.DataFrame, cell: dict[str, str], message: str
) -> None:
    with pytest.raises(LosonaError) as error:
        judge_one_cell(scenarios_table(scenario_row()), responses, **cell)
    assert message in str(error.value)


def test_controls_score_both_examples_of_every_scenario(scenario_row: Row) -> None:
    rows = [scenario_row(), scenario_row(scenario_id="standup__binary_answer_norm__second")]
    controls = judge_controls(scenarios_table(*rows), LexiconJudge(), "lexicon")
    assert controls.schema == CONTROL_SCHEMA
    assert controls.select("scenario_id", "example", "expected").rows() == [
        ("standup__binary_answer_norm__fixture", "breaching", False),
        ("standup__binary_answer_norm__fixture", "compliant", True),
        ("standup__binary_answer_norm__second", "breaching", False),
        ("standup__binary_answer_norm__second", "compliant", True),
    ]
    assert controls["response"].to_list()[:2] == [
        rows[0]["example_breaching_response"],
        rows[0]["example_compliant_response"],
    ]


def test_controls_judge_each_example_as_a_reply_to_the_example_elicitor(scenario_row: Row) -> None:
    judge = AlwaysComplies()
    judge_controls(scenarios_table(scenario_row()), judge, "broken")
    for case in judge.seen:
        assert case.elicitor_content == scenario_row()["example_elicitor"]
        assert case.prior_transcript == "(no earlier messages)"


def test_a_broken_judge_shows_itself_in_the_controls(scenario_row: Row) -> None:
    controls = judge_controls(scenarios_table(scenario_row()), AlwaysComplies(), "broken")
    summary = control_summary(controls)
    assert summary["judge_model"] == "broken@0"
    assert summary["compliant"] == {
        "items": 1,
        "right": 1,
        "wrong": 0,
        "unscored": 0,
        "accuracy": 100.0,
    }
    assert summary["breaching"] == {
        "items": 1,
        "right": 0,
        "wrong": 1,
        "unscored": 0,
        "accuracy": 0.0,
    }
    assert summary["all"]["accuracy"] == 50.0


def test_unscored_controls_are_neither_right_nor_wrong(scenario_row: Row) -> None:
    controls = judge_controls(scenarios_table(scenario_row()), AlwaysComplies(), "broken")
    controls = controls.with_columns(
        complies=pl.when(pl.col("example") == "breaching").then(None).otherwise(pl.col("complies")),
        judge_status=pl.when(pl.col("example") == "breaching")
        .then(pl.lit("unparseable"))
        .otherwise(pl.col("judge_status")),
    )
    summary = control_summary(controls)
    assert summary["all"] == {"items": 2, "right": 1, "wrong": 0, "unscored": 1, "accuracy": 50.0}
    assert status_counts(controls) == "1 comply, 0 breach, 1 unscored (1 unparseable)"


def test_demonstrations_are_judged_as_replies_to_the_message_before_them() -> None:
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"})
    row = scenarios.filter(pl.col("norm_id") == "binary_answer_norm").row(0, named=True)
    scenario = Scenario.from_row(row)
    cases = demonstration_cases(scenario)
    demos = [t for t in scenario.turns if t.is_demo]
    assert [c.response for c in cases] == [t.content for t in demos]
    for case, demo in zip(cases, demos, strict=True):
        before = scenario.turns[scenario.turns.index(demo) - 1]
        assert (case.elicitor_actor, case.elicitor_content) == (before.actor, before.content)
        assert case.subject == demo.actor
        assert before.content not in case.prior_transcript.splitlines()[-1:]


def test_make_judge_builds_the_configured_kind(tmp_path: Path) -> None:
    judge = make_judge(
        {"name": "lexicon", "kind": "lexicon"}, CallOptions(cache_path=tmp_path / "c")
    )
    assert isinstance(judge, LexiconJudge)
    node = {"name": "mine", "model": "openai/x", "params": {"temperature": 0}}
    llm_judge = make_judge(
        {"name": "mine", "kind": "llm", "model": node, "max_cost_usd": 2},
        CallOptions(cache_path=tmp_path),
    )
    assert isinstance(llm_judge, LLMJudge)
    assert (llm_judge.model, llm_judge.options.max_cost_usd) == ("openai/x", 2.0)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"name": "mine", "kind": "oracle"},
            "judge 'mine': 'judge.kind': expected 'lexicon', 'llm' or 'panel', found 'oracle'",
        ),
        (
            {"name": "mine", "kind": "llm"},
            "judge 'mine': 'judge.model': expected a node shaped like conf/model/*.yaml",
        ),
        (
            {"name": "mine", "kind": "lexicon", "temperature": 0},
            "judge 'mine': 'judge.temperature': expected one of the settings [",
        ),
        (
            {"name": "mine", "kind": "lexicon", "model": {"name": "x"}},
            "'judge.model': expected no such setting: the lexicon judge calls no model",
        ),
        (
            {
                "name": "mine",
                "kind": "llm",
                "model": {"name": "x", "model": "openai/x"},
                "max_cost_usd": "5",
            },
            "judge 'mine': 'judge.max_cost_usd': expected null or a finite, non-negative "
            "number of dollars, found '5'",
        ),
        (
            {"name": "mine", "kind": "llm", "model": {"name": "x", "model": "openai/x", "temp": 0}},
            "judge 'mine': 'judge.model.temp': expected one of the settings [",
        ),
    ],
)
def test_a_wrong_judge_config_is_refused(
    config: dict[str, Any], message: str, tmp_path: Path
) -> None:
    with pytest.raises(LosonaError) as error:
        make_judge(config, CallOptions(cache_path=tmp_path / "c"))
    assert message in str(error.value)


def test_a_judge_config_must_carry_its_files_name(workdir: Path) -> None:
    assert option("judge", "gemini_pro").name == "gemini_pro"
    (workdir / "conf").unlink()
    shutil.copytree(CONF_DIR, workdir / "conf")
    shutil.copy(workdir / "conf/judge/gemini_pro.yaml", workdir / "conf/judge/mine.yaml")
    expected = r"conf/judge/mine\.yaml: 'judge.name': expected the file's name 'mine'"
    with pytest.raises(LosonaError, match=expected):
        option("judge", "mine")


@pytest.mark.parametrize("option", sorted(p.stem for p in (CONF_DIR / "judge").glob("*.yaml")))
def test_shipped_judges_compose_and_llm_judges_use_the_papers_settings(
    option: str, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = plain(compose_config([f"judge={option}"]).judge)
    if config["kind"] == "llm":
        if key_env := config["model"].get("api_key_env"):  # the test server's needs none
            monkeypatch.setenv(key_env, "not-a-real-key")
        # Section 5.2: temperature 0 and no reasoning or thinking parameters.
        assert config["model"]["params"] == {"temperature": 0}
    if config["kind"] == "panel":  # combines its members' verdicts: nothing to call
        for member in config["members"]:
            assert (CONF_DIR / "judge" / f"{member}.yaml").is_file()
        return
    make_judge(config, CallOptions(cache_path=workdir / "calls.sqlite"))


def test_the_paper_judge_is_gemini_3_1_pro_preview(workdir: Path) -> None:
    config = plain(compose_config(["judge=gemini_pro"]).judge)
    assert config["model"]["model"] == "gemini/gemini-3.1-pro-preview"
