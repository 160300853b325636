"""The stages after aggregate called in-process with the composed config, on a small run
judged in this process by the offline lexicon judge: the audit (and its labelling sheet),
plot and calls. Their scripts run under DVC in tests/test_plots.py,
tests/test_audit_pipeline.py and tests/test_models_published.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from omegaconf import DictConfig
from test_judge_stage import fetched, write_responses  # noqa: F401  (fetched: a fixture)

from losona.core.config import chosen, option, plain
from losona.core.contracts import CALL_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.core.layout import RunLayout
from losona.pipeline.aggregate import run_aggregate
from losona.pipeline.audit import run_audit, run_audit_export
from losona.pipeline.calls import run_calls
from losona.pipeline.judge import run_judge
from losona.pipeline.judge_controls import run_judge_controls
from losona.pipeline.plot import run_plot


@pytest.fixture
def aggregated(fetched: Path, make_cfg: Callable[..., DictConfig]) -> RunLayout:  # noqa: F811
    """One cell (smollm2, naive) judged by the lexicon judge, its controls, and aggregate."""
    write_responses(fetched)
    cfg = make_cfg("condition=naive")
    layout = RunLayout(chosen(cfg, "paths"))
    judge = chosen(cfg, "judge")
    run_judge(judge, layout, chosen(cfg, "model"), chosen(cfg, "condition"))
    run_judge_controls(judge, chosen(cfg, "judge_controls"), layout)
    run_aggregate(chosen(cfg, "aggregate"), layout, plain(cfg.sweep))
    return layout


def audit_in_process(make_cfg: Callable[..., DictConfig], *overrides: str) -> None:
    """What `python stages/audit.py ...` does, called in this process."""
    cfg = make_cfg(*overrides)
    settings, layout = chosen(cfg, "audit"), RunLayout(chosen(cfg, "paths"))
    if settings.export:
        run_audit_export(settings, layout, plain(cfg.sweep))
    else:
        run_audit(
            settings,
            layout,
            plain(cfg.sweep),
            chosen(cfg, "aggregate"),
            lambda name: option("judge", name),
        )


def test_the_audit_writes_its_tables_and_says_so(
    aggregated: RunLayout, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    audit_in_process(make_cfg)
    assert (aggregated.audit_folder / "metrics.json").is_file()
    assert (aggregated.audit_folder / "controls.csv").is_file()
    assert capsys.readouterr().out.endswith(f"audit -> {aggregated.audit_folder}/\n")


def test_the_audit_exports_a_labelling_sheet_and_nothing_else(
    aggregated: RunLayout, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    audit_in_process(make_cfg, "audit.export=true", "audit.sheet.items=30")
    assert aggregated.label_sheet.is_file() and aggregated.label_sheet_html.is_file()
    assert aggregated.label_key.is_file()
    assert not aggregated.audit_folder.exists()
    assert "audit: a labelling sheet of " in capsys.readouterr().out


def test_plot_draws_the_figures_and_the_report_from_the_audited_run(
    aggregated: RunLayout, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    audit_in_process(make_cfg)
    cfg = make_cfg()
    run_plot(RunLayout(chosen(cfg, "paths")), chosen(cfg, "dynamic"))
    page = aggregated.report_page.read_text(encoding="utf-8")
    assert "<html" in page.lower()
    # Each figure as PNG, SVG and the CSV of its data.
    drawn = len(list(aggregated.figures_folder.glob("*.png")))
    assert drawn == len(list(aggregated.figures_folder.glob("*.csv"))) > 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"plot: {drawn} figures -> {aggregated.figures_folder}/, report -> {aggregated.report_page}"
    )


def test_calls_merges_every_cells_calls_file_and_names_a_missing_one(
    aggregated: RunLayout, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = make_cfg()
    sweep, dynamic = plain(cfg.sweep), chosen(cfg, "dynamic")
    # The fixture's responses were written by hand, not sampled: no sample calls file yet.
    missing = aggregated.sample_calls("smollm2", "naive")
    with pytest.raises(LosonaError, match=re.escape(f"{missing} not found")):
        run_calls(aggregated, sweep, dynamic)
    write_parquet(pl.DataFrame(schema=CALL_SCHEMA), missing)
    run_calls(aggregated, sweep, dynamic)
    # The lexicon judge calls no model: three files (sample, judge, controls), no call.
    assert capsys.readouterr().out.splitlines()[-1] == (
        f"calls: 0 calls from 3 files -> {aggregated.calls}"
    )
    assert aggregated.calls is not None
    assert pl.read_parquet(aggregated.calls).schema == CALL_SCHEMA
