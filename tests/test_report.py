"""reports/index.html: self-contained, escaped, from the table down to every response."""

from __future__ import annotations

import base64
import html
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import BASE_ROW, loaded_dom, needs_chromium, verdict_table

from losona.core.config import AggregateSettings
from losona.core.contracts import SCENARIO_SCHEMA, table
from losona.figures import Figure
from losona.pages import fragment
from losona.report.index import Section, build_report, effects_section, summary_data
from losona.report.plots import draw_figures
from losona.results.aggregate import Reports, aggregate
from losona.results.presentation import Presentation

# The module's pages and figures are drawn once per module: its tests share a worker
# (make test's --dist loadgroup), so they are drawn once per test run, not once per worker.
pytestmark = pytest.mark.xdist_group("report")

BOOTSTRAP = AggregateSettings(resamples=500, seed=0, confidence=0.95)
INJECTED = "<script>alert('pwned')</script> & <b>bold</b>"
COUNTS = {"naive": [3, 0, 2, 0], "norm_informed": [0, 3, 3, 1]}  # s00 regresses, s01 recovers


@pytest.fixture(scope="module")
def inputs() -> tuple[Reports, list[Figure], pl.DataFrame, pl.DataFrame]:
    rows = [
        BASE_ROW
        | {
            "scenario_id": f"standup__binary_answer_norm__{i}",
            "elicitor_content": f"Noor, did load {i} finish?",
            "source": "test",
        }
        for i in range(4)
    ]
    scenarios = table(rows, SCENARIO_SCHEMA, sort_by=["scenario_id"])
    labels = {
        ("lexicon", "smollm2", condition): [[t < c for t in range(3)] for c in counts]
        for condition, counts in COUNTS.items()
    }
    verdicts = verdict_table(labels, scenarios).with_columns(
        response=pl.when(pl.col("trial") == 1).then(pl.lit(INJECTED)).otherwise(pl.col("response"))
    )
    reports = aggregate(
        verdicts,
        scenarios,
        bootstrap=BOOTSTRAP,
        presentation=Presentation(
            model_labels={"smollm2": "SmolLM2 135M"},
            condition_labels={"naive": "Naive", "norm_informed": "Norm-informed"},
        ),
    )
    return reports, draw_figures(reports), verdicts, scenarios


@pytest.fixture(scope="module")
def page(inputs: tuple[Reports, list[Figure], pl.DataFrame, pl.DataFrame]) -> str:
    return build_report(*inputs)


class Elements(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str) -> list[dict[str, str | None]]:
        return [attrs for name, attrs in self.tags if name == tag]


def test_the_page_is_self_contained(page: str) -> None:
    elements = Elements(page)
    assert not elements.all("script") and not elements.all("link") and not elements.all("iframe")
    for attrs in elements.all("img"):
        assert (attrs["src"] or "").startswith("data:image/svg+xml;base64,")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "@import" not in page and "url(" not in page


def test_results_table_figures_and_the_judge_are_on_the_page(page: str) -> None:
    text = " ".join(Elements(page).text)
    assert "Judge: lexicon (lexicon-model)" in text
    assert "SmolLM2 135M" in text and "Norm-informed" in text
    assert "Acc@3 (95% CI)" in text
    images = Elements(page).all("img")
    assert len(images) == 4
    svg = base64.b64decode((images[0]["src"] or "").split(",", 1)[1]).decode()
    assert "judge: lexicon" in svg


def test_every_chat_turn_and_response_is_shown_and_escaped(
    page: str, inputs: tuple[Reports, list[Figure], pl.DataFrame, pl.DataFrame]
) -> None:
    _, _, verdicts, scenarios = inputs
    assert INJECTED not in page and "<script>" not in page
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in page
    text = " ".join(Elements(page).text)
    for response in verdicts["response"].unique():
        assert response in text
    for scenario in scenarios.iter_rows(named=True):
        assert f'id="s-{scenario["scenario_id"]}"' in page
        assert scenario["elicitor_content"] in text
        for turn in scenario["turns"]:
            assert turn["content"] in text
    assert "standup__binary_answer_norm__0" in text and scenarios["norm_statement"][0] in text


def test_the_casebook_shows_each_regression_beside_its_naive_responses(page: str) -> None:
    casebook = page[page.index('id="casebook"') : page.index('id="breakdowns"')]
    assert casebook.count('<details class="case">') == 1
    assert "standup__binary_answer_norm__0" in casebook
    assert "Naive (3/3 comply)" in casebook and "Norm-informed (0/3 comply)" in casebook
    assert casebook.count("smollm2 answers standup__binary_answer_norm__0") == 4  # 2 x 2 trials


def test_recovered_and_regressed_counts_link_to_their_scenarios(page: str) -> None:
    effects = page[page.index('id="effects"') : page.index('id="casebook"')]
    assert '<a href="#s-standup__binary_answer_norm__1">' in effects
    assert "<summary>1/2</summary>" in effects  # recovered 1 of 2 naive failures


def test_an_extra_section_is_listed_and_placed_before_the_casebook(
    inputs: tuple[Reports, list[Figure], pl.DataFrame, pl.DataFrame],
) -> None:
    audit = Section("audit", "Judge audit", "<p>kappa 0.8</p>")
    page = build_report(*inputs, extra=[audit])
    assert '<li><a href="#audit">Judge audit</a></li>' in page
    assert page.index('id="effects"') < page.index('id="audit"') < page.index('id="casebook"')


def test_a_subset_run_says_so_at_the_top_and_a_full_run_does_not(
    page: str, inputs: tuple[Reports, list[Figure], pl.DataFrame, pl.DataFrame]
) -> None:
    reports, figures, verdicts, scenarios = inputs
    note = "test; subset of 44: limit 4 stratified by norm, seed 3"
    subset = build_report(reports, figures, verdicts, scenarios.with_columns(source=pl.lit(note)))
    assert "subset" not in page.lower()
    header = subset[subset.index("<header>") : subset.index("<nav>")]
    text = " ".join("".join(Elements(header).text).split())
    assert (
        "Subset: this run covers 4 of 44 scenarios (limit 4 stratified by norm, seed 3), "
        "not the whole dataset" in text
    )


def test_the_page_is_identical_on_rerun(
    page: str, inputs: tuple[Reports, list[Figure], pl.DataFrame, pl.DataFrame]
) -> None:
    assert build_report(*inputs) == page


@pytest.mark.slow
@needs_chromium
def test_chromium_renders_the_table_the_figures_and_a_scenarios_responses(
    page: str, tmp_path: Path
) -> None:
    # A copy of the page with a probe that records, after load, what Chromium rendered:
    # the probe is test-only, the report itself carries no script.
    probe = (
        "<script>addEventListener('load', () => {"
        "const imgs = [...document.images];"
        "document.body.dataset.decoded = imgs.filter(i => i.complete && i.naturalWidth > 0).length;"
        "document.body.dataset.rows = document.querySelectorAll('#results tbody tr').length;"
        "document.body.dataset.chat = "
        "document.querySelectorAll('details.scenario ol.chat li').length;"
        "});</script>"
    )
    dom = loaded_dom(page.replace("</body>", probe + "</body>"), tmp_path)
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None
    attributes: dict[str, Any] = dict(re.findall(r'data-(\w+)="(\d+)"', body.group(1)))
    # One model: two Table 1 rows and no mean rows; four scenarios of four chat lines.
    assert attributes == {"decoded": "4", "rows": "2", "chat": str(4 * 4)}
    assert "Acc@3 (95% CI)" in dom
    assert "smollm2 answers standup__binary_answer_norm__2 under norm_informed (0)" in dom
    assert "&lt;script&gt;alert('pwned')&lt;/script&gt;" in dom


@pytest.fixture(scope="module")
def two_judges() -> tuple[Reports, pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """A lexicon judge and a test double, each with a label, and the double's model too."""
    rows = [
        BASE_ROW | {"scenario_id": f"standup__binary_answer_norm__{i}", "source": "test"}
        for i in range(3)
    ]
    scenarios = table(rows, SCENARIO_SCHEMA, sort_by=["scenario_id"])
    labels = {
        (judge, "local", condition): [[t < c for t in range(3)] for c in counts]
        for judge in ("lexicon", "scripted")
        for condition, counts in (("naive", (3, 0, 2)), ("norm_informed", (0, 3, 3)))
    }
    verdicts = verdict_table(labels, scenarios)
    reports = aggregate(
        verdicts,
        scenarios,
        bootstrap=BOOTSTRAP,
        presentation=Presentation(
            model_labels={"local": "Test server [TEST DOUBLE]"},
            judge_labels={
                "lexicon": "Lexicon rules (offline)",
                "scripted": "Scripted judge [TEST DOUBLE]",
            },
        ),
    )
    controls = pl.DataFrame(
        [
            {"judge": j, "judge_model": f"{j}-model", "example": e, "items": 3, "right": r}
            | {"wrong": 3 - r, "unscored": 0, "accuracy": 100 * r / 3}
            for j, rights in (("lexicon", (3, 3)), ("scripted", (2, 3)))
            for e, r in zip(("compliant", "breaching"), rights, strict=True)
        ]
        + [
            {"judge": j, "judge_model": f"{j}-model", "example": "all", "items": 6, "right": r}
            | {"wrong": 6 - r, "unscored": 0, "accuracy": round(100 * r / 6, 1)}
            for j, r in (("lexicon", 6), ("scripted", 5))
        ]
    )
    return reports, verdicts, scenarios, controls


def test_judges_are_named_by_label_and_a_test_double_is_marked_everywhere(
    two_judges: tuple[Reports, pl.DataFrame, pl.DataFrame, pl.DataFrame],
) -> None:
    reports, verdicts, scenarios, controls = two_judges
    page = build_report(reports, draw_figures(reports), verdicts, scenarios, controls=controls)
    text = " ".join(html.unescape(re.sub(r"<[^>]+>", "", page)).split())
    assert "Judged by Lexicon rules (offline) (lexicon, lexicon-model), Scripted judge" in text
    assert "Test doubles: Scripted judge [TEST DOUBLE], Test server [TEST DOUBLE]." in text
    # Table 1 per judge, the effects and the browser: the label, never the bare name alone.
    assert "Judge: Scripted judge [TEST DOUBLE] (scripted, scripted-model)" in text
    effects = page[page.index('id="effects"') : page.index('id="casebook"')]
    assert "<td>Scripted judge [TEST DOUBLE]</td>" in effects and "<td>scripted</td>" not in effects
    browser = page[page.index('id="browser"') :]
    assert "<td>Scripted judge [TEST DOUBLE]</td>" in browser
    # The judges' table: one row each, the double's row marked, with its controls.
    judges = page[page.index('id="judges"') : page.index('id="figures"')]
    assert judges.count('<tr class="double">') == 1
    row = judges[judges.index('<tr class="double">') :].split("</tr>")[0]
    assert "Scripted judge [TEST DOUBLE]" in row and "<code>scripted</code>" in row
    assert ">2/3<" in row and ">3/3<" in row and ">83.3<" in row
    # Every figure that shows the double's verdicts (a heatmap is one judge's) marks it.
    for figure in draw_figures(reports):
        svg = figure.svg
        assert "Test server [TEST DOUBLE]" in svg, figure.name
        if figure.name != "heatmap_lexicon":
            assert "Scripted judge [TEST DOUBLE]" in svg, figure.name


def test_a_run_without_test_doubles_says_nothing_of_them(page: str) -> None:
    assert "Test doubles" not in page and "TEST DOUBLE" not in page


# -- a run at K = 1 with three judges, one a panel, as issue 30 tried it ------------------------


@pytest.fixture(scope="module")
def three_judges() -> tuple[Reports, list[Figure], pl.DataFrame, pl.DataFrame]:
    """Five scenarios, K = 1, two models, four conditions; a lexicon judge, a test double and
    a panel of both, labelled as their configs would (the panel marked for its member)."""
    rows = [
        BASE_ROW | {"scenario_id": f"standup__binary_answer_norm__{i}", "source": "test"}
        for i in range(5)
    ]
    scenarios = table(rows, SCENARIO_SCHEMA, sort_by=["scenario_id"])
    conditions = ("naive", "elicitor_only", "style_adaptation", "norm_informed")
    # lexicon passes scenario 0 everywhere; the test double passes it nowhere; the panel
    # passes it under naive only: pooled, scenario 0 would pass in 16 + 2 = 18 of 24 cells.
    passes = {
        "lexicon": lambda i, c: i == 0,
        "scripted": lambda i, c: False,
        "panel": lambda i, c: i == 0 and c == "naive",
    }
    labels = {
        (judge, model, condition): [[passes[judge](i, condition)] for i in range(5)]
        for judge in passes
        for model in ("model_a", "model_b")
        for condition in conditions
    }
    verdicts = verdict_table(labels, scenarios)
    reports = aggregate(
        verdicts,
        scenarios,
        bootstrap=BOOTSTRAP,
        presentation=Presentation(
            judge_labels={
                "lexicon": "Lexicon rules (offline)",
                "scripted": "Scripted judge [TEST DOUBLE]",
                "panel": "Lexicon and scripted judge (panel) [TEST DOUBLE]",
            },
        ),
    )
    return reports, draw_figures(reports), verdicts, scenarios


@pytest.fixture(scope="module")
def three_judges_page(
    three_judges: tuple[Reports, list[Figure], pl.DataFrame, pl.DataFrame],
) -> str:
    return build_report(*three_judges)


def visible(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", fragment)).split())


def test_consistency_is_shown_only_where_k_is_above_1(page: str, three_judges_page: str) -> None:
    # K = 1: no column of 100.0 in any judge's table, and the reason once, under them.
    results = three_judges_page[
        three_judges_page.index('id="results"') : three_judges_page.index('id="judges"')
    ]
    assert results.count("<h3>Judge: ") == 3
    assert '<th class="num">Consistency</th>' not in results
    assert visible(results).count("Consistency is left out: at K = 1") == 1
    # Every row still has its five cells under five headings: nothing shifted.
    rows = [row for row in re.findall(r"<tr[^>]*>(.*?)</tr>", results) if "<td" in row]
    assert len(rows) == 3 * (2 * 4 + 4)  # per judge: model x condition rows, then the means
    for row in rows:
        assert row.count("<td") == 5
    # K = 3: the column and its definition, as before.
    at_3 = page[page.index('id="results"') : page.index('id="judges"')]
    assert '<th class="num">Consistency</th>' in at_3
    assert "Consistency: share of scenarios whose trial labels all agree" in visible(at_3)
    assert "Consistency is left out" not in at_3


def test_the_browser_counts_each_judges_passes_apart(three_judges_page: str) -> None:
    browser = three_judges_page[three_judges_page.index('id="browser"') :]
    summaries = [visible(s) for s in re.findall(r"<summary>(.*?)</summary>", browser)]
    first = next(s for s in summaries if s.startswith("standup__binary_answer_norm__0"))
    assert first.endswith(
        "passes in 8 of 8 model \N{MULTIPLICATION SIGN} condition cells "
        "under Lexicon rules (offline); "
        "2 of 8 under Lexicon and scripted judge (panel) [TEST DOUBLE]; "
        "0 of 8 under Scripted judge [TEST DOUBLE]"
    )
    assert "of 24" not in browser  # never pooled over judges


def test_a_single_judges_browser_counts_without_naming_it(page: str) -> None:
    browser = page[page.index('id="browser"') :]
    summaries = [visible(s) for s in re.findall(r"<summary>(.*?)</summary>", browser)]
    # One judge: scenario 0 passes under naive (3/3) only, of 2 cells.
    assert any(
        s.startswith("standup__binary_answer_norm__0")
        and s.endswith("passes in 1 of 2 model \N{MULTIPLICATION SIGN} condition cells")
        for s in summaries
    )


def test_trials_are_numbered_from_1_on_the_page(
    page: str, inputs: tuple[Reports, list[Figure], pl.DataFrame, pl.DataFrame]
) -> None:
    verdicts = inputs[2]
    assert sorted(verdicts["trial"].unique()) == [0, 1, 2]  # the table keeps its index
    for start, end in (('id="casebook"', 'id="breakdowns"'), ('id="browser"', "</main>")):
        section = page[page.index(start) : page.index(end)]
        shown = re.findall(r"<tr>(?:<td>[^<]*</td>)*?<td>(\d+)</td><td><span class=\"v ", section)
        assert shown and set(shown) == {"1", "2", "3"}, start


def test_a_heatmap_per_judge_is_shown_at_its_own_size(three_judges_page: str) -> None:
    figures = three_judges_page[
        three_judges_page.index('id="figures"') : three_judges_page.index('id="effects"')
    ]
    for judge in ("lexicon", "scripted", "panel"):
        assert f'<figure id="heatmap_{judge}" class="full">' in figures
    # Figures 2-4 still fit the page; only the heatmaps keep their size and scroll.
    assert '<figure id="fig2_accuracy">' in figures
    assert "figure.full{overflow-x:auto}" in three_judges_page
    assert "figure.full img{max-width:none}" in three_judges_page


def test_the_summary_and_the_effects_of_a_one_of_everything_run_read_in_the_singular() -> None:
    # One scenario, one model, one condition (naive), one trial each: every count is 1.
    scenarios = table([BASE_ROW | {"source": "test"}], SCENARIO_SCHEMA, sort_by=["scenario_id"])
    verdicts = verdict_table({("lexicon", "smollm2", "naive"): [[True]]}, scenarios)
    reports = aggregate(verdicts, scenarios, bootstrap=BOOTSTRAP)
    lead = " ".join(Elements(fragment("report/summary.html", **summary_data(reports, None))).text)
    assert (
        "1 scenario, 1 model, 1 prompt condition, K = 1 trial each; 0 of 1 trial unscored, "
        "0 scenario results undetermined."
    ) in lead
    effects = " ".join(Elements(effects_section(reports).body).text)
    assert "No paired effects: the run has only the 'naive' condition, so none to compare" in (
        effects
    )
