"""reports/index.html: one self-contained page from the numbers down to every chat, which
opens offline. Each function here computes the data of one `Section`; its template
(losona/pages/templates/report/) lays it out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import polars as pl

from losona.core.contracts import scenarios_from_table, subset_note
from losona.core.formatting import counted, is_test_double, number, signed
from losona.figures import Figure, k_label, svg_data_uri
from losona.judges.verdicts import CELL, cell_of
from losona.pages import Section, fragment, render_page, section
from losona.report.plots import no_pairs
from losona.results.aggregate import Reports
from losona.results.metrics import BASELINE_CONDITION, UNSCORED_POLICY
from losona.results.table1 import judge_heading, subset_warning


def build_report(
    reports: Reports,
    figures: Sequence[Figure],
    verdicts: pl.DataFrame,
    scenarios: pl.DataFrame,
    extra: Sequence[Section] = (),
    controls: pl.DataFrame | None = None,
    correction: pl.DataFrame | None = None,
) -> str:
    """The whole page; `controls` and `correction` are the audit's, for the judges' summary."""
    view = _View(reports, verdicts, scenarios)
    sections = [
        results_section(reports),
        judges_section(reports, controls, correction),
        figures_section(figures),
        effects_section(reports),
        *extra,
        casebook_section(view),
        breakdown_section(reports),
        browser_section(view),
    ]
    summary = fragment("report/summary.html", **summary_data(reports, subset_note(scenarios)))
    return render_page("LoSoNA report", summary, sections)


# -- the numbers ---------------------------------------------------------------------------


def summary_data(reports: Reports, subset: str | None) -> dict[str, Any]:
    """What the run covers, for the line under the title; `subset` when it is a subset."""
    results = reports["results.csv"]
    outcomes = reports["outcomes.csv"]
    shown = results.select("judge", "judge_label", "judge_model").unique(maintain_order=True)
    labels = [*shown["judge_label"], *results["model_label"].unique(maintain_order=True)]
    return {
        "judges": [judge_heading(*row) for row in shown.rows()],
        "test_doubles": [label for label in labels if is_test_double(label)],
        "scenarios": counted(outcomes["scenario_id"].n_unique(), "scenario"),
        "models": counted(results["subject_model"].n_unique(), "model"),
        "conditions": counted(results["condition"].n_unique(), "prompt condition"),
        "ks": ", ".join(map(str, sorted(set(results["k"].to_list())))),
        "unscored": results["unscored_trials"].sum(),
        "trials": results["trials"].sum(),
        "undetermined": results["undetermined"].sum(),
        "subset": None if subset is None else subset_warning(subset),
    }


def results_section(reports: Reports) -> Section:
    """Table 1 in the paper's layout: per judge, each model x condition's row, then the means
    over models, and the unscored policy."""
    results, means = reports["results.csv"], reports["means.csv"]
    tables = []
    for (judge,), rows in results.group_by("judge", maintain_order=True):
        several_models = rows["subject_model"].n_unique() > 1  # one model is its own mean
        tables.append(
            {
                "judge": judge_heading(str(judge), rows["judge_label"][0], rows["judge_model"][0]),
                # At K = 1 every scenario's one trial agrees with itself: a column of 100.0
                # would say nothing, so the table leaves it out (the note says why).
                "consistency": (rows["k"] > 1).any(),
                "rows": [
                    {
                        "model": r["model_label"],
                        "condition": r["condition_label"],
                        "acc": _acc(r),
                        "undetermined": r["undetermined"],
                        "compliance": number(r["compliance"]),
                        "consistency": _consistency(r),
                        "non_answers": number(r["non_answer_share"]),
                    }
                    for r in rows.iter_rows(named=True)
                ],
                "degenerate": [
                    {"model": r["model_label"], "condition": r["condition_label"], "why": why}
                    for r in rows.iter_rows(named=True)
                    if (why := r["degenerate"]) is not None
                ],
                "means": [
                    {
                        "condition": r["condition_label"],
                        "acc": _acc(r),
                        "compliance": number(r["compliance"]),
                        "consistency": number(r["consistency"]),
                    }
                    for r in means.filter(pl.col("judge") == judge).iter_rows(named=True)
                    if several_models
                ],
            }
        )
    return section(
        "results",
        "Results (Table 1)",
        "report/results.html",
        tables=tables,
        k=k_label(results),
        level=reports.confidence,
        policy=UNSCORED_POLICY,
    )


def judges_section(
    reports: Reports, controls: pl.DataFrame | None = None, correction: pl.DataFrame | None = None
) -> Section:
    """Each judge once, in the reports' order: its label (a test double marked), what it is,
    its validity controls, its degenerate cells and the basis of its corrected compliance."""
    results = reports["results.csv"]
    corrections = {
        r["judge"]: r
        for r in (correction if correction is not None else pl.DataFrame()).iter_rows(named=True)
    }
    by_example: dict[str, dict[str, Mapping[str, Any]]] = defaultdict(dict)
    for r in (controls if controls is not None else pl.DataFrame()).iter_rows(named=True):
        by_example[r["judge"]][r["example"]] = r

    def right(judge: str, example: str) -> str | None:
        row = by_example[judge].get(example)
        return None if row is None else f"{row['right']}/{row['items']}"

    rows = []
    for judge, label, judge_model in (
        results.select("judge", "judge_label", "judge_model").unique(maintain_order=True).rows()
    ):
        every = by_example[judge].get("all")
        rows.append(
            {
                "label": label,
                "name": judge,
                "model": judge_model,
                "test_double": is_test_double(label),
                "compliant": right(judge, "compliant"),
                "breaching": right(judge, "breaching"),
                "accuracy": None if every is None else number(every["accuracy"]),
                "unscored": None if every is None else every["unscored"],
                "degenerate": [
                    f"{r['model_label']} / {r['condition_label']}: {r['degenerate']}"
                    for r in results.filter(pl.col("judge") == judge).iter_rows(named=True)
                    if r["degenerate"] is not None
                ],
                "correction": _correction_basis(corrections.get(judge)),
            }
        )
    return section("judges", "Judges", "report/judges.html", judges=rows)


def _correction_basis(row: Mapping[str, Any] | None) -> str | None:
    """What a judge's compliance was corrected with, or why not; None without labels."""
    if row is None:
        return None
    if not row["identifiable"]:
        return f"not corrected: {row['status']}"
    return (
        f"corrected (under Judge audit) from {row['labelled']} labelled items: sensitivity "
        f"{number(row['sensitivity'])}, specificity {number(row['specificity'])}"
    )


def figures_section(figures: Sequence[Figure]) -> Section:
    """Every figure, embedded as SVG, with its caption; a full-size one scrolls, unshrunk."""
    shown = [
        {
            "name": f.name,
            "caption": f.caption,
            "full_size": f.full_size,
            "src": svg_data_uri(f.svg),
        }
        for f in figures
    ]
    return section("figures", "Figures", "report/figures.html", figures=shown)


def effects_section(reports: Reports) -> Section:
    """Paired effects against naive: delta with interval, McNemar test, scenarios that flip."""

    ids: defaultdict[tuple[str, ...], list[str]] = defaultdict(list)
    for r in reports["flips.csv"].iter_rows(named=True):
        ids[(*cell_of(r), r["flip"])].append(r["scenario_id"])

    def flips(r: Mapping[str, Any], flip: str, out_of: str) -> dict[str, Any]:
        linked = [{"id": s, "anchor": _anchor(s)} for s in ids[(*cell_of(r), flip)]]
        return {"count": r[flip], "out_of": r[out_of], "scenarios": linked}

    judges = dict(reports["results.csv"].select("judge", "judge_label").iter_rows())
    rows = [
        {
            "judge": judges.get(r["judge"], r["judge"]),
            "model": r["model_label"],
            "condition": r["condition_label"],
            "delta": f"{signed(r['delta'])} [{number(r['delta_low'])}, {number(r['delta_high'])}]",
            "p": _p(r["mcnemar_p"]),
            "recovered": flips(r, "recovered", "naive_failures"),
            "regressed": flips(r, "regressed", "naive_successes"),
            "scenarios": r["scenarios"],
        }
        for r in reports["deltas.csv"].iter_rows(named=True)
    ]
    return section(
        "effects",
        "Paired effects against Naive" if rows else "Paired effects",
        "report/effects.html",
        rows=rows,
        level=reports.confidence,
        no_pairs=no_pairs(reports["results.csv"]["condition"]),
    )


def breakdown_section(reports: Reports) -> Section:
    """By norm, then by event, per judge: scenarios passing, pooled over models (diagnostic)."""
    labels = dict(reports["results.csv"].select("condition", "condition_label").iter_rows())
    judges = dict(reports["results.csv"].select("judge", "judge_label").iter_rows())
    tables = []
    for name, by, title in (
        ("by_norm.csv", "norm_id", "By norm"),
        ("by_event.csv", "event_type", "By event"),
    ):
        for (judge,), rows in reports[name].group_by("judge", maintain_order=True):
            pooled = rows.group_by(by, "condition", maintain_order=True).agg(
                pl.col("passed").sum(), pl.col("scenarios").sum()
            )
            conditions = rows["condition"].unique(maintain_order=True).to_list()
            cells = {(r[by], r["condition"]): r for r in pooled.iter_rows(named=True)}
            tables.append(
                {
                    "title": title,
                    "judge": judges.get(str(judge), str(judge)),
                    "by": by,
                    "conditions": [labels.get(c, c) for c in conditions],
                    "rows": [
                        {
                            "group": group,
                            "cells": [_pooled(cells.get((group, c))) for c in conditions],
                        }
                        for group in sorted(set(rows[by].to_list()))
                    ],
                }
            )
    title = "By norm and by event (diagnostic)"
    return section("breakdowns", title, "report/breakdowns.html", tables=tables)


def _pooled(row: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if row is None or not row["scenarios"]:
        return None
    share = 100 * row["passed"] / row["scenarios"]
    return {"passed": row["passed"], "scenarios": row["scenarios"], "share": f"{share:.1f}"}


# -- the chats -----------------------------------------------------------------------------


class _View:
    """Verdicts and scenarios indexed for the casebook and the browser."""

    def __init__(self, reports: Reports, verdicts: pl.DataFrame, scenarios: pl.DataFrame):
        self.reports = reports
        results = reports["results.csv"]
        self.model_label = dict(results.select("subject_model", "model_label").iter_rows())
        self.condition_label = dict(results.select("condition", "condition_label").iter_rows())
        self.judge_label = dict(results.select("judge", "judge_label").iter_rows())
        self.scenarios = {s.scenario_id: s for s in scenarios_from_table(scenarios)}
        cells = results.select(CELL).iter_rows()
        order = {cell: i for i, cell in enumerate(cells)}
        self.verdicts: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in verdicts.iter_rows(named=True):
            self.verdicts[row["scenario_id"]].append(row)
        for rows in self.verdicts.values():
            rows.sort(key=lambda r: (order.get(cell_of(r), 0), r["trial"]))
        self.several_judges = results["judge"].n_unique() > 1

    def responses(self, rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Verdict rows as the responses tables show them, with model and condition labels."""
        return [
            {
                "judge": self.judge_label.get(v["judge"], v["judge"]),
                "model": self.model_label.get(v["subject_model"], v["subject_model"]),
                "condition": self.condition_label.get(v["condition"], v["condition"]),
                "trial": v["trial"],
                "complies": v["complies"],
                "status": v["judge_status"],
                "response": v["response"],
                "reasoning": v["reasoning"],
            }
            for v in rows
        ]


def casebook_section(view: _View) -> Section:
    """Every introduced regression: the scenario, then the naive trials beside the prompted."""
    regressions = view.reports["flips.csv"].filter(pl.col("flip") == "regressed")
    cases = []
    for flip in regressions.iter_rows(named=True):
        columns = []
        for condition, complying, scored in (
            (BASELINE_CONDITION, flip["naive_complying"], flip["naive_scored"]),
            (flip["condition"], flip["condition_complying"], flip["condition_scored"]),
        ):
            cell = (flip["judge"], flip["subject_model"], condition)
            trials = [v for v in view.verdicts[flip["scenario_id"]] if cell_of(v) == cell]
            columns.append(
                {
                    "label": view.condition_label.get(condition, condition),
                    "complying": complying,
                    "scored": scored,
                    "trials": view.responses(trials),
                }
            )
        cases.append(
            {
                "model": view.model_label.get(flip["subject_model"], flip["subject_model"]),
                "condition": view.condition_label.get(flip["condition"], flip["condition"]),
                "judge": view.judge_label.get(flip["judge"], flip["judge"])
                if view.several_judges
                else None,
                "scenario": view.scenarios[flip["scenario_id"]],
                "anchor": _anchor(flip["scenario_id"]),
                "naive_complying": flip["naive_complying"],
                "naive_scored": flip["naive_scored"],
                "condition_complying": flip["condition_complying"],
                "condition_scored": flip["condition_scored"],
                "columns": columns,
            }
        )
    return section("casebook", "Regressions casebook", "report/casebook.html", cases=cases)


def browser_section(view: _View) -> Section:
    """Every scenario in id order: its chat, hidden norm, how often each judge passes it, and
    every response with its verdict and reasoning."""
    items = [
        {
            "scenario": view.scenarios[sid],
            "anchor": _anchor(sid),
            "passes": passes,
            "responses": view.responses(view.verdicts[sid]),
        }
        for sid, passes in scenario_passes(view.reports, sorted(view.scenarios)).items()
    ]
    return section(
        "browser",
        "Scenario browser",
        "report/browser.html",
        items=items,
        judged=view.several_judges,
    )


def scenario_passes(
    reports: Reports, scenario_ids: Sequence[str]
) -> dict[str, list[dict[str, Any]]]:
    """Per scenario, per judge in the reports' order (never pooled: a test double's passes
    would count as the others'): its label, and in how many model x condition cells it passes
    out of how many."""
    judges = reports["results.csv"].select("judge", "judge_label").unique(maintain_order=True)
    counts = {
        (sid, judge): (passed, cells)
        for sid, judge, passed, cells in reports["outcomes.csv"]
        .group_by("scenario_id", "judge")
        .agg(pl.col("passed").sum(), pl.len())
        .iter_rows()
    }
    return {
        sid: [
            {"judge": label, "passed": passed, "cells": cells}
            for judge, label in judges.iter_rows()
            for passed, cells in [counts.get((sid, judge), (0, 0))]
        ]
        for sid in scenario_ids
    }


# -- small helpers -----------------------------------------------------------------------------


def _anchor(scenario_id: str) -> str:
    return "s-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in scenario_id)


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def _consistency(row: Mapping[str, Any]) -> str:
    """A cell's consistency, or n/a for a cell of one trial per scenario (K = 1)."""
    return number(row["consistency"] if row["k"] > 1 else None)


def _acc(row: Mapping[str, Any]) -> str:
    if row["acc_low"] is None:
        return number(row["acc_at_k"])
    return f"{number(row['acc_at_k'])} [{number(row['acc_low'])}, {number(row['acc_high'])}]"
