"""Judge panels: the rules, ties, unscored members, and members that do not line up."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from conftest import rerun_stages, run_layout, run_stage, verdict_table
from test_aggregate import scenario_table
from test_audit import scenarios_table
from test_judge import AlwaysComplies, responses_table

from losona.core.config import JudgeConfig, load_option, option, plain
from losona.core.contracts import CONTROL_SCHEMA, VERDICT_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.judges.lexicon import LexiconJudge
from losona.judges.panels import (
    PANEL_VERSION,
    combine_controls,
    combine_verdicts,
    panel_description,
    panel_vote,
)
from losona.judges.run import judge_controls, judge_responses, make_judge
from losona.models import CallOptions
from losona.pipeline.panel import run_panel
from losona.pipeline.panel_votes import run_panel_votes
from losona.provenance.record import judge_record


def panel(rule: str = "majority", unscored: str = "abstain", members: int = 3) -> JudgeConfig:
    return JudgeConfig.from_config(
        {
            "name": "jury",
            "kind": "panel",
            "members": ["a", "b", "c"][:members],
            "rule": rule,
            "unscored_members": unscored,
        }
    )


# -- the rules -------------------------------------------------------------------------------

Y, N, U = True, False, None


@pytest.mark.parametrize(
    ("votes", "rule", "unscored", "expected"),
    [
        # Majority of three.
        ((Y, Y, N), "majority", "abstain", (True, "ok")),
        ((N, N, Y), "majority", "abstain", (False, "ok")),
        ((Y, Y, Y), "majority", "abstain", (True, "ok")),
        # An unscored member abstains: the two others decide, and may tie.
        ((Y, Y, U), "majority", "abstain", (True, "ok")),
        ((Y, N, U), "majority", "abstain", (None, "tie")),
        ((U, U, N), "majority", "abstain", (False, "ok")),
        ((U, U, U), "majority", "abstain", (None, "no_votes")),
        # Two members who disagree tie.
        ((Y, N), "majority", "abstain", (None, "tie")),
        # void: one unscored member leaves the panel's verdict unscored.
        ((Y, Y, U), "majority", "void", (None, "member_unscored")),
        ((Y, Y, N), "majority", "void", (True, "ok")),
        # Unanimity: a verdict only when every counted vote agrees.
        ((Y, Y, Y), "unanimous", "abstain", (True, "ok")),
        ((N, N, N), "unanimous", "abstain", (False, "ok")),
        ((Y, Y, N), "unanimous", "abstain", (None, "split")),
        ((Y, U, Y), "unanimous", "abstain", (True, "ok")),
        ((Y, U, Y), "unanimous", "void", (None, "member_unscored")),
        ((U, U), "unanimous", "abstain", (None, "no_votes")),
    ],
)
def test_the_panel_rules(
    votes: tuple[bool | None, ...], rule: str, unscored: str, expected: tuple[bool | None, str]
) -> None:
    assert panel_vote(votes, rule, unscored) == expected


# -- combining verdict tables ------------------------------------------------------------------


def members(labels: dict[str, list[list[bool | None]]], n: int = 3) -> dict[str, pl.DataFrame]:
    """Each member's verdicts on model m under naive, one table per member."""
    scenarios = scenario_table(n)
    return {
        judge: verdict_table({(judge, "m", "naive"): trials}, scenarios)
        for judge, trials in labels.items()
    }


def test_a_panels_verdicts_are_in_the_verdict_contract_with_the_votes_in_words() -> None:
    votes = members(
        {
            "a": [[Y, N], [Y, Y], [N, U]],
            "b": [[Y, N], [N, Y], [N, N]],
            "c": [[N, N], [N, Y], [Y, Y]],
        }
    )
    verdicts = combine_verdicts(panel(), votes)
    assert verdicts.schema == VERDICT_SCHEMA
    # s00: YYN, NNN; s01: YNN, YYY; s02: NNY, then a abstains and b, c split: a tie.
    assert verdicts["complies"].to_list() == [True, False, False, True, False, None]
    assert verdicts["judge_status"].to_list() == ["ok"] * 5 + ["tie"]
    assert set(verdicts["judge"]) == {"jury"}
    assert set(verdicts["judge_version"]) == {PANEL_VERSION}
    assert set(verdicts["judge_model"]) == {"majority of a, b, c (unscored members abstain)"}
    # The response and the scenario's identity come from the members, who agree on them.
    assert verdicts["response"].to_list() == votes["a"]["response"].to_list()
    assert verdicts["reasoning"][5] == (
        "majority of 3 members, a tie: unscored (a: unscored (unparseable); b: breach; c: complies)"
    )


def test_a_response_nobody_could_judge_is_no_response() -> None:
    votes = members({"a": [[Y]], "b": [[Y]]}, n=1)
    for name in votes:
        votes[name] = votes[name].with_columns(
            response=pl.lit(None, pl.String), complies=pl.lit(None, pl.Boolean)
        )
    verdicts = combine_verdicts(panel(members=2), votes)
    assert verdicts.row(0, named=True)["judge_status"] == "no_response"


def test_non_answer_is_kept_when_every_member_that_checks_uptake_agrees() -> None:
    votes = members({"a": [[N], [N]], "b": [[N], [N]]}, n=2)
    votes["a"] = votes["a"].with_columns(non_answer=pl.Series([True, False]))
    verdicts = combine_verdicts(panel(members=2), votes)  # b (an LLM) does not check
    assert verdicts["non_answer"].to_list() == [True, False]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # A member of another K: its third trials are missing in the others.
        (
            lambda votes: votes | members({"b": [[Y, N, Y], [Y, Y, N], [N, N, Y]]}),
            r"member 'a' has no verdict for subject_model 'm', condition 'naive', scenario_id "
            r"'s00', trial '2', which member 'b' has \(3 such\): .* number of trials \(K\)",
        ),
        # A member that misses a scenario.
        (
            lambda votes: votes | {"b": votes["b"].filter(pl.col("scenario_id") != "s01")},
            r"member 'b' has no verdict for .* scenario_id 's01'",
        ),
        # A member that judged other texts.
        (
            lambda votes: votes | {"b": votes["b"].with_columns(response=pl.lit("other"))},
            r"members 'a' and 'b' judged different 'response' for .*scenario_id 's00'",
        ),
        # A member with no verdicts in this run (not in sweep.judges).
        (
            lambda votes: {"a": votes["a"]},
            r"member 'b' has no verdicts in this run: .* add it to sweep.judges",
        ),
        # Another judge's verdicts given as a member's.
        (
            lambda votes: votes | {"b": votes["a"]},
            r"the verdicts given as member 'b''s are judge \['a'\]'s",
        ),
    ],
)
def test_members_that_do_not_line_up_are_refused(change: Any, message: str) -> None:
    votes = members({"a": [[Y, N], [Y, Y], [N, U]], "b": [[Y, N], [N, Y], [N, N]]})
    with pytest.raises(LosonaError, match=message):
        combine_verdicts(panel(members=2), change(votes))


def test_the_panels_controls_combine_its_members_controls() -> None:
    scenarios = scenarios_table(2)
    controls = {j: judge_controls(scenarios, AlwaysComplies(), j) for j in ("a", "b")}
    # b gets the breaching examples right, a does not: unanimity splits on them.
    controls["b"] = controls["b"].with_columns(complies=pl.col("expected"))
    combined = combine_controls(panel("unanimous", members=2), controls)
    assert combined.schema == CONTROL_SCHEMA
    assert combined.height == 4
    by_example = dict(
        combined.group_by("example").agg(pl.col("judge_status").unique().sort()).iter_rows()
    )
    assert by_example == {"compliant": ["ok"], "breaching": ["split"]}
    assert combined.filter(pl.col("example") == "compliant")["complies"].to_list() == [True] * 2


# -- the config ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"members": ["a"]}, r"'judge.members': expected a list of at least two judge names"),
        ({"members": ["a", "a"]}, r"'judge.members': expected each member once"),
        ({"members": ["jury", "a"]}, r"expected other judges than the panel itself"),
        ({"rule": "plurality"}, r"'judge.rule': expected 'majority' or 'unanimous'"),
        ({"rule": None}, r"'judge.rule': expected one of \['majority', 'unanimous'\]"),
        ({"unscored_members": None}, r"'judge.unscored_members': expected one of"),
        ({"model": {"name": "x", "model": "y"}}, r"'judge.model': expected no such setting"),
        ({"max_cost_usd": 1.0}, r"'judge.max_cost_usd': expected no such setting: a panel"),
    ],
)
def test_a_bad_panel_config_is_refused(node: dict[str, Any], message: str) -> None:
    good = {
        "name": "jury",
        "kind": "panel",
        "members": ["a", "b"],
        "rule": "majority",
        "unscored_members": "abstain",
    }
    config = {k: v for k, v in (good | node).items() if v is not None}
    with pytest.raises(LosonaError, match=message):
        JudgeConfig.from_config(config, origin="conf/judge/jury.yaml")


def test_panel_settings_on_another_judge_are_refused() -> None:
    with pytest.raises(LosonaError, match=r"'judge.members': expected no such setting: only"):
        JudgeConfig.from_config({"name": "lexicon", "kind": "lexicon", "members": ["a", "b"]})


def test_the_shipped_panels_and_families() -> None:
    offline = option("judge", "offline_panel")
    assert (offline.members, offline.rule, offline.unscored_members) == (
        ("lexicon", "local_openai"),
        "unanimous",
        "abstain",
    )
    assert panel_description(offline) == (
        "unanimous of lexicon, local_openai (unscored members abstain)"
    )
    assert option("judge", "paper_panel").members == ("gemini_pro", "claude_opus")
    # The paper's eight subjects and two judges name their model family.
    families = {
        name: option("model", name).family
        for name in (
            "gpt_5_5",
            "claude_opus",
            "claude_fable",
            "gemini_pro",
            "qwen_72b",
            "llama_70b",
            "mistral_medium",
            "gemma_27b",
            "smollm2",
        )
    }
    assert families == {
        "gpt_5_5": "OpenAI",
        "claude_opus": "Anthropic",
        "claude_fable": "Anthropic",
        "gemini_pro": "Google",
        "qwen_72b": "Alibaba",
        "llama_70b": "Meta",
        "mistral_medium": "Mistral",
        "gemma_27b": "Google",
        "smollm2": "Hugging Face",
    }
    assert option("judge", "gemini_pro").family == "Google"
    assert option("judge", "claude_opus").family == "Anthropic"
    assert option("judge", "local_openai").family == "test double"
    assert option("judge", "lexicon").family is None


def test_a_panel_is_not_a_judge_to_call(tmp_path: Any) -> None:
    with pytest.raises(LosonaError, match=r"judge 'offline_panel' is a panel: .* conf/panels.yaml"):
        make_judge(option("judge", "offline_panel"), CallOptions(cache_path=tmp_path / "c.sqlite"))


# -- the stages --------------------------------------------------------------------------------


@pytest.mark.slow  # starts a Python process
def test_the_panel_stages_refuse_a_judge_and_a_member_outside_the_sweep(workdir: Any) -> None:
    # Not a panel.
    result = run_stage("panel", "judge=lexicon")
    assert result.returncode == 2, result.stderr
    assert "error: judge 'lexicon' is of kind lexicon, not a panel" in result.stderr
    # The default sweep judges with the lexicon alone: the scripted judge is no judge of it.
    result = run_stage("panel", "judge=offline_panel")
    assert result.returncode == 2, result.stderr
    assert (
        "error: panel 'offline_panel': member 'local_openai' is not in sweep.judges ['lexicon']"
        in result.stderr
    )
    result = run_stage("panel_votes", "judge=offline_panel")
    assert result.returncode == 2, result.stderr
    assert "+member=NAME" in result.stderr
    assert not (workdir / "data").exists()  # nothing written


def made_panel_run(workdir: Any) -> tuple[Any, dict[str, Any]]:
    """A run with the panel offline_panel over lexicon and a scripted judge, its panel's
    stages run by the code as it is now; its layout and provenance record."""
    scenarios = scenarios_table(3)
    responses = responses_table(
        [(sid, t, f"Yes, done ({t}).") for sid in scenarios["scenario_id"] for t in range(2)],
        model="m",
    )
    write_parquet(responses, workdir / "data" / "responses" / "m" / "naive.parquet")
    rules = judge_responses(
        scenarios, responses, LexiconJudge(), "lexicon", model="m", condition="naive", origin=""
    )
    # The scripted judge, here: the rules' verdicts with the first one overturned.
    judge_verdicts = rules.with_columns(
        judge=pl.lit("local_openai"),
        complies=pl.when(pl.int_range(pl.len()) == 0)
        .then(~pl.col("complies"))
        .otherwise(pl.col("complies")),
    )
    panel_config = option("judge", "offline_panel")
    combined = combine_verdicts(panel_config, {"lexicon": rules, "local_openai": judge_verdicts})
    assert combined["judge_status"].to_list().count("split") == 1
    layout = run_layout()
    controls = judge_controls(scenarios, LexiconJudge(), "lexicon")
    for judge, frame in (("lexicon", rules), ("local_openai", judge_verdicts)):
        write_parquet(frame, layout.verdicts(judge, "m", "naive"))
        write_parquet(controls.with_columns(judge=pl.lit(judge)), layout.controls(judge))
    sweep = {"models": ["m"], "conditions": ["naive"], "judges": ["lexicon", "local_openai"]}
    for member in sweep["judges"]:
        run_panel_votes(panel_config, layout, member, sweep)
    run_panel(panel_config, layout, sweep["judges"])
    return layout, {
        "sweep": sweep | {"panels": ["offline_panel"]},
        "judges": {"offline_panel": judge_record(plain(load_option("judge", "offline_panel")))},
    }


def test_reproduce_reruns_a_panels_stages_and_names_a_changed_verdict_or_control(
    workdir: Any,
) -> None:
    layout, record = made_panel_run(workdir)

    def differences() -> list[tuple[str, str]]:
        check = rerun_stages(layout, record, "panel_votes", "panel")
        return [(d.file, d.field) for d in check.differences]

    assert differences() == []
    # A panel verdict changed by hand is named, with the field.
    cell = layout.verdicts("offline_panel", "m", "naive")
    panel_verdicts = pl.read_parquet(cell)
    changed = panel_verdicts.with_columns(
        complies=pl.when(pl.int_range(pl.len()) == 2)
        .then(~pl.col("complies"))
        .otherwise(pl.col("complies"))
    )
    write_parquet(changed, cell)
    assert differences() == [(str(cell), "complies")]
    # So is a panel's validity control, and each number of their summary it moves.
    write_parquet(panel_verdicts, cell)
    table = pl.read_parquet(layout.controls("offline_panel"))
    write_parquet(
        table.with_columns(complies=~pl.col("complies")), layout.controls("offline_panel")
    )
    named = differences()
    assert (str(layout.controls("offline_panel")), "complies") in named


def test_a_panel_run_whose_code_combined_its_controls_otherwise_is_named(
    workdir: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run made by a changed combine_controls (every control voted `comply`), rerun and
    recorded, is rechecked by today's code: the controls file and the summary it moves are
    named with the field and value."""
    import losona.pipeline.panel as panel_stage

    changed = panel_stage.combine_controls
    with monkeypatch.context() as patch:
        patch.setattr(
            panel_stage,
            "combine_controls",
            lambda panel, votes: changed(panel, votes).with_columns(complies=pl.lit(True)),
        )
        layout, record = made_panel_run(workdir)
    check = rerun_stages(layout, record, "panel_votes", "panel")
    named = {(d.file, d.field) for d in check.differences}
    controls = str(layout.controls("offline_panel"))
    assert (controls, "complies") in named
    summary = str(layout.controls_summary("offline_panel"))
    assert any(file == summary and "breaching" in field for file, field in named), named
