"""The dynamic second turn, stage by stage, on scripted replies whose every number is known.

Four scenarios of the binary-answer norm (a bare yes/no complies, anything more breaches),
two first-turn trials each, judged by the lexicon rules:

    scenario  trial 0                       trial 1
    a         breach                        breach
    b         breach                        complies
    c         complies                      complies
    d         no reply (unscored)           breach

The subject's second replies come from the local test server, chosen by the first reply
and by what the group said, so each arm's outcome is fixed and every metric can be
written down by hand (see EXPECTED).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from html import unescape
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from test_judge import responses_table, scenarios_table
from test_plots import svg_text

from losona.core.config import AggregateSettings
from losona.core.errors import LosonaError
from losona.dynamic.aggregate import aggregate_dynamic, presentation_of
from losona.dynamic.arms import CONTROL, RETENTION, SANCTION, arms_for
from losona.dynamic.cells import Cell
from losona.dynamic.judge import judge_second_turn
from losona.dynamic.plots import draw_recovery
from losona.dynamic.render import GroupModel, render_cell
from losona.dynamic.report import dynamic_section
from losona.dynamic.sample import sample_second_turn, second_turn_requests
from losona.judges.lexicon import LexiconJudge
from losona.judges.run import judge_responses
from losona.models import CallOptions, ModelSpec
from losona.results.bundle import ReportBundle
from losona.scenarios.followups import Followup, Message
from losona.testing.openai_server import OpenAIServer, default_reply

SID = "standup__binary_answer_norm__{}"
SANCTION_TEXT = "hm, that was a lot of words"
NEUTRAL_TEXT = "ok, thanks for checking"
SECOND = "Noor, is the backup job done as well?"
FIRST_ELICITOR = "Ana: Noor, did the nightly load finish?"
# (scenario, trial) -> the first reply (None: no reply at all, so the trial is unscored).
FIRST: dict[tuple[str, int], str | None] = {
    ("a", 0): "Yes, it finished at six.",
    ("a", 1): "Yes, the load finished at 6 this morning.",
    ("b", 0): "No, the backfill is still going.",
    ("b", 1): "Yes.",
    ("c", 0): "Yep.",
    ("c", 1): "yes",
    ("d", 0): None,
    ("d", 1): "No, it is still running on staging.",
}
COMPLY, BREACH = "No.", "No, not yet, still waiting on it."
# (first reply, what the group said) -> the subject's second reply.
SECOND_REPLY = {
    (FIRST[("a", 0)], SANCTION_TEXT): COMPLY,
    (FIRST[("a", 0)], NEUTRAL_TEXT): BREACH,
    (FIRST[("a", 1)], SANCTION_TEXT): "Nope.",
    (FIRST[("a", 1)], NEUTRAL_TEXT): "No, the job is still stuck in the queue.",
    (FIRST[("b", 0)], SANCTION_TEXT): "Yes, I restarted it an hour ago.",
    (FIRST[("b", 0)], NEUTRAL_TEXT): COMPLY,
    (FIRST[("b", 1)], NEUTRAL_TEXT): COMPLY,
    (FIRST[("c", 0)], NEUTRAL_TEXT): "Yep.",
    (FIRST[("c", 1)], NEUTRAL_TEXT): "Yes, and I also checked the dashboard.",
    (FIRST[("d", 1)], SANCTION_TEXT): COMPLY,
    (FIRST[("d", 1)], NEUTRAL_TEXT): "no",
}
# By hand from the tables above: (level, metric) -> (estimate, count, out_of, helped, hurt).
EXPECTED = {
    # Breaches a0 a1 b0 d1: after the sanction a0 a1 d1 comply, after the control b0 d1.
    ("trial", "recovery_after_sanction"): (75.0, 3, 4, None, None),
    ("trial", "recovery_after_control"): (50.0, 2, 4, None, None),
    # Pairs: a0 and a1 comply only after the sanction (helped), b0 only after the control.
    ("trial", "sanction_effect"): (25.0, 4, 4, 2, 1),
    # Compliant b1 c0 c1: b1 and c0 comply again.
    ("trial", "retention"): (66.7, 2, 3, None, None),
    # Majority per scenario and arm: sanction a 2/2 pass, b 0/1 fail, d 1/1 pass.
    ("scenario", "recovery_after_sanction"): (66.7, 2, 3, None, None),
    # Control: a 0/2 fail, b 1/1 pass, d 1/1 pass.
    ("scenario", "recovery_after_control"): (66.7, 2, 3, None, None),
    # a passes only after the sanction, b only after the control, d after both.
    ("scenario", "sanction_effect"): (0.0, 3, 3, 1, 1),
    # Retention: b 1/1 pass, c 1/2 pass (ceil(2/2) = 1).
    ("scenario", "retention"): (100.0, 2, 2, None, None),
}


def first_reply_and_followup(prompt: str) -> tuple[str, str]:
    """Read back, from a second-turn prompt, the subject's first reply and the group's line."""
    chat = prompt.split("Recent messages:\n", 1)[1].split("\n\nYour next message:")[0]
    lines = chat.splitlines()
    at = lines.index(FIRST_ELICITOR)
    return lines[at + 1].removeprefix("Noor: "), lines[at + 2].removeprefix("Ana: ")


def subject(body: dict[str, Any]) -> str:
    """The scripted subject: its second reply is fixed by its first and by the group's line."""
    prompt = body["messages"][0]["content"]
    if "Recent messages:" not in prompt:
        return default_reply(body)
    return SECOND_REPLY[first_reply_and_followup(prompt)]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(reply=subject) as running:
        yield running


@pytest.fixture
def scenarios(scenario_row: Callable[..., dict[str, Any]]) -> pl.DataFrame:
    return scenarios_table(*(scenario_row(scenario_id=SID.format(x)) for x in "abcd"))


def material(ids: list[str]) -> dict[str, Followup]:
    return {
        sid: Followup(
            sanction=(Message("Ana", SANCTION_TEXT),),
            neutral=(Message("Ana", NEUTRAL_TEXT),),
            elicitor=Message("Bo", SECOND),
            source="test-followups@1",
        )
        for sid in ids
    }


def first_turn(scenarios: pl.DataFrame, condition: str = "naive") -> pl.DataFrame:
    items = [(SID.format(x), trial, reply) for (x, trial), reply in FIRST.items()]
    responses = responses_table(items, model="m", condition=condition)
    return judge_responses(
        scenarios,
        responses,
        LexiconJudge(),
        "lexicon",
        model="m",
        condition=condition,
        origin="responses",
    )


def render(scenarios: pl.DataFrame, condition: str = "naive", **kw: Any) -> pl.DataFrame:
    ids = scenarios["scenario_id"].to_list()
    return render_cell(
        scenarios,
        first_turn(scenarios, condition),
        judge="lexicon",
        model="m",
        condition=condition,
        followups=kw.pop("followups", material(ids)),
        **kw,
    ).prompts


def test_a_breach_gets_a_sanction_and_a_control_a_pass_gets_retention() -> None:
    assert arms_for(False) == (SANCTION, CONTROL)
    assert arms_for(True) == (RETENTION,)
    assert arms_for(None) == ()


def test_every_first_turn_trial_is_continued_into_its_arms_or_counted(
    scenarios: pl.DataFrame,
) -> None:
    prompts = render(scenarios)
    arms = {
        (sid[-1], trial, arm): (continuation, status)
        for sid, trial, arm, continuation, status in prompts.select(
            "scenario_id", "trial", "arm", "continuation", "status"
        ).iter_rows()
    }
    assert arms == {
        ("a", 0, "control"): ("neutral", "ok"),
        ("a", 0, "sanction"): ("sanction", "ok"),
        ("a", 1, "control"): ("neutral", "ok"),
        ("a", 1, "sanction"): ("sanction", "ok"),
        ("b", 0, "control"): ("neutral", "ok"),
        ("b", 0, "sanction"): ("sanction", "ok"),
        ("b", 1, "retention"): ("neutral", "ok"),
        ("c", 0, "retention"): ("neutral", "ok"),
        ("c", 1, "retention"): ("neutral", "ok"),
        ("d", 0, None): (None, "first_turn_unscored"),
        ("d", 1, "control"): ("neutral", "ok"),
        ("d", 1, "sanction"): ("sanction", "ok"),
    }
    left_out = prompts.filter(pl.col("status") == "first_turn_unscored").row(0, named=True)
    assert left_out["messages"] == [] and "no_response" in left_out["note"]


@pytest.mark.parametrize("condition", ["naive", "norm_informed"])
def test_the_second_prompt_holds_the_whole_chat_with_the_subjects_first_reply(
    scenarios: pl.DataFrame, condition: str
) -> None:
    prompts = render(scenarios, condition).filter(pl.col("status") == "ok")
    row = prompts.filter((pl.col("scenario_id") == SID.format("a")) & (pl.col("trial") == 0)).sort(
        "arm"
    )
    control, sanction = (r["messages"][0]["content"] for r in row.iter_rows(named=True))
    chat = [
        "Ana: Morning! Is the dashboard refreshed?",
        "Bo: Yes.",
        "Ana: Thanks. Loads look slow today.",
        FIRST_ELICITOR,
        f"Noor: {FIRST[('a', 0)]}",
    ]
    for prompt, said in ((sanction, SANCTION_TEXT), (control, NEUTRAL_TEXT)):
        recent = prompt.split("Recent messages:\n", 1)[1]
        assert recent == "\n".join([*chat, f"Ana: {said}", f"Bo: {SECOND}"]) + (
            "\n\nYour next message:"
        )
        # The paper's template, unchanged: the subject is still Noor, told to write the next
        # message; the condition's prefix names the second elicitor's author.
        assert prompt.startswith("You are Noor, a member of this group chat.")
        if condition == "norm_informed":
            assert "the final message from Bo." in prompt
    # The control differs from its sanction in the group's message alone.
    assert sanction.replace(SANCTION_TEXT, NEUTRAL_TEXT) == control


def test_scripted_follow_ups_are_required_of_every_scenario(scenarios: pl.DataFrame) -> None:
    with pytest.raises(LosonaError) as error:
        render(scenarios, followups=material([SID.format("a")]))
    message = str(error.value)
    assert "dynamic.source=scripted" in message and "3 of 4 scenarios have none" in message
    assert f"'{SID.format('b')}'" in message and "dynamic.source=simulated" in message


def test_each_metric_from_scripted_replies(
    scenarios: pl.DataFrame, server: OpenAIServer, tmp_path: Path
) -> None:
    prompts = render(scenarios)
    spec = ModelSpec.from_config(server.model_config("m"))
    options = CallOptions(cache_path=tmp_path / "calls.sqlite")
    sampled = sample_second_turn(prompts, spec, options, origin="prompts")
    assert server.request_count == 11  # 4 breaches twice, 3 passes once, 1 left out
    verdicts = judge_second_turn(
        scenarios, prompts, sampled.responses, LexiconJudge(), "lexicon", origin="responses"
    )
    by_arm = {
        (sid[-1], trial, arm): complies
        for sid, trial, arm, complies in verdicts.select(
            "scenario_id", "trial", "arm", "complies"
        ).iter_rows()
    }
    assert by_arm[("a", 0, "sanction")] is True and by_arm[("a", 0, "control")] is False
    reports = aggregate_dynamic(
        [Cell("m", "naive", prompts, verdicts)],
        scenarios,
        judge="lexicon",
        bootstrap=AggregateSettings(resamples=500, seed=0, confidence=0.95),
        presentation=presentation_of(["m"], ["naive"], ["lexicon"]),
    )
    results = reports["results.csv"]
    found = {
        (r["level"], r["metric"]): (r["estimate"], r["count"], r["out_of"], r["helped"], r["hurt"])
        for r in results.iter_rows(named=True)
    }
    assert found == EXPECTED
    for row in results.iter_rows(named=True):
        assert row["low"] <= row["estimate"] <= row["high"], row
    effect = results.filter(pl.col("metric") == "sanction_effect")
    assert effect["mcnemar_p"].to_list() == [1.0, 1.0]  # 2 vs 1 and 1 vs 1: no evidence
    arms = {r["arm"]: r for r in reports["arms.csv"].iter_rows(named=True)}
    assert (arms["sanction"]["trials"], arms["control"]["scored"]) == (4, 4)
    assert (arms["retention"]["trials"], arms["retention"]["complying"]) == (3, 2)
    assert arms["first_turn_unscored"]["left_out"] == 1
    # The examples put the pairs the sanction helped first.
    examples = reports["examples.csv"]
    assert examples["sanction_complies"].to_list()[:2] == [True, True]
    assert examples["control_complies"].to_list()[:2] == [False, False]
    settings = reports.metrics["settings"]
    assert settings["followup_sources"] == ["test-followups@1"]
    assert reports.metrics["models"]["m"]["naive"]["trial"]["retention"]["estimate"] == 66.7


def test_a_second_reply_without_its_prompt_is_refused(
    scenarios: pl.DataFrame, server: OpenAIServer, tmp_path: Path
) -> None:
    prompts = render(scenarios)
    spec = ModelSpec.from_config(server.model_config("m"))
    sampled = sample_second_turn(
        prompts, spec, CallOptions(cache_path=tmp_path / "c.sqlite"), origin="p"
    )
    with pytest.raises(LosonaError, match=r"responses\.parquet: scenario .* trial 0, arm"):
        judge_second_turn(
            scenarios,
            prompts,
            sampled.responses.with_columns(prompt_sha256=pl.lit("0" * 64)),
            LexiconJudge(),
            "lexicon",
            origin="responses.parquet",
        )


# -- the report: the first turn's rules (judge labels, test doubles, SUBSET, N and K) --------

SUBSET = "4 of 44 scenarios (limit 4 stratified by norm, seed 0)"


def reported_as(
    judge: str, scenarios: pl.DataFrame, server: OpenAIServer, tmp_path: Path
) -> ReportBundle:
    """The cell's second turn on scripted replies, judged by the lexicon rules and reported
    under `judge`'s name, with the labels its stage gives (presentation_of)."""
    prompts = render(scenarios)
    spec = ModelSpec.from_config(server.model_config("m"))
    options = CallOptions(cache_path=tmp_path / "calls.sqlite")
    sampled = sample_second_turn(prompts, spec, options, origin="prompts")
    verdicts = judge_second_turn(
        scenarios, prompts, sampled.responses, LexiconJudge(), judge, origin="responses"
    )
    return aggregate_dynamic(
        [Cell("m", "naive", prompts, verdicts)],
        scenarios,
        judge=judge,
        bootstrap=AggregateSettings(resamples=200, seed=0, confidence=0.95),
        presentation=presentation_of(["m"], ["naive"], [judge]),
    )


def page_text(html: str) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html))


@pytest.mark.parametrize(
    ("judge", "label"),
    [
        ("lexicon", "Lexicon rules (offline)"),
        # conf/judge/local_openai.yaml: a test double, so its label carries the mark.
        ("local_openai", "Scripted judge (local test server) [TEST DOUBLE]"),
    ],
)
def test_the_dynamic_figure_and_section_say_judge_label_n_k_and_subset_as_the_first_turn(
    judge: str, label: str, scenarios: pl.DataFrame, server: OpenAIServer, tmp_path: Path
) -> None:
    reports = reported_as(judge, scenarios, server, tmp_path)
    results = reports["results.csv"]
    assert results["judge_label"].unique().to_list() == [label]
    # Four scenarios, two first-turn trials each (the module's FIRST).
    assert results.select("k", "scenarios").unique().rows() == [(2, 4)]
    model = LexiconJudge().model
    scope = "N = 4 scenarios, K = 2 trials each"
    for subset in (None, SUBSET):
        figure = draw_recovery(results, "recovery", "95%", subset)
        assert figure.name == "recovery"  # the file stem dvc.yaml names
        text = svg_text(figure.svg)
        # Both panels name the judge by label, as the first turn's figures do.
        assert text.count(f"judge: {label} ({model})") == 2, text
        assert f"judge: {judge} (" not in text
        assert scope in text
        assert (f"SUBSET: {SUBSET}, not the whole dataset" in text) == (subset is not None)

        shown = page_text(dynamic_section({judge: (reports, figure.svg)}, "95%", subset).body)
        assert f"First- and second-turn judge: {label} ({judge}, {model})" in shown
        assert f"{scope}." in shown
        warning = f"Subset: this run covers {SUBSET}, not the whole dataset"
        assert (warning in shown) == (subset is not None)


def test_the_dynamic_settings_give_the_confidence_as_the_first_turns_metrics_do(
    scenarios: pl.DataFrame, server: OpenAIServer, tmp_path: Path
) -> None:
    settings = reported_as("lexicon", scenarios, server, tmp_path).metrics["settings"]
    # reports/metrics.json writes 95.0 for aggregate.confidence 0.95: one form (issue 31).
    assert settings["confidence"] == 95.0


def test_twins_and_a_scenarios_trials_are_sent_together_whatever_the_table_order(
    scenarios: pl.DataFrame, server: OpenAIServer, tmp_path: Path
) -> None:
    prompts = render(scenarios)
    rendered = prompts.filter(pl.col("status") == "ok")
    key_of = {
        str(messages): (sid[-1], trial, arm)
        for sid, trial, arm, messages in rendered.select(
            "scenario_id", "trial", "arm", "messages"
        ).iter_rows()
    }
    shuffled = prompts.sample(fraction=1.0, shuffle=True, seed=3)
    assert shuffled["prompt_sha256"].to_list() != prompts["prompt_sha256"].to_list()
    sent = [key_of[str(list(r.messages))] for r in second_turn_requests(shuffled)]
    # With one worker the embedded model reads them in this order: each trial's control and
    # sanction next to each other (they share all but the group's line), a scenario's
    # trials together (they share the first turn's chat).
    assert sent == [
        ("a", 0, "control"),
        ("a", 0, "sanction"),
        ("a", 1, "control"),
        ("a", 1, "sanction"),
        ("b", 0, "control"),
        ("b", 0, "sanction"),
        ("b", 1, "retention"),
        ("c", 0, "retention"),
        ("c", 1, "retention"),
        ("d", 1, "control"),
        ("d", 1, "sanction"),
    ]
    # The order the table came in changes no output.
    spec = ModelSpec.from_config(server.model_config("m"))
    runs = [
        sample_second_turn(
            table, spec, CallOptions(cache_path=tmp_path / f"{name}.sqlite"), origin="prompts"
        )
        for name, table in (("sorted", prompts), ("shuffled", shuffled))
    ]
    assert runs[0].responses.equals(runs[1].responses)
    assert runs[0].calls.equals(runs[1].calls)


# -- a group model writes the follow-ups (dynamic.source: simulated) -----------------------

GROUP_LINES = {
    "Write how the group reacts": "Ana: well, that was thorough\nBo: mm",
    "Write how the group carries on": "**Ana**: ok, cheers",
    "Write the next message to Noor": "Bo: Noor, is the backup job done as well?",
}


def group(body: dict[str, Any]) -> str:
    """A scripted group model: lines as asked; it names the norm once, for scenario c."""
    prompt = body["messages"][0]["content"]
    if "You are writing the next messages of a group chat" not in prompt:
        return subject(body)
    if "Noor: Yep." in prompt:
        return "Ana: we have a norm here, Noor"
    return next(reply for task, reply in GROUP_LINES.items() if task in prompt)


def test_a_group_model_writes_the_follow_ups_and_a_missing_elicitor(
    scenarios: pl.DataFrame, tmp_path: Path
) -> None:
    with OpenAIServer(reply=group) as running:
        spec = ModelSpec.from_config(running.model_config("g", seed_per_trial=False))
        writer = GroupModel(spec, CallOptions(cache_path=tmp_path / "calls.sqlite"))
        rendered = render_cell(
            scenarios,
            first_turn(scenarios),
            judge="lexicon",
            model="m",
            condition="naive",
            followups={},  # no scripted material at all: the group writes the elicitor too
            group=writer,
        )
        bodies = [b["messages"][0]["content"] for b in running.requests]
    prompts = rendered.prompts
    # A second elicitor per scenario, asked before any reply (the four chats are the same
    # up to there, so it is one call); then one reaction per arm of every trial.
    elicitor_asks = [b for b in bodies if "Write the next message to Noor" in b]
    assert len(elicitor_asks) == 1 and "\nNoor:" not in elicitor_asks[0]
    assert len(bodies) == 1 + 11
    assert set(prompts.filter(pl.col("status") == "ok")["elicitor_content"]) == {SECOND}
    # The group model is told the norm, and reacts to the reply it read.
    assert all("In this group, a yes/no question" in b for b in bodies)
    sanction = prompts.filter((pl.col("arm") == "sanction") & (pl.col("trial") == 0)).row(
        0, named=True
    )
    assert sanction["followup"] == [
        {"actor": "Ana", "content": "well, that was thorough"},
        {"actor": "Bo", "content": "mm"},
    ]
    assert sanction["followup_source"] == f"simulated:g@{'group-v1'}"
    assert sanction["elicitor_content"] == SECOND
    assert (
        "Ana: well, that was thorough\nBo: mm\nBo: Noor, is the backup job done as well?"
        in (sanction["messages"][0]["content"])
    )
    retention = prompts.filter(pl.col("arm") == "retention").sort("scenario_id", "trial")
    assert retention["followup"][0].to_list() == [{"actor": "Ana", "content": "ok, cheers"}]
    # The reply that names the norm is not used: its trial is left out, and says why.
    named = prompts.filter(pl.col("first_response") == "Yep.").row(0, named=True)
    assert named["status"] == "no_followup" and named["messages"] == []
    assert re.search(r"followup\.neutral\[0\]\.content: expected .*the word 'norm'", named["note"])
    assert rendered.calls.height == 12 and set(rendered.calls["model"]) == {"openai/test-model"}


@pytest.mark.slow  # two stage scripts, as a user runs them
def test_a_dry_run_prices_the_calls_and_writes_nothing(
    workdir: Path, scenarios: pl.DataFrame
) -> None:
    from conftest import run_stage

    from losona.core.files import write_parquet

    items = [(SID.format(x), trial, reply) for (x, trial), reply in FIRST.items()]
    responses = responses_table(items, model="smollm2", condition="naive")
    verdicts = judge_responses(
        scenarios,
        responses,
        LexiconJudge(),
        "lexicon",
        model="smollm2",
        condition="naive",
        origin="",
    )
    write_parquet(scenarios, workdir / "data" / "scenarios.parquet")
    write_parquet(verdicts, workdir / "data" / "verdicts" / "lexicon" / "smollm2" / "naive.parquet")
    cell = ["judge=lexicon", "model=smollm2", "condition=naive", "sampling.dry_run=true"]
    # The group model is a paid API model with no key set: a dry run needs none.
    group = ["dynamic.source=simulated", "dynamic.group_model=gpt_5_5"]
    before = sorted(workdir.rglob("*"))
    result = run_stage("dynamic_render", *cell, *group, cwd=workdir)
    assert result.returncode == 0, result.stderr
    # A second elicitor for each of the four scenarios, and 11 reactions (4 breaches x 2, 3).
    assert "(dry run, no calls made): the group model, gpt_5_5: 15 calls" in result.stdout
    assert sorted(workdir.rglob("*")) == before
    prompts = render_cell(
        scenarios,
        verdicts,
        judge="lexicon",
        model="smollm2",
        condition="naive",
        followups=material(scenarios["scenario_id"].to_list()),
    ).prompts
    path = workdir / "data" / "dynamic" / "lexicon" / "prompts" / "smollm2" / "naive.parquet"
    write_parquet(prompts, path)
    before = sorted(workdir.rglob("*"))
    result = run_stage("dynamic_sample", *cell, cwd=workdir)
    assert result.returncode == 0, result.stderr
    assert "dynamic_sample (dry run, no calls made): naive, smollm2: 11 calls" in result.stdout
    assert sorted(workdir.rglob("*")) == before
