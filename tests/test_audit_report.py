"""The report's "Judge audit" section: what it says in each state, escaped, in its place."""

from __future__ import annotations

from html.parser import HTMLParser

import polars as pl
import pytest
from test_audit import (
    BOOTSTRAP,
    DeterminismSettings,
    labelled_items,
    never,
    run_audit,
    scenarios_table,
    two_judge_run,
)

from losona.audit.labelling import Labels
from losona.audit.run import audit
from losona.report.audit_section import audit_section
from losona.report.index import build_report
from losona.results.bundle import ReportBundle
from losona.results.presentation import Presentation

SID = "standup__binary_answer_norm__{}"


class Text(HTMLParser):
    """The page's text, without markup: table cells and blocks apart, inline tags not."""

    BLOCKS = frozenset({"td", "th", "tr", "p", "h3", "h4", "summary", "details", "table"})

    def __init__(self, html: str) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.BLOCKS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

    def __str__(self) -> str:
        return " ".join("".join(self.parts).split())


@pytest.fixture(scope="module")
def scenarios() -> pl.DataFrame:
    return scenarios_table()


def section_text(result: ReportBundle, scenarios: pl.DataFrame) -> str:
    _, reports, _ = two_judge_run(scenarios)
    return str(Text(audit_section(result, reports).body))


def test_two_judges_without_labels(scenarios: pl.DataFrame) -> None:
    text = section_text(run_audit(scenarios), scenarios)
    assert "A vs B Both scored Agreement % Cohen's κ" in text
    assert "a vs b 12 50.0" in text
    assert "Headline comparisons, a vs b: 2 of 2 come out the same under both judges" in text
    assert (
        "No labelling sheet yet. Export one with python stages/audit.py audit.export=true" in text
    )
    assert "deterministic by construction (rules, no model): not re-judged" in text
    assert "not run (audit.determinism.repeats is 0)" in text
    # Both judges' controls come from a judge that says yes to everything.
    assert "a broken@0 2/4 (50.0) 2/2 (100.0) 0/2 (0.0) 0" in text
    assert "The 4 controls judged wrong or not scored" in text


def test_one_judge_says_how_to_add_another(scenarios: pl.DataFrame) -> None:
    verdicts, reports, controls = two_judge_run(scenarios)
    one = verdicts.filter(pl.col("judge") == "a")
    result = audit(
        one,
        scenarios,
        reports,
        controls,
        Labels(None, None),
        presentation=Presentation(),
        bootstrap=BOOTSTRAP,
        determinism_settings=DeterminismSettings(),
        kinds={"a": "lexicon"},
        rejudge=never,
    )
    assert "One judge in this run: add a second judge to sweep.judges" in str(
        Text(audit_section(result, reports).body)
    )


def people(scenarios: pl.DataFrame) -> pl.DataFrame:
    """People agree with judge a on naive trials 0 and 1 of scenario 0, and say no to trial 2."""
    return labelled_items(
        {(SID.format(0), "m", 0): True, (SID.format(0), "m", 1): False}
        | {(SID.format(0), "m", 2): True}
    )


def test_a_sheet_waiting_for_labels_and_then_the_labels(scenarios: pl.DataFrame) -> None:
    key = people(scenarios).drop("human")
    waiting = section_text(run_audit(scenarios, Labels(key, None)), scenarios)
    assert "A labelling sheet of 3 responses is waiting for its labels" in waiting

    labelled = section_text(run_audit(scenarios, Labels(key, people(scenarios))), scenarios)
    # a says yes, no, no on those three: 2 of 3 agree; b says the opposite: 1 of 3.
    assert "a 3 66.7 [" in labelled
    assert "b 3 33.3 [" in labelled
    assert "3 responses labelled by people" in labelled
    assert "The 3 disagreements" in labelled


def test_every_value_from_a_file_is_escaped(scenarios: pl.DataFrame) -> None:
    result = run_audit(scenarios)
    hostile = "<script>alert('x')</script>"
    tables = dict(result.tables)
    tables["control_misses.csv"] = tables["control_misses.csv"].with_columns(
        response=pl.lit(hostile), reasoning=pl.lit(hostile)
    )
    _, reports, _ = two_judge_run(scenarios)
    body = audit_section(ReportBundle(tables, result.metrics), reports).body
    assert "<script>" not in body
    assert "&lt;script&gt;" in body


def test_the_section_sits_after_the_paired_effects_in_the_report(scenarios: pl.DataFrame) -> None:
    verdicts, reports, _ = two_judge_run(scenarios)
    section = audit_section(run_audit(scenarios), reports)
    page = build_report(reports, [], verdicts, scenarios, extra=[section])
    assert '<a href="#audit">Judge audit</a>' in page
    order = [page.index(f'<section id="{s}">') for s in ("effects", "audit", "casebook")]
    assert order == sorted(order)
