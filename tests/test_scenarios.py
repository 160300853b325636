"""The bundled set keeps its coverage, follows the construction rules, and reads as a chat."""

from __future__ import annotations

from collections import Counter

import pytest

from losona.core.catalog import load_catalog
from losona.core.contracts import Scenario, scenarios_from_table
from losona.scenarios.cli import main
from losona.scenarios.datasets import bundled_files, fetch_scenarios
from losona.scenarios.view import format_chat, without_demonstrations


@pytest.fixture(scope="module")
def bundled() -> list[Scenario]:
    return scenarios_from_table(fetch_scenarios({"kind": "bundled", "name": "bundled"}))


def test_every_norm_twice_every_event_once(bundled: list[Scenario]) -> None:
    catalog = load_catalog()
    assert len(bundled) >= 44
    norms = Counter(s.norm_id for s in bundled)
    assert {n: norms[n] for n in catalog.norms if norms[n] < 2} == {}
    events = Counter(s.event_type for s in bundled)
    assert [e for e in catalog.events if events[e] == 0] == []


def test_workplace_and_other_venues_are_both_well_represented(bundled: list[Scenario]) -> None:
    venues = Counter(s.venue for s in bundled)
    assert set(venues) <= set(load_catalog().venues)
    assert 0.3 <= venues["workplace"] / len(bundled) <= 0.7
    assert len(venues) - 1 >= 3  # several non-workplace venues


def test_construction_rules(bundled: list[Scenario]) -> None:
    catalog = load_catalog()
    for s in bundled:
        assert s.scenario_id == f"{s.event_type}__{s.norm_id}"
        assert catalog.is_applicable(s.event_type, s.norm_id), s.scenario_id
        assert 20 <= len(s.turns) + 1 <= 34, s.scenario_id
        assert 2 <= sum(t.is_demo for t in s.turns) <= 3, s.scenario_id
        assert sum(t.actor == s.subject for t in s.turns) <= 2, s.scenario_id
        assert s.end_goal, s.scenario_id
        spoken = " ".join(t.content.lower() for t in s.turns) + s.elicitor_content.lower()
        assert "norm" not in spoken.split(), s.scenario_id


def test_variety_no_repeated_subjects_or_channels(bundled: list[Scenario]) -> None:
    for field in ("subject", "channel_description"):
        repeated = [v for v, n in Counter(getattr(s, field) for s in bundled).items() if n > 1]
        assert repeated == [], field


def test_source_records_the_set_version(bundled: list[Scenario]) -> None:
    assert {s.source for s in bundled} == {"bundled:losona-bundled@1.0"}
    assert len(bundled_files()) == len(bundled)


def test_no_demo_control_drops_exactly_the_demos(bundled: list[Scenario]) -> None:
    scenario = bundled[0]
    control = without_demonstrations(scenario)
    assert [t for t in scenario.turns if not t.is_demo] == list(control.turns)
    assert len(control.turns) == len(scenario.turns) - sum(t.is_demo for t in scenario.turns)
    assert control.elicitor == scenario.elicitor


def test_show_marks_demos_and_elicitor(bundled: list[Scenario]) -> None:
    scenario = bundled[0]
    text = format_chat(scenario)
    demos = sum(t.is_demo for t in scenario.turns)
    assert text.count("## DEMO") == demos
    assert text.count("## ELICITOR") == 1
    assert scenario.norm_statement.split()[0] in text
    assert format_chat(without_demonstrations(scenario)).count("## DEMO") == 0


def test_cli_show_and_stats(capsys: pytest.CaptureFixture[str], bundled: list[Scenario]) -> None:
    main(["show", bundled[1].scenario_id])
    assert bundled[1].elicitor_content[:30] in capsys.readouterr().out
    main(["stats"])
    out = capsys.readouterr().out
    assert f"{len(bundled)} scenarios, 22 of 22 norms, 17 of 17 event types" in out
    with pytest.raises(SystemExit, match="no scenario 'nope'"):
        main(["show", "nope"])
