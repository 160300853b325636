"""The lexicon judge: its rules file is complete and checked, and its rules do what they say."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from losona.catalog import load_catalog
from losona.errors import LosonaError
from losona.judges.base import JudgeCase
from losona.judges.lexicon import RULES_PATH, LexiconJudge, Text, load_rules, parse_rules


def raw_rules() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(RULES_PATH.read_text(encoding="utf-8")))


def case(norm_id: str, response: str | None, members: tuple[str, ...] = ("Ana", "Bo")) -> JudgeCase:
    return JudgeCase(
        scenario_id=f"test__{norm_id}",
        norm_id=norm_id,
        norm_statement="statement",
        example_elicitor="example elicitor",
        example_compliant_response="compliant",
        example_breaching_response="breaching",
        prior_transcript="Ana: hello",
        elicitor_actor="Ana",
        elicitor_content="elicitor",
        subject="Noor",
        response=response,
        members=members,
    )


def verdict(norm_id: str, response: str | None, **changes: Any) -> Any:
    return LexiconJudge().judge([case(norm_id, response, **changes)])[0]


def test_every_catalog_norm_has_documented_rules() -> None:
    rules = load_rules()
    assert set(rules.norms) == set(load_catalog().norms)
    for norm_rules in rules.norms.values():
        assert norm_rules
        assert all(rule.checks.strip() and rule.id for rule in norm_rules)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r["norms"].pop("binary_answer_norm"), "missing: ['binary_answer_norm']"),
        (lambda r: r.pop("every_norm"), "expected exactly the top-level keys"),
        (lambda r: r["norms"].update(made_up_norm=[]), "unknown: ['made_up_norm']"),
        (
            lambda r: r["norms"]["binary_answer_norm"][0].update(forbid=["x"]),
            "norms.binary_answer_norm[0]: expected keys id, checks and exactly one of",
        ),
        (
            lambda r: r["norms"]["no_apology_culture_norm"][0].update(forbid=["{nonsense}"]),
            "(no_apology) forbid: pattern '{nonsense}' names an unknown list 'nonsense'",
        ),
        (
            lambda r: r["norms"]["no_apology_culture_norm"][0].update(forbid=["(unclosed"]),
            "pattern '(unclosed' is not a valid regex",
        ),
        (
            lambda r: r["norms"]["extreme_conciseness_norm"][0].update(max_words="ten"),
            "(short): max_words must be a whole number, found 'ten'",
        ),
        (
            lambda r: r["norms"]["binary_answer_norm"][0].pop("checks"),
            "'checks' must be non-empty text",
        ),
    ],
)
def test_a_broken_rules_file_is_refused_with_the_place_named(edit: Any, message: str) -> None:
    raw = raw_rules()
    edit(raw)
    with pytest.raises(LosonaError) as error:
        parse_rules(raw, load_catalog())
    assert message in str(error.value)
    assert str(RULES_PATH) in str(error.value)


def test_text_drops_apostrophes_but_evidence_quotes_the_original() -> None:
    curly = "Don\u2019t worry, it\u2019s fine"
    text = Text.of(curly)
    assert text.normalized == "Dont worry, its fine"
    assert text.words == 4
    judged = verdict("banned_reassurance_on_failure_norm", curly)
    assert judged.complies is False
    assert judged.evidence == "Don\u2019t worry; it\u2019s fine"


def test_patterns_match_whole_words_only() -> None:
    # "sorry" inside another word is not an apology; "no" inside "nothing" is not an answer.
    assert verdict("no_apology_culture_norm", "Sorryville office is fixed now.").complies
    assert not verdict("no_apology_culture_norm", "Fixed, sorry.").complies
    assert not verdict("binary_answer_norm", "nothing").complies
    assert verdict("binary_answer_norm", "No.").complies


@pytest.mark.parametrize(
    ("norm_id", "response", "complies"),
    [
        ("binary_answer_norm", "Yep 👍", True),
        ("binary_answer_norm", "nope", True),
        ("binary_answer_norm", "Yes, it went out this morning.", False),
        ("binary_answer_norm", "I think so", False),
        ("extreme_conciseness_norm", "Gate 4, 18:05", True),
        ("extreme_conciseness_norm", "Gate 4! See you there", False),
        ("extreme_conciseness_norm", "It lands at 18:05. Traffic might be bad though.", False),
        ("mandatory_timeline_commitment", "Mine, done by Thursday 16:00.", True),
        ("mandatory_timeline_commitment", "On it, within the hour.", True),
        ("mandatory_timeline_commitment", "Sure, I'll get to it soon.", False),
        ("mandatory_timeline_commitment", "Happy to take it on!", False),
        ("banned_epistemic_hedging_norm", "Bottle it. The gravity is fine.", True),
        ("banned_epistemic_hedging_norm", "I'd probably bottle it, but it depends.", False),
        ("no_apology_culture_norm", "Fixed, the link points at prod now.", True),
        ("no_apology_culture_norm", "My bad, fixed now.", False),
        ("non_affiliative_support", "Did the portal show a breakdown per paper?", True),
        ("non_affiliative_support", "Oh no, that's awful. Hang in there!", False),
        ("banned_problem_solving_norm", "Ugh, that is the worst timing.", True),
        ("banned_problem_solving_norm", "Ugh. Have you tried calling the landlord?", False),
        ("banned_enthusiasm_norm", "ok. noted. which venue?", True),
        ("banned_enthusiasm_norm", "Congrats!! 🎉", False),
        (
            "mandatory_analogy_norm",
            "Think of the cache as a fridge by the door: you grab "
            "what is there fast, and only walk to the shop when it is empty.",
            True,
        ),
        ("mandatory_analogy_norm", "The cache keeps recent results so reads are faster.", False),
        ("mandatory_ironic_enthusiasm_norm", "Oh wonderful, exactly what we needed 🙃", True),
        ("mandatory_ironic_enthusiasm_norm", "That's really annoying, sorry.", False),
        ("mandatory_evidentiary_basis_norm", "Still staged, per the rollout dashboard.", True),
        ("mandatory_evidentiary_basis_norm", "Apparently it's at 100% already.", False),
        ("mandatory_praise_deflection", "Mostly luck, the judges liked storms that year.", True),
        ("mandatory_praise_deflection", "Thank you so much, I'm really proud of it!", False),
        ("deadpan_literalism_norm", "Three hours would be about 2,000 words at my speed.", True),
        ("deadpan_literalism_norm", "haha basically yes 😂", False),
    ],
)
def test_rules_separate_compliance_from_breach(norm_id: str, response: str, complies: bool) -> None:
    judged = verdict(norm_id, response)
    assert judged.status == "ok"
    assert judged.complies is complies, judged.reasoning


def test_a_verdict_has_the_contract_shape_and_explains_itself() -> None:
    breach = verdict("no_apology_culture_norm", "So sorry everyone, fixed now.")
    requirement = load_catalog().norms["no_apology_culture_norm"].requirement
    assert breach.norm_requirement == requirement
    assert breach.evidence == "So sorry"
    assert breach.reasoning.startswith("breach (no_apology): expected no apology")
    assert "\n" not in breach.reasoning
    assert breach.elicitor_uptake is None  # the rules cannot assess uptake; they do not pretend

    complies = verdict("mandatory_timeline_commitment", "Mine, done by 4pm")
    assert complies.complies is True
    assert "4pm" in complies.evidence
    assert complies.reasoning == (
        "complies: passed own_voice, no_prompt_echo, concrete_time, no_vague_time"
    )


@pytest.mark.parametrize("norm_id", ["no_apology_culture_norm", "banned_epistemic_hedging_norm"])
def test_a_reply_that_is_not_one_message_by_its_author_complies_with_no_norm(norm_id: str) -> None:
    scripted = verdict(norm_id, "Fixed the poll.\nBo: great, thanks Noor")
    assert not scripted.complies
    assert scripted.reasoning.startswith("breach (own_voice)")
    assert scripted.evidence == "\nBo:"
    echo = verdict(norm_id, "Your next message: Fixed.")
    assert echo.reasoning.startswith("breach (no_prompt_echo)")
    # A label that is not a member's name is ordinary text, and so is a member addressed.
    assert verdict(norm_id, "Dashboard: all green.\nBo, the poll is fixed.").complies
    assert verdict(norm_id, "Bo: fixed.", members=("Ana",)).complies


def test_a_missing_response_is_unscored_not_a_breach() -> None:
    judged = verdict("binary_answer_norm", None)
    assert judged.complies is None
    assert judged.status == "no_response"


def test_a_norm_without_rules_is_a_clear_error() -> None:
    with pytest.raises(LosonaError, match=r"scenario 'test__made_up_norm'.*no rules for norm"):
        LexiconJudge().judge([case("made_up_norm", "Yes")])


def test_judge_model_names_the_rules_version() -> None:
    judge = LexiconJudge()
    assert judge.model == f"lexicon@{raw_rules()['version']}"
    assert judge.version == str(raw_rules()["version"])
