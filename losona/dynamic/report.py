"""The HTML report's "Dynamic second turn" section, from dynamic_aggregate's files; plot
adds it only when the extension is on."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from losona.core.errors import LosonaError
from losona.core.files import display_path
from losona.core.formatting import number, signed
from losona.core.layout import RunLayout
from losona.dynamic.aggregate import DYNAMIC_FILES, FIGURE
from losona.dynamic.arms import ARMS, FIRST_TURN_UNSCORED
from losona.dynamic.plots import scope
from losona.figures import svg_data_uri
from losona.pages import Section, section
from losona.results.bundle import ReportBundle
from losona.results.table1 import judge_heading, subset_warning

METRIC_LABELS = {
    "recovery_after_sanction": "Recovery after sanction",
    "recovery_after_control": "Recovery after control",
    "sanction_effect": "Sanction effect (points)",
    "retention": "Retention",
}


def read_judges(layout: RunLayout, judges: Sequence[str]) -> dict[str, tuple[ReportBundle, str]]:
    """Each judge's dynamic reports and its figure's SVG (dynamic_aggregate's)."""
    found = {}
    for judge in judges:
        root = layout.dynamic_reports(judge)
        reports = ReportBundle.read(root, DYNAMIC_FILES)
        svg = root / f"{FIGURE}.svg"
        if not svg.is_file():
            raise LosonaError(f"{display_path(svg)} not found: rerun dynamic_aggregate (dvc repro)")
        found[judge] = (reports, svg.read_text(encoding="utf-8"))
    return found


def dynamic_section(
    judges: Mapping[str, tuple[ReportBundle, str]], level: str, subset: str | None
) -> Section:
    """The section: per judge, the metrics, the arms' counts, the figure and a few pairs;
    `subset` (losona.core.contracts.subset_note) when the run covers part of its dataset."""
    return section(
        "dynamic",
        "Dynamic second turn",
        "report/dynamic.html",
        judges=[judge_data(judge, reports, svg) for judge, (reports, svg) in judges.items()],
        level=level,
        subset=None if subset is None else subset_warning(subset),
    )


def _cell(row: Mapping[str, Any]) -> dict[str, Any]:
    effect = row["metric"] == "sanction_effect"
    value = signed(row["estimate"]) if effect else number(row["estimate"])
    interval = "" if row["low"] is None else f" [{number(row['low'])}, {number(row['high'])}]"
    if effect:
        basis = f"{row['helped']} helped, {row['hurt']} hurt of {row['out_of']}"
        if row["mcnemar_p"] is not None:
            basis += f"; p {row['mcnemar_p']:.3g}"
    else:
        basis = f"{row['count']}/{row['out_of']}"
    return {"value": value + interval, "basis": basis}


def judge_data(judge: str, reports: ReportBundle, svg: str) -> dict[str, Any]:
    """One judge's part of the section, as plain values."""
    results = reports["results.csv"]
    settings = reports.metrics["settings"]
    # Named as every other table names it: by the label results.csv carries.
    first = results.row(0, named=True) if results.height else None
    heading = (
        judge if first is None else judge_heading(judge, first["judge_label"], first["judge_model"])
    )
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    for row in results.iter_rows(named=True):
        key = (row["subject_model"], row["condition"])
        labels = {"model": row["model_label"], "condition": row["condition_label"]}
        cell = cells.setdefault(key, {**labels, "trial": {}, "scenario": {}})
        cell[row["level"]][row["metric"]] = _cell(row)

    arms: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for row in reports["arms.csv"].iter_rows(named=True):
        arms.setdefault((row["subject_model"], row["condition"]), {})[row["arm"]] = row
    for key, cell in cells.items():
        counts = arms.get(key, {})
        cell["arms"] = [
            {"arm": arm}
            | {k: counts[arm][k] for k in ("trials", "continued", "left_out", "scored")}
            for arm in (*ARMS, FIRST_TURN_UNSCORED)
            if arm in counts
        ]
    return {
        "judge": heading,
        # The scope line's N and K; its subset warning is the section's, said once above.
        "scope": scope(results, None),
        "followup_sources": settings.get("followup_sources", []),
        "elicitor_sources": settings.get("elicitor_sources", []),
        "metrics": list(METRIC_LABELS.items()),
        "cells": list(cells.values()),
        "figure": svg_data_uri(svg),
        "examples": list(reports["examples.csv"].iter_rows(named=True)),
    }
