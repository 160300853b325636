"""Which candidates generate writes: the settings it reads and the cells and venues it draws."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from omegaconf import DictConfig

from losona.core.catalog import load_catalog
from losona.core.config import plain
from losona.core.errors import LosonaError
from losona.generation.cells import plan_slots, select_cells
from losona.generation.settings import (
    CellSelection,
    CurateSettings,
    GenerateSettings,
    ScreenSettings,
)

CATALOG = load_catalog()


def selection(**changes: Any) -> CellSelection:
    node = {"mode": "all", "per_norm": 1, "list": [], "venues": None} | changes
    return CellSelection.from_config(node)


def test_the_shipped_generation_config_is_valid(make_cfg: Callable[..., DictConfig]) -> None:
    cfg = make_cfg()
    generate = GenerateSettings.from_config(plain(cfg.generate))
    screen = ScreenSettings.from_config(plain(cfg.screen))
    curate = CurateSettings.from_config(plain(cfg.curate))
    assert generate.generator == "smollm2" and generate.cells.mode == "list"
    assert screen.models == ("smollm2",) and screen.judge == "lexicon" and screen.keep == "all"
    assert curate.file_name == "losona-generated-v1.jsonl"
    # Overridable on the command line like any other setting.
    cfg = make_cfg("generate.cells.mode=per_norm", "screen.keep=majority")
    assert GenerateSettings.from_config(plain(cfg.generate)).cells.mode == "per_norm"
    assert ScreenSettings.from_config(plain(cfg.screen)).keep == "majority"


def test_all_takes_every_valid_cell_once() -> None:
    chosen = select_cells(selection(mode="all"), CATALOG, seed=0)
    assert [(e, n) for e, n, _ in chosen] == sorted(CATALOG.cells())


def test_per_norm_draws_that_many_cells_of_each_norm_reproducibly() -> None:
    first = select_cells(selection(mode="per_norm", per_norm=2), CATALOG, seed=0)
    counts = Counter(norm for _, norm, _ in first)
    assert set(counts) == set(CATALOG.norms) and set(counts.values()) == {2}
    assert all(CATALOG.is_applicable(e, n) for e, n, _ in first)
    assert select_cells(selection(mode="per_norm", per_norm=2), CATALOG, seed=0) == first
    assert select_cells(selection(mode="per_norm", per_norm=2), CATALOG, seed=1) != first
    # More than a norm has: all of its cells.
    many = select_cells(selection(mode="per_norm", per_norm=999), CATALOG, seed=0)
    assert len(many) == len(CATALOG.cells())


def test_venues_are_drawn_per_candidate_from_the_allowed_ones() -> None:
    chosen = selection(mode="per_norm", per_norm=3, venues=["friends", "cohort"])
    slots = plan_slots(chosen, CATALOG, candidates_per_cell=2, seed=0)
    assert len(slots) == 3 * len(CATALOG.norms) * 2
    assert {s.venue for s in slots} == {"friends", "cohort"}
    assert [s.sample for s in slots[:2]] == [0, 1]
    assert plan_slots(chosen, CATALOG, candidates_per_cell=2, seed=0) == slots


def test_a_list_names_cells_and_optionally_their_venue() -> None:
    chosen = selection(
        mode="list",
        list=["standup/binary_answer_norm@family", "bug_report/no_apology_culture_norm"],
    )
    slots = plan_slots(chosen, CATALOG, candidates_per_cell=1, seed=3)
    assert [(s.event_type, s.norm_id) for s in slots] == [
        ("bug_report", "no_apology_culture_norm"),
        ("standup", "binary_answer_norm"),
    ]
    assert slots[1].venue == "family" and slots[0].venue in CATALOG.venues


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("standup", "expected event/norm"),
        ("standup/binary_answer_norm@", "expected event/norm"),
        ("nosuchevent/binary_answer_norm", "unknown event type 'nosuchevent'"),
        ("standup/nosuchnorm", "unknown norm 'nosuchnorm'"),
        ("standup/binary_answer_norm@office", "unknown venue 'office'"),
        ("troubles_talk/no_apology_culture_norm", "does not apply to this event"),
    ],
)
def test_a_bad_list_entry_is_refused_by_name(entry: str, message: str) -> None:
    assert not CATALOG.is_applicable("troubles_talk", "no_apology_culture_norm")
    with pytest.raises(LosonaError, match=message) as error:
        select_cells(selection(mode="list", list=[entry]), CATALOG, seed=0)
    assert "generate.cells.list" in str(error.value)


def test_a_cell_listed_twice_is_refused() -> None:
    twice = ["standup/binary_answer_norm", "standup/binary_answer_norm@family"]
    with pytest.raises(LosonaError, match="more than once"):
        select_cells(selection(mode="list", list=twice), CATALOG, seed=0)


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"mode": "some"}, "'generate.cells.mode': expected 'all', 'per_norm' or 'list'"),
        ({"mode": "list", "list": []}, "'generate.cells.list': expected at least one cell"),
        ({"per_norm": 0}, "'generate.cells.per_norm': expected an integer of at least 1"),
        ({"venues": []}, "'generate.cells.venues': expected a non-empty list of names or null"),
        ({"extra": 1}, r"'generate.cells.extra': expected one of the settings \["),
    ],
)
def test_bad_cell_settings_name_the_setting(node: dict[str, Any], message: str) -> None:
    with pytest.raises(LosonaError, match=message):
        selection(**node)


def test_an_unknown_venue_is_refused() -> None:
    with pytest.raises(LosonaError, match=r"generate.cells.venues: unknown venue\(s\) \['moon'\]"):
        plan_slots(selection(venues=["moon"]), CATALOG, candidates_per_cell=1, seed=0)


@pytest.mark.parametrize(
    ("reader", "node", "message"),
    [
        (ScreenSettings, {"models": []}, "'screen.models': expected a non-empty list"),
        (ScreenSettings, {"models": ["a", "a"]}, "'screen.models': expected names without repeats"),
        (ScreenSettings, {"trials": 0}, "'screen.trials': expected an integer of at least 1"),
        (ScreenSettings, {"keep": "any"}, "'screen.keep': expected 'all' or 'majority'"),
        (ScreenSettings, {"max_cost_usd": -1}, "'screen.max_cost_usd': expected null or a finite"),
        (ScreenSettings, {"max_cost_usd": float("nan")}, "'screen.max_cost_usd': .*found nan"),
        (GenerateSettings, {"structured_output": "xml"}, "'generate.structured_output': expected"),
        (GenerateSettings, {"seed": -1}, "'generate.seed': expected an integer of at least 0"),
        (GenerateSettings, {"max_cost_usd": float("inf")}, "'generate.max_cost_usd': .*found inf"),
        (CurateSettings, {"name": "my set"}, "'curate.name': expected part of a file name"),
    ],
)
def test_bad_stage_settings_name_the_setting(
    make_cfg: Callable[..., DictConfig], reader: Any, node: dict[str, Any], message: str
) -> None:
    cfg = make_cfg()
    section = {ScreenSettings: "screen", GenerateSettings: "generate", CurateSettings: "curate"}
    base = plain(cfg[section[reader]])
    with pytest.raises(LosonaError, match=message):
        reader.from_config(base | node)


def test_a_selection_describes_what_it_chose_and_a_version_may_be_a_number() -> None:
    assert selection(mode="per_norm", per_norm=3, venues=["slack"]).describe() == {
        "mode": "per_norm",
        "venues": ["slack"],
        "per_norm": 3,
    }
    assert selection().describe() == {"mode": "all", "venues": None}
    # 2 names a version as "2" does; true names none.
    assert CurateSettings.from_config({"name": "set", "version": 2}).version == "2"
    with pytest.raises(LosonaError, match=r"'curate\.version': expected part of a file name"):
        CurateSettings.from_config({"name": "set", "version": True})
