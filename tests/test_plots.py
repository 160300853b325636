"""plot's figures: drawn from the report tables, judge named, identical on rerun, seen by DVC."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.image
import polars as pl
import pytest
from conftest import run_dvc, run_stage, verdict_table
from matplotlib.figure import Figure as MplFigure

from losona.core.config import AggregateSettings
from losona.core.contracts import CONTROL_SCHEMA, SCENARIO_SCHEMA, table
from losona.core.files import write_parquet
from losona.figures import STYLE, Figure, scope_text, write_figures
from losona.report.plots import LABELLED_ROWS, _accuracy, _judges, draw_figures, no_pairs
from losona.results.aggregate import Reports, aggregate
from losona.results.presentation import Presentation

BOOTSTRAP = AggregateSettings(resamples=500, seed=0, confidence=0.95)
IDS = [f"event_{i % 2}__norm_{i % 3}" for i in range(6)]
COUNTS = {
    "naive": [0, 1, 2, 3, 0, 3],
    "elicitor_only": [3, 3, 2, 0, 1, 3],
    "norm_informed": [3, 3, 3, 3, 0, 1],
}


def scenario_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "scenario_id": IDS,
            "event_type": [sid.split("__")[0] for sid in IDS],
            "norm_id": [sid.split("__")[1] for sid in IDS],
            "source": ["test"] * len(IDS),
        }
    )


def run(
    judges: Sequence[str] = ("lexicon",), conditions: Sequence[str] = tuple(COUNTS)
) -> pl.DataFrame:
    labels = {
        (judge, model, condition): [[t < c for t in range(3)] for c in COUNTS[condition]]
        for judge in judges
        for model in ("model_a", "model_b")
        for condition in conditions
    }
    return verdict_table(labels, scenario_frame())


def reports_of(verdicts: pl.DataFrame) -> Reports:
    return aggregate(verdicts, scenario_frame(), bootstrap=BOOTSTRAP)


@pytest.fixture(scope="module")
def drawn() -> tuple[Reports, list[Figure]]:
    reports = reports_of(run())
    return reports, draw_figures(reports)


def svg_text(svg: str) -> str:
    return " ".join(t for t in ET.fromstring(svg).itertext() if t.strip())


def test_four_figures_as_png_svg_and_csv_naming_the_judge(
    drawn: tuple[Reports, list[Figure]],
) -> None:
    figures = drawn[1]
    assert [f.name for f in figures] == [
        "fig2_accuracy",
        "fig3_paired_effect",
        "fig4_flips",
        "heatmap_lexicon",
    ]
    for figure in figures:
        image = matplotlib.image.imread(io.BytesIO(figure.png), format="png")
        assert image.shape[0] > 200 and image.shape[1] > 400, figure.name
        assert "judge: lexicon (lexicon-model)" in svg_text(figure.svg), figure.name
        assert not figure.data.is_empty(), figure.name


def test_figure_data_holds_the_numbers_drawn(drawn: tuple[Reports, list[Figure]]) -> None:
    reports = drawn[0]
    figures = {f.name: f for f in drawn[1]}
    accuracy = figures["fig2_accuracy"].data
    assert accuracy["acc_at_k"].to_list() == reports["results.csv"]["acc_at_k"].to_list()
    assert accuracy["label"][0] == "model_a · naive"  # no labels configured: the names
    flips = figures["fig4_flips"].data.filter(pl.col("subject_model") == "model_a")
    # naive passes s02, s03, s05; norm_informed passes s00..s03: 2 recovered, 1 regressed.
    informed = flips.filter(pl.col("condition") == "norm_informed")
    assert informed.select("flip", "scenarios", "out_of", "signed").rows() == [
        ("recovered", 2, 3, 2),
        ("regressed", 1, 3, -1),
    ]
    assert "2/3" in svg_text(figures["fig4_flips"].svg)


def test_figures_are_byte_identical_on_rerun(drawn: tuple[Reports, list[Figure]]) -> None:
    reports, first = drawn
    for a, b in zip(first, draw_figures(reports), strict=True):
        assert (a.png, a.svg) == (b.png, b.svg), a.name
        assert a.data.equals(b.data)


def test_every_judge_gets_its_own_panel_and_its_own_heatmap() -> None:
    figures = draw_figures(reports_of(run(judges=("lexicon", "gemini_pro"))))
    assert [f.name for f in figures][3:] == ["heatmap_gemini_pro", "heatmap_lexicon"]
    for figure in figures[:3]:
        text = svg_text(figure.svg)
        assert "judge: lexicon" in text and "judge: gemini_pro" in text, figure.name
    assert figures[0].data["label"][0] == "gemini_pro · model_a · naive"
    # A heatmap is one judge's: its title, caption and numbers name no other.
    for figure, judge, other in zip(
        figures[3:], ("gemini_pro", "lexicon"), ("lexicon", "gemini_pro"), strict=True
    ):
        text = svg_text(figure.svg)
        assert f"judge: {judge}" in text and f"judge: {other}" not in text, figure.name
        assert f"judge {judge}:" in figure.caption
        assert figure.data["judge"].unique().to_list() == [judge]
        assert figure.data.height == 6 * 2 * 3  # scenarios x models x conditions
        assert figure.full_size and not any(f.full_size for f in figures[:3])


def test_a_run_without_naive_still_draws_and_says_why_effects_are_missing() -> None:
    figures = {f.name: f for f in draw_figures(reports_of(run(conditions=["norm_informed"])))}
    assert "No paired effects: the run has no 'naive' condition" in svg_text(
        figures["fig3_paired_effect"].svg
    )
    assert figures["fig3_paired_effect"].data.is_empty()


def test_a_run_of_naive_alone_says_there_is_no_other_condition() -> None:
    figures = {f.name: f for f in draw_figures(reports_of(run(conditions=["naive"])))}
    for name in ("fig3_paired_effect", "fig4_flips"):
        text = svg_text(figures[name].svg)
        assert "No paired effects: the run has only the 'naive' condition" in text, name
        assert "lacks" not in text, name


@pytest.mark.parametrize(
    ("conditions", "why"),
    [
        (["norm_informed"], "the run has no 'naive' condition to compare the others with"),
        (["naive"], "the run has only the 'naive' condition, so none to compare with it"),
        (["naive", "naive"], "the run has only the 'naive' condition, so none to compare with it"),
        (["naive", "norm_informed"], "no model has both 'naive' and another condition"),
    ],
)
def test_no_pairs_says_the_true_reason(conditions: list[str], why: str) -> None:
    assert no_pairs(conditions) == f"No paired effects: {why}."


@pytest.mark.parametrize(
    ("scenarios", "k", "scope"),
    [
        (1, "1", "N = 1 scenario, K = 1 trial each"),
        (2, "1", "N = 2 scenarios, K = 1 trial each"),
        (6, "3", "N = 6 scenarios, K = 3 trials each"),
    ],
)
def test_the_scope_line_counts_in_the_singular_and_plural(
    scenarios: int, k: str, scope: str
) -> None:
    assert scope_text(scenarios, k, None) == scope


def test_figures_are_written_beside_their_data(
    drawn: tuple[Reports, list[Figure]], tmp_path: Path
) -> None:
    figures = drawn[1]
    write_figures(figures, tmp_path / "figures")
    names = sorted(p.name for p in (tmp_path / "figures").iterdir())
    assert names == sorted(f"{f.name}.{ext}" for f in figures for ext in ("png", "svg", "csv"))
    assert pl.read_csv(tmp_path / "figures" / "fig2_accuracy.csv").height == 6


# -- DVC ---------------------------------------------------------------------------------------


def git(*args: str, cwd: Path) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.mark.slow
def test_dvc_shows_and_diffs_the_metrics_and_plots(
    repo_copy: Path, scenario_row: Callable[..., dict[str, Any]]
) -> None:
    """aggregate, audit and plot under DVC, with verdicts in place of the judge stages' outputs."""
    rows = [
        scenario_row(scenario_id=sid, event_type=event, norm_id=norm, source="test")
        for sid, event, norm, _ in scenario_frame().iter_rows()
    ]
    write_parquet(
        table(rows, SCENARIO_SCHEMA, sort_by=["scenario_id"]),
        repo_copy / "data" / "scenarios.parquet",
    )
    verdicts = run()

    def put(verdicts: pl.DataFrame) -> None:
        shutil.rmtree(repo_copy / "data" / "verdicts", ignore_errors=True)
        for (judge, model, condition), part in verdicts.group_by(
            "judge", "subject_model", "condition"
        ):
            write_parquet(
                part,
                repo_copy / "data" / "verdicts" / str(judge) / str(model) / f"{condition}.parquet",
            )

    put(verdicts)
    # The synthetic norms have no lexicon rules, so the validity controls (which the audit
    # stage collects) are put in place too: every example judged right.
    controls = [
        {
            "scenario_id": sid,
            "event_type": event,
            "norm_id": norm,
            "example": example,
            "expected": example == "compliant",
            "response": "an example reply",
            "judge": "lexicon",
            "judge_model": "lexicon@test",
            "judge_version": "test",
            "complies": example == "compliant",
            "judge_status": "ok",
        }
        for sid, event, norm, _ in scenario_frame().iter_rows()
        for example in ("compliant", "breaching")
    ]
    write_parquet(
        table(controls, CONTROL_SCHEMA, sort_by=["scenario_id", "example"]),
        repo_copy / "data" / "judge_controls" / "lexicon.parquet",
    )
    # No model was called for these verdicts: the cells' calls folder is there, and empty.
    (repo_copy / "data" / "calls").mkdir(parents=True)
    git("config", "user.email", "test@example.com", cwd=repo_copy)
    git("config", "user.name", "test", cwd=repo_copy)
    # One DVC command each time: --single-item runs its targets in the order given.
    stages = ("preflight", "model_config", "judge_config", "aggregate", "audit", "plot")
    run_dvc("repro", "--single-item", *stages, cwd=repo_copy)
    assert (repo_copy / "reports" / "index.html").is_file()
    shown = json.loads(run_dvc("metrics", "show", "--json", cwd=repo_copy).stdout)
    metrics = shown[""]["data"]["reports/metrics.json"]["data"]
    assert metrics["lexicon"]["models"]["model_a"]["naive"]["acc_at_k"] == 50.0

    plots = json.loads(run_dvc("plots", "show", "--json", cwd=repo_copy).stdout)
    assert {"reports/figures/fig2_accuracy.csv", "reports/figures/heatmap_lexicon.png"} <= set(
        plots["data"]
    )
    drawn = plots["data"]["reports/figures/fig2_accuracy.csv"][0]["content"]["data"]["values"]
    assert {row["label"] for row in drawn} >= {"model_a · Naive", "model_b · Norm-informed"}
    git("add", "-A", cwd=repo_copy)
    git("commit", "-qm", "first run", cwd=repo_copy)

    put(verdicts.with_columns(complies=pl.lit(True)))
    run_dvc("repro", "--single-item", "aggregate", "audit", "plot", cwd=repo_copy)
    diff = json.loads(run_dvc("metrics", "diff", "--json", cwd=repo_copy).stdout)
    changed = diff["reports/metrics.json"]["lexicon.models.model_a.naive.acc_at_k"]
    assert (changed["old"], changed["new"]) == (50.0, 100.0)
    plot_diff = json.loads(run_dvc("plots", "diff", "--json", cwd=repo_copy).stdout)
    accuracy = plot_diff["data"]["reports/figures/fig2_accuracy.csv"][0]
    assert set(accuracy["revisions"]) == {"HEAD", "workspace"}


@pytest.mark.slow
def test_the_stage_without_aggregate_outputs_says_what_to_run(workdir: Path) -> None:
    done = run_stage(
        "plot",
        f"paths.reports_dir={workdir / 'reports'}",
        f"paths.figures_dir={workdir / 'reports' / 'figures'}",
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "run the aggregate stage first" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (workdir / "reports").exists()


# -- what a figure says it rests on, and how it reads ---------------------------------------


def test_every_figure_says_n_k_and_that_a_subset_is_one(
    drawn: tuple[Reports, list[Figure]],
) -> None:
    for figure in drawn[1]:  # a full run: N and K, no warning
        text = svg_text(figure.svg)
        assert "N = 6 scenarios, K = 3 trials each" in text, figure.name
        assert "SUBSET" not in text
    subset = "6 of 44 scenarios (limit 6 stratified by norm, seed 0)"
    for figure in draw_figures(drawn[0], subset=subset):
        text = svg_text(figure.svg)
        assert f"SUBSET: {subset}, not the whole dataset" in text, figure.name
        assert "N = 6 scenarios, K = 3 trials each" in text, figure.name


def test_a_test_double_and_a_judges_label_are_named_in_every_figure() -> None:
    presentation = Presentation(
        model_labels={"model_a": "Model A", "model_b": "Served [TEST DOUBLE]"},
        judge_labels={"lexicon": "Lexicon rules (offline)"},
    )
    reports = aggregate(run(), scenario_frame(), bootstrap=BOOTSTRAP, presentation=presentation)
    for figure in draw_figures(reports):
        text = svg_text(figure.svg)
        assert "judge: Lexicon rules (offline) (lexicon-model)" in text, figure.name
        assert "Served [TEST DOUBLE]" in text, figure.name


def heatmap_of(scenarios: int) -> Figure:
    ids = [f"event_{i % 4}__norm_{i}" for i in range(scenarios)]
    frame = pl.DataFrame(
        {
            "scenario_id": ids,
            "event_type": [sid.split("__")[0] for sid in ids],
            "norm_id": [sid.split("__")[1] for sid in ids],
            "source": ["test"] * scenarios,
        }
    )
    labels = {
        ("lexicon", "model_a", c): [
            [(i + t + k) % 3 > 0 for t in range(3)] for i in range(scenarios)
        ]
        for k, c in enumerate(COUNTS)
    }
    reports = aggregate(verdict_table(labels, frame), frame, bootstrap=BOOTSTRAP)
    (heatmap,) = [f for f in draw_figures(reports) if f.name == "heatmap_lexicon"]
    return heatmap


def drawn_boxes(svg: str) -> dict[str, tuple[float, float]]:
    """Width and height (points) of the heatmap's image and of the colour bar's gradient."""
    root = ET.fromstring(svg)
    images = [
        (float(e.get("width", 0)), float(e.get("height", 0)))
        for e in root.iter("{http://www.w3.org/2000/svg}image")
    ]
    # The panel's cells are the tallest image; the colour bar is one flat, wide image.
    cells = max(images, key=lambda wh: wh[1])
    bar = min(images, key=lambda wh: wh[1])
    return {"cells": cells, "bar": bar}


def test_the_heatmap_reads_the_same_at_5_scenarios_as_at_44() -> None:
    small, large = drawn_boxes(heatmap_of(5).svg), drawn_boxes(heatmap_of(44).svg)
    # A cell is a cell at any size (not a strip): the same height per scenario...
    assert small["cells"][1] / 5 == pytest.approx(large["cells"][1] / 44, rel=0.02)
    # ... and wider than tall, but not by much (three conditions: 3 columns).
    width, height = small["cells"][0] / 3, small["cells"][1] / 5
    assert 1.2 < width / height < 3
    # A real colour bar: at least 3 inches (216 points) wide, whatever the panel's size.
    for boxes in (small, large):
        assert boxes["bar"][0] >= 216 and boxes["bar"][1] >= 8


def test_figure_2s_legend_covers_no_bar_or_interval(drawn: tuple[Reports, list[Figure]]) -> None:
    results = drawn[0]["results.csv"]
    figure = MplFigure()
    with matplotlib.rc_context(STYLE):
        figure = _accuracy(results, _judges(results), "3")
        figure.canvas.draw()
    for ax in figure.axes:
        legend = ax.get_legend().get_window_extent()
        assert not legend.overlaps(ax.get_window_extent()), "the legend is over the panel"


def font_sizes(svg: str) -> list[float]:
    """Every text's size in the SVG's own units (points: matplotlib sizes the SVG in pt)."""
    return [float(size) for size in re.findall(r"font(?:-size)?:\s*(?:[a-z]+\s+)*([\d.]+)px", svg)]


def test_a_heatmaps_smallest_text_reads_at_10_px_or_more() -> None:
    # The report shows a heatmap at its own size (full_size), where 1 pt is 4/3 px. At 5
    # scenarios with three judges, one image held them all, shown at about 38%: labels of
    # about 5 px (issue 30).
    heatmap = heatmap_of(5)
    root = ET.fromstring(heatmap.svg)
    assert root.get("width", "").endswith("pt")
    sizes = font_sizes(heatmap.svg)
    assert len(sizes) > 10
    assert min(sizes) * 4 / 3 >= 10
    assert heatmap.full_size


def test_past_the_labelled_rows_a_heatmap_names_its_count_instead_of_each_scenario() -> None:
    many = LABELLED_ROWS + 1
    text = svg_text(heatmap_of(many).svg)
    assert f"{many} scenarios" in text
    assert "event_0__norm_0" not in text and "event_1__norm_1" not in text
    assert "event_0__norm_0" in svg_text(heatmap_of(5).svg)  # a few are named one by one
