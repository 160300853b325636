"""Model-written and data-file text never runs in a page, on any page the pipeline writes.

Every field a page shows that comes from a model (responses, judge reasoning, generated
chats) or from a data file (scenarios, labels in configs, the audit's CSV tables) is given
a payload: a `<script>`, or markup that breaks out of an attribute (`"><img onerror=…>`,
`'><svg onload=…>`). Each payload, if it ran, would set `data-pwned` on the page's
`<html>` element to its field's number. Every page (the report with its audit section,
the labelling sheet, the generation review sheet) is rendered, opened in headless
Chromium, and its DOM after load is read back: the marker must be absent, and every
payload must be on the page as text. A control opens each payload unescaped, so the
detector is shown to catch what it looks for.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import BASE_ROW, loaded_dom, needs_chromium, verdict_table
from test_audit import run_audit, scenarios_table
from test_judge import responses_table

from losona.audit.labelling import labelling_sheet, sheet_html
from losona.core.config import AggregateSettings
from losona.core.contracts import SCENARIO_SCHEMA, SUBSET_MARK, table
from losona.dynamic.report import METRIC_LABELS, dynamic_section
from losona.dynamic.tables import (
    DYNAMIC_ARM_SCHEMA,
    DYNAMIC_EXAMPLE_SCHEMA,
    DYNAMIC_OUTCOME_SCHEMA,
    DYNAMIC_RESULT_SCHEMA,
)
from losona.generation.curate import review_html
from losona.generation.tables import CANDIDATE_SCHEMA
from losona.pages import ENVIRONMENT, TEMPLATES
from losona.report.audit_section import audit_section
from losona.report.index import build_report
from losona.report.plots import draw_figures
from losona.results.aggregate import aggregate
from losona.results.bundle import ReportBundle
from losona.results.presentation import Presentation

# Payload labels make the figures' axes crowded; the figures only need to exist here.
pytestmark = pytest.mark.filterwarnings("ignore:constrained_layout not applied")

# The payload kinds, each setting the marker to the field's number `n` if it runs.
KINDS = (
    "<script>document.documentElement.dataset.pwned={n}</script>",
    '"><img src=x onerror=document.documentElement.dataset.pwned={n}>',
    "'><svg onload=document.documentElement.dataset.pwned={n}>",
)
RAN = re.compile(r"<html\b[^>]*\bdata-pwned=\"(\d+)\"")


class Payloads:
    """Hands out one payload per field, numbered, and remembers which field got which."""

    def __init__(self) -> None:
        self.fields: list[str] = []
        self.texts: list[str] = []

    def __call__(self, field: str) -> str:
        n = len(self.fields)
        text = f"{field} {KINDS[n % len(KINDS)].format(n=n)}"
        self.fields.append(field)
        self.texts.append(text)
        return text


# -- the hostile inputs ----------------------------------------------------------------------


def hostile_scenarios(p: Payloads, fields: Iterable[str], n: int = 2) -> pl.DataFrame:
    """`n` scenarios of one norm whose `fields` (and turns, cast) carry payloads."""
    fields = set(fields)
    common = {name: p(name) for name in sorted(fields - {"scenario_id", "turns", "cast"})}
    rows = []
    for i in range(n):
        row = BASE_ROW | common | {"scenario_id": f"s{i}", "source": "test"}
        if "scenario_id" in fields:
            row["scenario_id"] = p(f"scenario_id {i}")
        if "turns" in fields:
            row["turns"] = [
                t
                | {
                    "actor": p(f"turn {i}.{t['index']} actor"),
                    "content": p(f"turn {i}.{t['index']}"),
                }
                for t in BASE_ROW["turns"]
            ]
        if "cast" in fields:
            row["cast"] = [
                {"name": p(f"cast {i}.{j} name"), "bio": p(f"cast {i}.{j} bio")} for j in range(2)
            ]
        rows.append(row)
    return table(rows, SCENARIO_SCHEMA, sort_by=["scenario_id"])


REPORT_SCENARIO_FIELDS = (
    "scenario_id",
    "event_type",
    "norm_id",
    "venue",
    "channel_description",
    "subject",
    "subject_bio",
    "cast",
    "turns",
    "elicitor_actor",
    "elicitor_content",
    "norm_statement",
)
# The audit's CSV tables and the columns of each that its section shows.
AUDIT_SHOWN = {
    "judge_pairs.csv": ["judge_a", "judge_b"],
    "headline_stability.csv": [
        "judge_a",
        "judge_b",
        "subject_model",
        "check",
        "condition",
        "a",
        "b",
    ],
    "judge_pair_breakdown.csv": ["judge_a", "judge_b", "group"],
    "human_agreement.csv": ["judge"],
    "human_items.csv": ["item_id", "judge", "scenario_id", "subject_model", "condition"],
    "determinism.csv": ["judge", "judge_model"],
    "determinism_flips.csv": [
        "judge",
        "scenario_id",
        "subject_model",
        "condition",
        "original",
        "repeats",
    ],
    "controls.csv": ["judge", "judge_model"],
    "control_misses.csv": ["judge", "scenario_id", "example", "response", "verdict", "reasoning"],
    "correction.csv": ["judge", "status"],
    "corrected.csv": ["model_label", "condition_label"],
    "corrected_deltas.csv": ["model_label", "condition_label"],
    "self_preference.csv": [
        "judge",
        "family",
        "own_family_models",
        "other_models",
        "reference_judges",
        "status",
    ],
}


def hostile_report(p: Payloads) -> str:
    """The report, audit section included, with payloads in every field it shows."""
    scenarios = hostile_scenarios(p, REPORT_SCENARIO_FIELDS).with_columns(
        source=pl.lit(f"test{SUBSET_MARK}44: limit 2 {p('source')}")
    )
    # The model is shown by its label; its config name only inside the figures.
    judge, model = p("judge name"), "m"
    # Scenario 0 regresses under norm_informed (the casebook), scenario 1 recovers.
    labels = {
        (judge, model, "naive"): [[True, True, True], [False, False, False]],
        (judge, model, "norm_informed"): [[False, False, None], [True, True, True]],
    }
    response, reasoning, status = p("response"), p("reasoning"), p("judge_status")
    verdicts = verdict_table(labels, scenarios).with_columns(
        response=pl.lit(response),
        reasoning=pl.lit(reasoning),
        judge_model=pl.lit(p("judge_model")),
        judge_status=pl.when(pl.col("complies").is_null())
        .then(pl.lit(status))
        .otherwise(pl.lit("ok")),
    )
    reports = aggregate(
        verdicts,
        scenarios,
        bootstrap=AggregateSettings(resamples=200, seed=0, confidence=0.95),
        presentation=Presentation(
            model_labels={model: p("model label")},
            condition_labels={"naive": p("naive label"), "norm_informed": p("condition label")},
        ),
    )
    audit = hostile_audit(p)
    dynamic = dynamic_section(
        {p("dynamic judge"): (hostile_dynamic(p), "<svg/>")}, "95%", p("dynamic subset")
    )
    return build_report(
        reports,
        draw_figures(reports),
        verdicts,
        scenarios,
        extra=[dynamic, audit_section(audit, reports)],
    )


def hostile_dynamic(p: Payloads) -> ReportBundle:
    """The dynamic extension's tables, payloads in every field its section shows."""
    model, condition = p("dynamic subject_model"), p("dynamic condition")
    # The section names its judge from results.csv, as the first turn's tables do.
    judge = {"judge": "j", "judge_model": p("dynamic judge_model")}
    judge |= {"judge_label": p("dynamic judge_label"), "k": 1, "scenarios": 2}
    labels = {
        "subject_model": model,
        "model_label": p("dynamic model_label"),
        "condition": condition,
        "condition_label": p("dynamic condition_label"),
    }
    results = table(
        [
            labels
            | judge
            | {"level": level, "metric": metric}
            | {"estimate": 50.0, "low": 0.0, "high": 100.0, "count": 1, "out_of": 2}
            | ({"helped": 1, "hurt": 0, "mcnemar_p": 1.0} if metric == "sanction_effect" else {})
            for level in ("trial", "scenario")
            for metric in METRIC_LABELS
        ],
        DYNAMIC_RESULT_SCHEMA,
        sort_by=[],
    )
    arms = table(
        [
            {"judge": "j", "subject_model": model, "condition": condition, "arm": "sanction"}
            | {"trials": 1, "continued": 1, "left_out": 0, "scored": 1, "complying": 1}
        ],
        DYNAMIC_ARM_SCHEMA,
        sort_by=[],
    )
    shown = (
        "scenario_id",
        "subject",
        "first_elicitor",
        "first_response",
        "sanction",
        "control",
        "second_elicitor",
        "sanction_response",
        "control_response",
    )
    example = {"judge": "j", "subject_model": model, "condition": condition, "trial": 0}
    example |= {column: p(f"dynamic example {column}") for column in shown}
    example |= {"sanction_complies": True, "control_complies": False}
    examples = table([example], DYNAMIC_EXAMPLE_SCHEMA, sort_by=[])
    settings = {
        "judge_model": "jm",
        "followup_sources": [p("dynamic followup_source")],
        "elicitor_sources": [p("dynamic elicitor_source")],
    }
    return ReportBundle(
        {
            "results.csv": results,
            "arms.csv": arms,
            "outcomes.csv": pl.DataFrame(schema=DYNAMIC_OUTCOME_SCHEMA),
            "examples.csv": examples,
        },
        {"settings": settings},
    )


def hostile_audit(p: Payloads) -> ReportBundle:
    """A real audit's tables, each with at least one row, payloads in every column shown."""
    result = run_audit(scenarios_table())
    assert set(result.tables) == set(AUDIT_SHOWN), "the audit writes a table this test misses"
    tables = {}
    for name, frame in result.tables.items():
        if frame.is_empty():
            frame = pl.DataFrame([_placeholder(frame.schema)], schema=frame.schema)
        tables[name] = frame.with_columns(
            pl.lit(p(f"{name} {column}")).alias(column) for column in AUDIT_SHOWN[name]
        )
    # One judge whose correction is shown with its corrected figures, and the same judge
    # as one whose correction is not identifiable, with its reason.
    basis = tables["correction.csv"]
    tables["correction.csv"] = pl.concat(
        [basis.with_columns(identifiable=pl.lit(flag)) for flag in (True, False)]
    )
    for name in ("corrected.csv", "corrected_deltas.csv"):
        tables[name] = tables[name].with_columns(judge=pl.lit(basis["judge"][0]))
    # A sheet was labelled, so the section shows the agreement with people.
    metrics = result.metrics | {
        "labels": result.metrics["labels"] | {"sheet_items": 1, "labelled": 1}
    }
    return ReportBundle(tables, metrics)


def _placeholder(schema: pl.Schema) -> dict[str, Any]:
    """A row of plain values for a table the audit left empty."""
    values: dict[str, Any] = {}
    for column, dtype in schema.items():
        if dtype == pl.Boolean:
            values[column] = False
        elif dtype.is_integer():
            values[column] = 1
        elif dtype.is_float():
            values[column] = 50.0
        else:
            values[column] = "x"
    return values


def hostile_sheet(p: Payloads) -> str:
    """The labelling sheet of two responses, payloads in the scenario text and the responses."""
    shown = ("subject", "turns", "elicitor_actor", "elicitor_content", "norm_statement")
    scenarios = hostile_scenarios(p, shown)
    responses = responses_table(
        [(sid, 0, p(f"response to {sid}")) for sid in scenarios["scenario_id"]]
    )
    return sheet_html(labelling_sheet(responses, scenarios, items=2, seed=0))


def hostile_review(p: Payloads) -> str:
    """The generation review sheet of one candidate, payloads in its chat and its screen."""
    shown = (
        "event_type",
        "norm_id",
        "venue",
        "channel_description",
        "subject",
        "subject_bio",
        "cast",
        "turns",
        "elicitor_actor",
        "elicitor_content",
        "norm_statement",
        "end_goal",
    )
    scenario = hostile_scenarios(p, shown, n=1).row(0, named=True)
    candidate_id = p("candidate_id")
    scenario |= {"scenario_id": candidate_id}
    candidates = table(
        [
            {
                "candidate_id": candidate_id,
                "event_type": scenario["event_type"],
                "norm_id": scenario["norm_id"],
                "venue": scenario["venue"],
                "sample": 0,
                "generator": p("generator"),
                "generator_model": p("generator_model"),
                "template_version": "1",
                "reply": "{}",
                "finish_reason": "stop",
                "cost_usd": 0.0,
                "scenario": json.dumps(scenario),
                "status": "accepted",
                "reasons": [],
            }
        ],
        CANDIDATE_SCHEMA,
        sort_by=["candidate_id"],
    )
    baseline, judge, response, evidence = p("baseline"), p("judge"), p("answer"), p("evidence")
    verdicts = verdict_table(
        {(judge, baseline, "naive"): [[False, None]]},
        candidates.rename({"candidate_id": "scenario_id"}),
    ).with_columns(
        response=pl.lit(response),
        evidence=pl.lit(evidence),
        judge_status=pl.when(pl.col("complies").is_null())
        .then(pl.lit(p("screen judge_status")))
        .otherwise(pl.lit("ok")),
    )
    return review_html(candidates, verdicts, p("accept list"))


PAGES = {"report": hostile_report, "labelling sheet": hostile_sheet, "review sheet": hostile_review}


# -- reading a page back -----------------------------------------------------------------------


class Text(HTMLParser):
    """The text of a document, as a reader sees it (what scripts and styles hold left out)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.hidden = 0
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.hidden += tag in ("script", "style")

    def handle_endtag(self, tag: str) -> None:
        self.hidden -= tag in ("script", "style")

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)

    def __str__(self) -> str:
        return "".join(self.parts)


def squeezed(text: str) -> str:
    # Without whitespace: the review sheet's chat wraps long lines wherever a word ends.
    return "".join(text.split())


# -- the tests -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PAGES))
def test_no_payload_reaches_the_page_as_markup_and_every_one_is_shown(name: str) -> None:
    p = Payloads()
    html = PAGES[name](p)
    assert len(p.fields) >= 10
    for field, text in zip(p.fields, p.texts, strict=True):
        markup = text.removeprefix(field + " ")
        assert markup not in html, f"{name}: the payload of {field} is on the page as markup"
    shown = squeezed(str(Text(html)))
    missing = [f for f, text in zip(p.fields, p.texts, strict=True) if squeezed(text) not in shown]
    assert missing == [], f"{name}: these fields' text is not on the page"


@pytest.mark.slow
@needs_chromium
@pytest.mark.parametrize("name", sorted(PAGES))
def test_nothing_runs_when_chromium_opens_the_page(name: str, tmp_path: Path) -> None:
    p = Payloads()
    dom = loaded_dom(PAGES[name](p), tmp_path)
    ran = RAN.search(dom)
    assert ran is None, f"{name}: the payload of {p.fields[int(ran.group(1))]} ran"
    shown = squeezed(str(Text(dom)))
    missing = [f for f, text in zip(p.fields, p.texts, strict=True) if squeezed(text) not in shown]
    assert missing == [], f"{name}: these fields' text is not in the loaded page"


@pytest.mark.slow
@needs_chromium
@pytest.mark.parametrize("kind", range(len(KINDS)))
def test_the_detector_sees_a_payload_that_runs(kind: int, tmp_path: Path) -> None:
    # The same payloads, deliberately unescaped, in text and in an attribute.
    payload = KINDS[kind].format(n=kind)
    html = (
        "<!doctype html><html><head><title>control</title></head><body>"
        f'<p id="x{payload}">{payload}</p></body></html>'
    )
    ran = RAN.search(loaded_dom(html, tmp_path))
    assert ran is not None and ran.group(1) == str(kind)


def test_autoescaping_is_on_and_no_template_turns_it_off() -> None:
    # The one exception is losona.pages.fragment, which trusts a rendered template.
    assert ENVIRONMENT.autoescape is True
    templates = sorted(TEMPLATES.rglob("*.html"))
    assert len(templates) >= 10
    for template in templates:
        source = re.sub(r"\s", "", template.read_text(encoding="utf-8"))
        for unsafe in ("|safe", "autoescapefalse", "Markup"):
            assert unsafe not in source, f"{template.name}: {unsafe}"
