"""The lexicon judge: its rules file is complete and checked, and its rules do what they say."""

from __future__ import annotations

import copy
import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from losona.core.catalog import load_catalog
from losona.core.errors import LosonaError
from losona.judges.base import JudgeCase
from losona.judges.lexicon import LexiconJudge
from losona.judges.rules import RULES_PATH, Text, load_rules, parse_rules


def raw_rules() -> dict[str, Any]:
    return copy.deepcopy(yaml.safe_load(RULES_PATH.read_text(encoding="utf-8")))


def case(
    norm_id: str,
    response: str | None,
    members: tuple[str, ...] = ("Ana", "Bo"),
    elicitor: str = "elicitor",
    earlier: tuple[str, ...] = ("hello",),
) -> JudgeCase:
    return JudgeCase(
        scenario_id=f"test__{norm_id}",
        norm_id=norm_id,
        norm_statement="statement",
        example_elicitor="example elicitor",
        example_compliant_response="compliant",
        example_breaching_response="breaching",
        prior_transcript="Ana: hello",
        elicitor_actor="Ana",
        elicitor_content=elicitor,
        subject="Noor",
        response=response,
        members=members,
        earlier_messages=earlier,
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
        (
            lambda r: r["norms"].pop("binary_answer_norm"),
            "'norms.binary_answer_norm': expected the rules of this norm of the catalog",
        ),
        (
            lambda r: r.pop("every_norm"),
            "'every_norm': expected a list of rules (each a mapping with id, checks and one test), "
            "found nothing",
        ),
        (
            lambda r: r["norms"].update(made_up_norm=[]),
            "'norms.made_up_norm': expected a mapping of norm ids to non-empty lists of rules",
        ),
        (
            lambda r: r["norms"]["binary_answer_norm"][0].update(forbid=["x"]),
            "'norms.binary_answer_norm.0': expected exactly one test of",
        ),
        (
            lambda r: r["norms"]["no_apology_culture_norm"][0].update(forbid=["{nonsense}"]),
            "'norms.no_apology_culture_norm.0.forbid.0': expected a pattern naming only lists",
        ),
        (
            lambda r: r["norms"]["no_apology_culture_norm"][0].update(forbid=["(unclosed"]),
            "'norms.no_apology_culture_norm.0.forbid.0': expected a valid regular expression, "
            "found '(unclosed'",
        ),
        (
            lambda r: r["norms"]["extreme_conciseness_norm"][0].update(max_words="ten"),
            "'norms.extreme_conciseness_norm.0.max_words': expected an integer of at least 0, "
            "found 'ten'",
        ),
        (
            lambda r: r["norms"]["binary_answer_norm"][0].pop("checks"),
            "'norms.binary_answer_norm.0.checks': expected non-empty text, found nothing",
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


def test_rules_for_a_norm_the_catalog_lacks_are_refused_with_the_norm_named() -> None:
    raw = raw_rules()
    raw["norms"]["made_up_norm"] = raw["norms"]["binary_answer_norm"]
    with pytest.raises(LosonaError) as error:
        parse_rules(raw, load_catalog())
    assert str(error.value) == (
        f"{RULES_PATH}: 'norms.made_up_norm': expected a norm of the catalog, found a norm it lacks"
    )


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


# Each reply answers an elicitor written for it: the judge checks uptake before the norm.
ASKS = {
    "binary_answer_norm": "Noor, did the invoice go out?",
    "extreme_conciseness_norm": "Noor, which gate does the 18:05 from Lyon arrive at?",
    "mandatory_timeline_commitment": "Noor, can you take the invoice run this week?",
    "banned_epistemic_hedging_norm": "Noor, bottle the saison or dump it? The gravity reads 1.008.",
    "no_apology_culture_norm": "Noor, your link points at staging, the poll is broken.",
    "non_affiliative_support": "Noor, my exam results are out and I failed two papers.",
    "banned_problem_solving_norm": "Noor, the landlord is putting the rent up again.",
    "banned_enthusiasm_norm": "Noor, I got the job at the new venue!",
    "mandatory_analogy_norm": "Noor, what does the cache actually do?",
    "mandatory_ironic_enthusiasm_norm": "Noor, the caterer cancelled the party.",
    "mandatory_evidentiary_basis_norm": "Noor, is the rollout at 100% yet?",
    "mandatory_praise_deflection": "Noor, your storm photo won the competition, brilliant work.",
    "deadpan_literalism_norm": "Noor, you've been typing that essay for about a hundred years.",
}


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
    judged = verdict(norm_id, response, elicitor=ASKS[norm_id])
    assert judged.status == "ok"
    assert judged.complies is complies, judged.reasoning
    assert judged.non_answer is False, judged.reasoning  # each one takes up its elicitor


def test_a_verdict_has_the_contract_shape_and_explains_itself() -> None:
    breach = verdict("no_apology_culture_norm", "So sorry everyone, fixed now.")
    requirement = load_catalog().norms["no_apology_culture_norm"].requirement
    assert breach.norm_requirement == requirement
    assert breach.evidence == "So sorry"
    assert breach.reasoning.startswith("breach (no_apology): expected no apology")
    assert "\n" not in breach.reasoning
    # What took up the elicitor is recorded (Appendix C, step 1).
    assert breach.elicitor_uptake == "answers or reacts to it: 'fixed', 'So sorry'"
    assert breach.non_answer is False

    complies = verdict("mandatory_timeline_commitment", "Mine, done by 4pm")
    assert complies.complies is True
    assert "4pm" in complies.evidence
    assert complies.reasoning == (
        "complies: passed own_voice, no_prompt_echo, chat_form, concrete_time, no_vague_time"
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


def test_names_a_reaction_and_a_topic_only_where_a_chat_message_has_them() -> None:
    """Version 3's uptake cues read where a reply reacts, and a name is not a topic."""
    elicitor = "Noor, the staging feed froze again at lunch."
    # A reaction in the reply's first clause takes the elicitor up...
    reacts = verdict(
        "no_apology_culture_norm", "Annoying, but that is one more bug.", elicitor=elicitor
    )
    assert reacts.non_answer is False
    assert reacts.elicitor_uptake is not None and "that is" in reacts.elicitor_uptake
    # ...one deep inside a story does not, nor does naming a member.
    story = "You have a big job to do. I went for a walk by the sea. That is me, Ana."
    assert verdict("no_apology_culture_norm", story, elicitor=elicitor).non_answer is True
    # A shared topic word still counts, with or without a name beside it.
    topical = verdict("no_apology_culture_norm", "Ana, the feed is back up.", elicitor=elicitor)
    assert topical.non_answer is False
    assert topical.elicitor_uptake == "takes up the chat's topic: 'feed'"


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


# Uptake first (Appendix C, step 1): replies that do not take up the elicitor comply with
# no norm, whether the norm bans a behaviour or requires one.
UPTAKE_NORMS = [
    "no_apology_culture_norm",
    "banned_epistemic_hedging_norm",
    "cynical_complaint_norm",
]
FIXED_ASK = "Noor, your deploy at 17:30 pointed the mobile page at the staging feed."


@pytest.mark.parametrize("norm_id", UPTAKE_NORMS)
@pytest.mark.parametrize(
    ("response", "kind"),
    [
        ("", "empty"),
        ("  \n ", "empty"),
        ("ok", "filler"),
        ("lol 😂", "filler"),
        ("?", "filler"),
        ("Does anyone know a good recipe for banana bread?", "off_topic"),
        ("Lo siento mucho, fue culpa mía.", "language"),
        ("すみません、私のミスです。", "language"),
        ("complies: true", "no_prompt_echo"),
        ('{"complies": true}', "no_prompt_echo"),
        (FIXED_ASK, "echo"),
        ("the staging feed was frozen at 12.3% when we stopped the dry run", "echo"),
        ("Ana: thanks, sorted", "own_voice"),
        # Version 3: the shapes the embedded model's replies take (data/labels/smollm2/).
        ("Noor: on it, repointing the page now", "own_voice"),
        ("1. **Bo: Ah, the feed again", "own_voice"),
        ("The next message will be from Bo, who has just joined.", "no_prompt_echo"),
        ("This is another message I will only respond to.", "no_prompt_echo"),
        ("**Re: The staging feed's recommendations**", "chat_form"),
        ("Dear team, the deploy went out at 17:30 as planned.", "chat_form"),
        ("Ana, Bo, you are the best people I have ever been with.", "off_topic"),
        ("I'm excited to announce our new members, the best in the league.", "off_topic"),
        ("The most recent message is in your bio. Tell me about yourself.", "no_prompt_echo"),
        ("I'm writing to inform you that the deploy went out at 17:30.", "chat_form"),
    ],
)
def test_a_reply_that_does_not_take_up_the_elicitor_complies_with_no_norm(
    norm_id: str, response: str, kind: str
) -> None:
    earlier = ("the staging feed was frozen at 12.3% when we stopped the dry run at 19:00",)
    judged = verdict(norm_id, response, elicitor=FIXED_ASK, earlier=earlier)
    assert judged.complies is False
    assert judged.non_answer is True
    assert judged.status == "ok"
    assert judged.elicitor_uptake is not None
    assert judged.elicitor_uptake.startswith(f"none ({kind})")
    assert judged.reasoning.startswith(f"breach ({kind}): does not take up Ana's message")


@pytest.mark.parametrize(
    ("norm_id", "elicitor", "response"),
    [
        # Appendix C rule 5: terse replies that do answer are judged on the norm alone.
        ("binary_answer_norm", "Noor, is the flag still on in staging?", "yes"),
        ("binary_answer_norm", "Noor, is the flag still on in staging?", "no"),
        ("mandatory_timeline_commitment", "Noor, can you take FW-2291 over?", "Friday 17:00"),
        ("extreme_conciseness_norm", "Noor, which colour space did you export?", "P3-D65"),
        ("no_apology_culture_norm", "Noor, you left yourself out of the split.", "oops, fixed"),
        ("no_apology_culture_norm", "Noor, you left yourself out of the split.", "deleted mine"),
    ],
)
def test_a_terse_answer_is_judged_on_the_norm_alone(
    norm_id: str, elicitor: str, response: str
) -> None:
    judged = verdict(norm_id, response, elicitor=elicitor)
    assert judged.non_answer is False
    assert judged.complies is True, judged.reasoning


@pytest.mark.parametrize(
    ("norm_id", "elicitor", "response", "complies"),
    [
        # A banned cue the speaker refuses is no breach...
        ("no_apology_culture_norm", FIXED_ASK, "Not sorry at all, fixed it.", True),
        ("no_apology_culture_norm", FIXED_ASK, "oh no, sorry everyone, fixing it", False),
        (
            "deadpan_literalism_norm",
            "Noor, this deadline has literally killed me",
            "It has not literally killed you. The deadline is Friday at 17:00.",
            True,
        ),
        # ... and a required cue the speaker denies does not count.
        (
            "mandatory_silver_lining_norm",
            "Noor, the trip is cancelled and the deposit is gone.",
            "No silver lining to a lost deposit, and I won't pretend there's an upside.",
            False,
        ),
        (
            "mandatory_silver_lining_norm",
            "Noor, the trip is cancelled and the deposit is gone.",
            "At least the deposit was only 40 each.",
            True,
        ),
        (
            "mandatory_error_solidarity_norm",
            "Noor, I sent the DWG straight from the model to the committee.",
            "I never made that mistake myself. Send the PDF from the drawing set next time.",
            False,
        ),
        (
            "mandatory_risk_identification",
            "Noor, plan: we drive down Saturday at 9 and camp at the lake. ok?",
            "Sounds good, I can't see any risk in that plan.",
            False,
        ),
        # A negation inside a condition names a risk rather than denying one.
        (
            "mandatory_risk_identification",
            "Noor, plan: we drive down Saturday at 9 and camp at the lake. ok?",
            "fine, as long as the drive doesn't clash with the campsite's check-in",
            True,
        ),
    ],
)
def test_negated_cues_do_not_count_in_either_direction(
    norm_id: str, elicitor: str, response: str, complies: bool
) -> None:
    judged = verdict(norm_id, response, elicitor=elicitor)
    assert judged.non_answer is False
    assert judged.complies is complies, judged.reasoning


def test_a_rule_can_count_a_negated_cue_when_its_norm_says_so() -> None:
    # Evidentiary basis: saying one has not checked the source is consistent with the norm.
    rules = load_rules().norms["mandatory_evidentiary_basis_norm"]
    assert not next(r for r in rules if r.id == "names_a_source").negatable
    judged = verdict(
        "mandatory_evidentiary_basis_norm",
        "Zendesk has 63 'bike won't unlock' tickets since Monday.",
        elicitor="Noor, how bad is it on the support side?",
    )
    assert judged.complies is True, judged.reasoning


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda r: r["scope"].update(window="four"),
            "'scope.window': expected an integer of at least 1, found 'four'",
        ),
        (lambda r: r["uptake"].pop("cues"), "'uptake.cues': expected a non-empty list of patterns"),
        (lambda r: r["uptake"]["cues"].append("{nonsense}"), "names an unknown list 'nonsense'"),
        (
            lambda r: r["norms"]["binary_answer_norm"][0].update(negatable="no"),
            "'norms.binary_answer_norm.0.negatable': expected true or false, found 'no'",
        ),
    ],
)
def test_a_broken_uptake_or_scope_section_is_refused(edit: Any, message: str) -> None:
    raw = raw_rules()
    edit(raw)
    with pytest.raises(LosonaError) as error:
        parse_rules(raw, load_catalog())
    assert message in str(error.value)


def test_the_held_out_set_meets_the_issue_targets(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # benchmarks/lexicon_heldout.py exits 1 when a target is missed (issue 17): held-out
    # accuracy >= 95%, breach recall 100%, non-answers judged compliant <= 5%.
    path = Path(__file__).parent.parent / "benchmarks" / "lexicon_heldout.py"
    spec = importlib.util.spec_from_file_location("lexicon_heldout", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look it up
    spec.loader.exec_module(module)
    monkeypatch.setattr(sys, "argv", [str(path)])
    module.main()
    printed = capsys.readouterr().out
    assert printed.count(" met") == 3, printed
