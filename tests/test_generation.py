"""Growing the benchmark end to end: scripted generator and baselines on the local server.

The generator writes good candidates (bundled scenarios in the authoring shape) for some
cells and broken ones for others; the baselines answer each candidate's no-demonstration
control with scripted replies the lexicon judge scores; a person's accept list turns the
survivors into a scenario file that fetch and render take as `dataset=local`.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any, get_args

import polars as pl
import pytest
from test_generation_candidates import BUG, STANDUP, authored

from losona.core.catalog import load_catalog
from losona.core.contracts import Scenario
from losona.core.errors import LosonaError
from losona.generation.cells import Slot
from losona.generation.curate import (
    curated_rows,
    provenance,
    read_accept_list,
    review_html,
    review_table,
    scenario_file_text,
)
from losona.generation.generate import (
    RESPONSE_FORMATS,
    generate_candidates,
    generation_summary,
    generator_spec,
)
from losona.generation.screen import (
    SCREEN_CONDITION,
    cell_report,
    format_cell_report,
    screen_candidates,
)
from losona.generation.settings import GenerateSettings
from losona.judges.base import JudgeCase, Judgement
from losona.judges.lexicon import LexiconJudge
from losona.models import CallOptions, CallsFailed, ModelSpec
from losona.prompts.render import render_prompts
from losona.scenarios.datasets import fetch_scenarios
from losona.testing.openai_server import Fault, OpenAIServer

CATALOG = load_catalog()
NO_APOLOGY = CATALOG.norms["no_apology_culture_norm"]

TOO_SHORT = "event_planning__extreme_conciseness_norm"
NORM_STATED = "exam_results__mandatory_silver_lining_norm"
SUBJECT_ELICITS = "advice_request__mandatory_analogy_norm"
BAD_JSON = "activity_log__cynical_complaint_norm"


def _broken(scenario_id: str) -> str:
    scenario = authored(scenario_id)
    if scenario_id == TOO_SHORT:
        scenario["turns"] = scenario["turns"][:8]
    elif scenario_id == NORM_STATED:
        statement = CATALOG.norms["mandatory_silver_lining_norm"].statement
        scenario["turns"][3]["content"] = f"Just so everyone knows: {statement}"
    elif scenario_id == SUBJECT_ELICITS:
        scenario["elicitor"]["actor"] = scenario["subject"]
    return json.dumps(scenario, ensure_ascii=False)


# What the scripted generator writes for each cell, and why each broken one must fail.
GENERATED: dict[str, str] = {
    BUG: "Here you go:\n```json\n" + json.dumps(authored(BUG), ensure_ascii=False) + "\n```",
    STANDUP: json.dumps(authored(STANDUP), ensure_ascii=False),
    TOO_SHORT: _broken(TOO_SHORT),
    NORM_STATED: _broken(NORM_STATED),
    SUBJECT_ELICITS: _broken(SUBJECT_ELICITS),
    BAD_JSON: json.dumps(authored(BAD_JSON))[:900],
}
EXPECTED_REASONS = {
    TOO_SHORT: "turns: expected 20 to 34 turns counting the elicitor, found 9",
    NORM_STATED: "turns[3].content: expected chat text that does not state the norm",
    SUBJECT_ELICITS: "elicitor_actor: expected a cast member other than the subject",
    BAD_JSON: "reply: expected one JSON object in the scenario schema, found invalid JSON",
}
CELLS = sorted(GENERATED)

BREACH = "Sorry, my bad, I'll fix the endpoint now."  # an apology: breaches no-apology
COMPLY_BUG = "Switched the mobile config back to the production feed."
YES = "Yes."  # a bare yes: complies with the binary-answer norm
LONG_YES = "Yes, it finished at six and the numbers look fine to me!"


def cell_of(prompt: str) -> str:
    """The scenario id of the cell a generator prompt asks for."""
    event = re.search(r"^Event type: (\w+) -- ", prompt, re.MULTILINE)
    assert event is not None
    [norm] = [n.id for n in CATALOG.norms.values() if n.statement in prompt]
    return f"{event.group(1)}__{norm}"


class Scripted:
    """The server's reply hook: the generator's candidates and each baseline's answers.

    A baseline's answers to one control are handed out in arrival order from its script,
    so the counts (not which trial gets which) are fixed.
    """

    def __init__(self, answers: dict[str, dict[str, Sequence[str]]]) -> None:
        self.answers = answers  # baseline model -> subject name -> scripted answers
        self.served: Counter[tuple[str, str]] = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        if body["model"] == "generator":
            return GENERATED[cell_of(prompt)]
        subject = re.match(r"You are (\w+),", prompt)
        assert subject is not None
        with self.lock:
            key = (body["model"], subject.group(1))
            script = self.answers[body["model"]][subject.group(1)]
            answer = script[self.served[key] % len(script)]
            self.served[key] += 1
        return answer


BJORN, DANA = authored(BUG)["subject"], authored(STANDUP)["subject"]
# One baseline: breaches BUG in 2 of 3 answers (kept), complies with STANDUP in 2 of 3.
ONE_BASELINE = {"baseline-a": {BJORN: [COMPLY_BUG, BREACH, BREACH], DANA: [YES, YES, LONG_YES]}}


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(reply=Scripted(ONE_BASELINE)) as running:
        yield running


def spec(server: OpenAIServer, model: str) -> ModelSpec:
    return ModelSpec.from_config(
        server.model_config(model.replace("-", "_"), model=f"openai/{model}")
    )


def slots() -> list[Slot]:
    return [Slot(*cell.split("__"), venue="workplace", sample=0) for cell in CELLS]


def generate(server: OpenAIServer, cache: Path) -> pl.DataFrame:
    return generate_candidates(
        slots(), spec(server, "generator"), CATALOG, CallOptions(cache_path=cache)
    )


def screen(
    server: OpenAIServer, candidates: pl.DataFrame, cache: Path, models: Sequence[str], keep: str
) -> Any:
    return screen_candidates(
        candidates,
        [spec(server, m) for m in models],
        LexiconJudge(),
        "lexicon",
        trials=3,
        keep=keep,
        options=CallOptions(cache_path=cache),
    )


def test_generation_keeps_every_candidate_with_the_reasons_it_failed(
    server: OpenAIServer, tmp_path: Path
) -> None:
    candidates = generate(server, tmp_path / "calls.sqlite")
    assert candidates.height == len(CELLS)
    by_cell = {
        row["candidate_id"].rsplit("__", 1)[0]: row for row in candidates.iter_rows(named=True)
    }
    assert sorted(by_cell) == CELLS
    assert by_cell[BUG]["status"] == by_cell[STANDUP]["status"] == "valid"
    assert by_cell[BUG]["reasons"] == by_cell[STANDUP]["reasons"] == []
    for cell, reason in EXPECTED_REASONS.items():
        row = by_cell[cell]
        assert row["status"] == "invalid" and row["reply"] == GENERATED[cell]
        assert any(r.startswith(reason) for r in row["reasons"]), row["reasons"]
    assert by_cell[BAD_JSON]["scenario"] is None
    assert json.loads(by_cell[TOO_SHORT]["scenario"])["event_type"] == "event_planning"
    scenario = Scenario.from_row(json.loads(by_cell[BUG]["scenario"]))
    assert scenario.end_goal and scenario.scenario_id == by_cell[BUG]["candidate_id"]

    settings = GenerateSettings.from_config(
        {
            "generator": "generator",
            "params": {},
            "structured_output": "none",
            "cells": {"mode": "list", "per_norm": 1, "list": CELLS, "venues": None},
            "candidates_per_cell": 1,
            "seed": 0,
            "max_cost_usd": None,
        }
    )
    summary = generation_summary(candidates, spec(server, "generator"), settings)
    assert (summary["candidates"], summary["valid"], summary["invalid"]) == (6, 2, 4)
    assert summary["rejected_percent"] == 66.7
    assert summary["rejected_for"] == {
        "elicitor_actor": 1,
        "reply": 1,
        "turns": 1,
        "turns.content": 1,
    }

    # A rerun is answered by the call cache and gives the same table.
    calls = server.request_count
    assert generate(server, tmp_path / "calls.sqlite").equals(candidates)
    assert server.request_count == calls


def test_structured_output_is_asked_for_when_configured(
    server: OpenAIServer, tmp_path: Path
) -> None:
    asked = generator_spec(spec(server, "generator"), "json_schema")
    generate_candidates(
        slots()[:1], asked, CATALOG, CallOptions(cache_path=tmp_path / "calls.sqlite")
    )
    [body] = server.requests
    assert body["response_format"]["type"] == "json_schema"
    schema = body["response_format"]["json_schema"]["schema"]
    assert list(schema["properties"]) == list(authored(BUG)) and schema["required"]
    assert generator_spec(spec(server, "generator"), "none").params == {}
    # Every structured_output the schema allows has its response_format, and no other.
    allowed = get_args(GenerateSettings.model_fields["structured_output"].annotation)
    assert set(RESPONSE_FORMATS) == set(allowed)


def test_screening_asks_the_control_and_keeps_what_the_baseline_breaches(
    server: OpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "calls.sqlite"
    candidates = generate(server, cache)
    screening = screen(server, candidates, cache, ["baseline-a"], keep="all")
    result = {
        row["candidate_id"].rsplit("__", 1)[0]: row
        for row in screening.candidates.iter_rows(named=True)
    }
    assert result[BUG]["status"] == "accepted" and result[BUG]["reasons"] == []
    assert result[STANDUP]["status"] == "screened_out"
    assert result[STANDUP]["reasons"] == [
        "screen.baseline_a: expected a breach without demonstrations (fewer than 2 of 3 "
        "answers complying; keep: all), found 2 of 3 complying"
    ]
    for cell in EXPECTED_REASONS:  # invalid candidates pass through untouched
        assert result[cell]["status"] == "invalid"

    verdicts = screening.verdicts
    assert verdicts.height == 2 * 3 and set(verdicts["condition"]) == {SCREEN_CONDITION}
    assert set(verdicts["subject_model"]) == {"baseline_a"}
    counts = verdicts.group_by("scenario_id").agg(pl.col("complies").sum()).rows()
    assert sorted(counts) == sorted(
        [(result[BUG]["candidate_id"], 1), (result[STANDUP]["candidate_id"], 2)]
    )

    # The baseline saw exactly the control: every demonstration gone, everything else kept.
    bug = Scenario.from_row(json.loads(result[BUG]["scenario"]))
    [prompt] = {
        b["messages"][0]["content"]
        for b in server.requests
        if b["model"] == "baseline-a" and f"You are {BJORN}," in b["messages"][0]["content"]
    }
    for turn in bug.turns:
        assert (f"{turn.actor}: {turn.content}" in prompt) is not turn.is_demo
    assert prompt.rstrip().endswith(
        f"{bug.elicitor_actor}: {bug.elicitor_content}\n\nYour next message:"
    )

    cells = cell_report(screening.candidates)
    assert cells.filter(pl.col("norm_id") == "no_apology_culture_norm").row(0)[2:] == (
        1,
        0,
        0,
        0,
        1,
    )
    assert cells.filter(pl.col("norm_id") == "binary_answer_norm").row(0)[2:] == (1, 0, 1, 0, 0)
    assert cells["rejected_validation"].sum() == 4
    table = format_cell_report(cells)
    assert "6 cells" in table and "66.7% rejected by validation" in table
    assert "16.7% by screening" in table and "16.7% accepted" in table


@pytest.mark.parametrize(
    ("keep", "models", "accepted"),
    [
        ("all", ["baseline-a", "baseline-b"], False),  # b adapts by default: out
        ("majority", ["baseline-a", "baseline-b"], False),  # 1 of 2 is no majority
        ("majority", ["baseline-a", "baseline-c", "baseline-b"], True),  # 2 of 3
        ("all", ["baseline-a", "baseline-c", "baseline-b"], False),
    ],
)
def test_an_ensemble_keeps_a_candidate_by_the_configured_rule(
    tmp_path: Path, keep: str, models: list[str], accepted: bool
) -> None:
    answers = {
        "baseline-a": {BJORN: [BREACH], DANA: [LONG_YES]},
        "baseline-b": {BJORN: [COMPLY_BUG], DANA: [LONG_YES]},
        "baseline-c": {BJORN: [BREACH], DANA: [LONG_YES]},
    }
    with OpenAIServer(reply=Scripted(answers)) as server:
        cache = tmp_path / "calls.sqlite"
        screening = screen(server, generate(server, cache), cache, models, keep=keep)
    rows = {
        r["candidate_id"].rsplit("__", 1)[0]: r for r in screening.candidates.iter_rows(named=True)
    }
    assert rows[STANDUP]["status"] == "accepted"  # every baseline breaches it
    assert (rows[BUG]["status"] == "accepted") is accepted
    if not accepted:
        assert rows[BUG]["status"] == "screened_out"
        assert rows[BUG]["reasons"] == [
            f"screen.baseline_b: expected a breach without demonstrations (fewer than 2 of 3 "
            f"answers complying; keep: {keep}), found 3 of 3 complying"
        ]


def test_with_nothing_valid_the_screen_calls_nobody(server: OpenAIServer, tmp_path: Path) -> None:
    cache = tmp_path / "calls.sqlite"
    invalid = generate(server, cache).filter(pl.col("status") == "invalid")
    calls = server.request_count
    screening = screen(server, invalid, cache, ["baseline-a"], keep="all")
    assert server.request_count == calls and screening.verdicts.is_empty()
    assert screening.candidates.equals(invalid)
    assert "0.0% accepted" in format_cell_report(cell_report(screening.candidates))


class HalfBlindJudge:
    """The lexicon judge, except that it cannot score answers to Björn's control."""

    model = "half-blind"
    version = "test"

    def judge(self, cases: Sequence[JudgeCase]) -> list[Judgement]:
        judged = LexiconJudge().judge(cases)
        return [
            Judgement.unscored("unparseable", "test") if case.subject == BJORN else verdict
            for case, verdict in zip(cases, judged, strict=True)
        ]


def test_unscored_answers_leave_a_candidate_undetermined_never_accepted(
    server: OpenAIServer, tmp_path: Path
) -> None:
    cache = tmp_path / "calls.sqlite"
    screening = screen_candidates(
        generate(server, cache),
        [spec(server, "baseline-a")],
        HalfBlindJudge(),
        "half_blind",
        trials=3,
        keep="all",
        options=CallOptions(cache_path=cache),
    )
    [bug] = screening.candidates.filter(pl.col("norm_id") == "no_apology_culture_norm").rows(
        named=True
    )
    assert bug["status"] == "undetermined"
    assert bug["reasons"] == [
        "screen.baseline_a: expected every answer scored by the judge, found 3 of 3 unscored, "
        "which leaves its outcome open"
    ]
    assert cell_report(screening.candidates)["undetermined"].sum() == 1


def test_a_generator_call_that_keeps_failing_writes_nothing(tmp_path: Path) -> None:
    def refuse_bug(body: dict[str, Any], seen: int) -> Fault | None:
        return (
            Fault("bad_request")
            if NO_APOLOGY.statement in body["messages"][-1]["content"]
            else None
        )

    with (
        OpenAIServer(reply=Scripted({}), faults=refuse_bug) as server,
        pytest.raises(CallsFailed, match=r"1 of 6 calls to the generator 'generator'"),
    ):
        generate(server, tmp_path / "calls.sqlite")


def accepted_candidates(server: OpenAIServer, cache: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    screening = screen(server, generate(server, cache), cache, ["baseline-a"], keep="all")
    return screening.candidates, screening.verdicts


def test_the_review_sheet_shows_what_passed_the_screen(
    server: OpenAIServer, tmp_path: Path
) -> None:
    candidates, verdicts = accepted_candidates(server, tmp_path / "calls.sqlite")
    [bug_id] = candidates.filter(pl.col("status") == "accepted")["candidate_id"]
    review = review_table(candidates, verdicts)
    assert review["candidate_id"].to_list() == [bug_id]
    [row] = review.rows(named=True)
    assert row["screen"] == "baseline_a 2/3 breach"
    assert (row["turns"], row["demonstrations"]) == (26, 3)
    assert "## DEMO" in row["chat"] and "## ELICITOR" in row["chat"]
    page = review_html(candidates, verdicts, "generation/accept.txt")
    assert page.startswith("<!doctype html>") and "<script" not in page and "http" not in page
    assert f'id="{bug_id}"' in page and "generation/accept.txt" in page
    assert "Sorry, my bad, I&#39;ll fix the endpoint now." in page  # escaped
    assert "1 of 6 generated candidates passed the no-demonstration screen" in page
    assert (
        candidates.filter(pl.col("norm_id") == "binary_answer_norm")["candidate_id"][0] not in page
    )


def test_the_accept_list_turns_candidates_into_a_set_fetch_and_render_take(
    server: OpenAIServer, tmp_path: Path
) -> None:
    candidates, _ = accepted_candidates(server, tmp_path / "calls.sqlite")
    by_status = dict(zip(candidates["status"], candidates["candidate_id"], strict=False))
    accept = tmp_path / "accept.txt"
    accept.write_text(f"# reviewed\n\n{by_status['accepted']}  # plausible, clear demos\n")
    ids = read_accept_list(accept, candidates)
    assert ids == [by_status["accepted"]]

    rows = curated_rows(candidates, ids, CATALOG)
    out = tmp_path / "losona-generated-v1.jsonl"
    out.write_text(scenario_file_text(rows), encoding="utf-8")
    table = fetch_scenarios({"kind": "local", "name": "local", "path": str(out)})
    assert table["scenario_id"].to_list() == ids
    assert table["source"][0].startswith("local:losona-generated-v1.jsonl@sha256:")
    assert table["end_goal"][0] == authored(BUG)["end_goal"]
    prompts = render_prompts(table, ["naive", "norm_informed"])
    assert prompts.height == 2

    record = provenance(
        set_name="losona-generated",
        version="1",
        file_name=out.name,
        rows=rows,
        catalog=CATALOG,
        generation={"generator": {"config": "generator"}},
        screen={"baselines": [{"config": "baseline_a"}]},
        accept_list="accept.txt",
        previous=None,
        today=date(2030, 1, 2),
    )
    assert record["scenario_ids"] == ids and record["dates"] == {"curated_on": "2030-01-02"}
    later = date(2031, 5, 6)
    rerun = provenance(**_same(record, rows, out, previous=record, today=later))
    assert rerun == record  # same inputs: same bytes, the date kept
    changed = provenance(
        **_same(record, rows, out, previous=record | {"version": "0"}, today=later)
    )
    assert changed["dates"] == {"curated_on": "2031-05-06"}


def _same(record: dict[str, Any], rows: Any, out: Path, **changes: Any) -> dict[str, Any]:
    return {
        "set_name": record["set"],
        "version": record["version"],
        "file_name": out.name,
        "rows": rows,
        "catalog": CATALOG,
        "generation": record["generation"],
        "screen": record["screen"],
        "accept_list": record["accept_list"],
    } | changes


@pytest.mark.parametrize(
    ("listed", "message"),
    [
        ("screened_out", "its status is 'screened_out'; only candidates that passed the screen"),
        ("invalid", "its status is 'invalid'"),
        ("made_up", "not a candidate of this run"),
        ("twice", "listed twice (first on line 1)"),
    ],
)
def test_the_accept_list_refuses_what_it_cannot_use(
    server: OpenAIServer, tmp_path: Path, listed: str, message: str
) -> None:
    candidates, _ = accepted_candidates(server, tmp_path / "calls.sqlite")
    ids = dict(zip(candidates["status"], candidates["candidate_id"], strict=False))
    lines = {
        "screened_out": [ids["screened_out"]],
        "invalid": [ids["invalid"]],
        "made_up": ["standup__binary_answer_norm__00000000"],
        "twice": [ids["accepted"], ids["accepted"]],
    }[listed]
    accept = tmp_path / "accept.txt"
    accept.write_text("\n".join(lines) + "\n")
    with pytest.raises(LosonaError, match=re.escape(message)) as error:
        read_accept_list(accept, candidates)
    assert f"{accept}:" in str(error.value)


def test_a_missing_accept_list_says_how_to_make_one(tmp_path: Path) -> None:
    with pytest.raises(LosonaError, match="the accept list is missing"):
        read_accept_list(tmp_path / "nope.txt", pl.DataFrame())
