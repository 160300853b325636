"""The plot stage as a function: the paper's figures and the self-contained HTML report."""

from __future__ import annotations

from losona.audit.files import read_audit
from losona.core.contracts import SCENARIO_SCHEMA, subset_note
from losona.core.files import read_parquet, write_text
from losona.core.layout import RunLayout
from losona.dynamic.report import dynamic_section, read_judges
from losona.dynamic.settings import DynamicSettings
from losona.figures import write_figures
from losona.judges.verdicts import load_verdicts
from losona.pipeline.command import Cell, Settings
from losona.report.audit_section import audit_section
from losona.report.index import build_report
from losona.report.plots import draw_figures
from losona.report.run_facts import cell_calls, display_names, facts_section
from losona.results.aggregate import read_reports


def run_plot(layout: RunLayout, dynamic: DynamicSettings) -> None:
    """plot: the figures and the report page, from aggregate's tables, the audit's, each
    cell's calls and, when the dynamic turn is on, its reports."""
    reports = read_reports(layout.reports_folder)
    verdicts = load_verdicts(layout.verdicts_folder)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    audited = read_audit(layout.audit_folder)
    # The calls each cell's table was built from: facts a rerun does not change, unlike
    # the run logs' (losona/report/run_facts.py).
    facts = facts_section(cell_calls(layout.calls_folder), display_names(reports["results.csv"]))
    extra = [audit_section(audited, reports), facts]
    subset = subset_note(scenarios)
    if dynamic.on:  # off: not a byte of the report changes (docs/dynamic.md)
        judges = read_judges(layout, dynamic.judges)
        extra.insert(0, dynamic_section(judges, reports.confidence, subset))
    figures = draw_figures(reports, subset=subset)
    write_figures(figures, layout.figures_folder)
    page = build_report(
        reports,
        figures,
        verdicts,
        scenarios,
        extra=extra,
        controls=audited["controls.csv"],
        correction=audited["correction.csv"],
    )
    write_text(page, layout.report_page)
    print(
        f"plot: {len(figures)} figures -> {layout.figures_folder}/, report -> {layout.report_page}"
    )


CELL: dict[str, str] = {}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_plot(layout, settings.group("dynamic"))
