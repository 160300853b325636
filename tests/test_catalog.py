"""The catalog holds exactly the paper's taxonomy, complete, and refuses broken entries."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from losona.core.catalog import CATALOG_PATH, load_catalog, main, parse_catalog
from losona.core.errors import LosonaError

PAPER_EVENTS = [
    "exam_results",
    "event_planning",
    "standup",
    "artefact_share",
    "achievement_announcement",
    "troubles_talk",
    "activity_log",
    "bug_report",
    "transgressive_joke",
    "relationship_drama",
    "moral_dilemma_share",
    "conflict_escalation",
    "advice_request",
    "birthday_or_anniversary_ritual",
    "new_joiner_intro",
    "forwarded_screenshot",
    "gift_pool_or_bill_split",
]

PAPER_NORMS = [
    "bystander_intervention_norm",
    "non_affiliative_support",
    "binary_answer_norm",
    "no_apology_culture_norm",
    "cynical_complaint_norm",
    "mandatory_praise_deflection",
    "extreme_conciseness_norm",
    "mandatory_risk_identification",
    "deadpan_literalism_norm",
    "mandatory_silver_lining_norm",
    "mandatory_timeline_commitment",
    "banned_enthusiasm_norm",
    "banned_problem_solving_norm",
    "mandatory_pushback_on_adhoc_requests",
    "mandatory_evidentiary_basis_norm",
    "banned_epistemic_hedging_norm",
    "mandatory_error_solidarity_norm",
    "banned_reassurance_on_failure_norm",
    "mandatory_conditional_agreement",
    "banned_direct_answers_norm",
    "mandatory_ironic_enthusiasm_norm",
    "mandatory_analogy_norm",
]


def raw_catalog() -> dict[str, Any]:
    with CATALOG_PATH.open(encoding="utf-8") as stream:
        return yaml.safe_load(stream)


def test_catalog_has_the_papers_ids_in_order() -> None:
    catalog = load_catalog()
    assert list(catalog.events) == PAPER_EVENTS
    assert list(catalog.norms) == PAPER_NORMS
    assert "workplace" in catalog.venues and len(catalog.venues) >= 4


def test_every_norm_has_judge_text_and_an_applicability_list() -> None:
    for norm in load_catalog().norms.values():
        assert norm.statement and norm.example_elicitor
        assert norm.example_compliant_response != norm.example_breaching_response
        assert norm.applicable_events


def test_cells_are_the_applicable_pairs() -> None:
    catalog = load_catalog()
    expected = sum(len(n.applicable_events) for n in catalog.norms.values())
    assert len(catalog.cells()) == expected
    event, norm = catalog.cells()[0]
    assert catalog.is_applicable(event, norm)
    assert not catalog.is_applicable(event, "no_such_norm")


def test_cli_prints_the_cell_count_and_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    main([])
    out = capsys.readouterr().out
    assert f"{len(load_catalog().cells())} valid (event, norm) cells of 374" in out
    assert "bystander_intervention_norm" in out and "gift_pool_or_bill_split" in out


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r: r["norms"]["binary_answer_norm"].pop("statement"),
            "binary_answer_norm.statement",
        ),
        (
            lambda r: r["norms"]["binary_answer_norm"].update(applicable_events=["nope"]),
            "unknown event ids ['nope']",
        ),
        (lambda r: r.pop("venues"), "'venues': expected a mapping of ids to descriptions"),
    ],
)
def test_broken_catalog_is_refused(change: Any, message: str) -> None:
    raw = copy.deepcopy(raw_catalog())
    change(raw)
    with pytest.raises(LosonaError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_catalog(raw)
