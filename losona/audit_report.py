"""The HTML report's "Judge audit" section, from the audit stage's tables (losona/audit.py).

plot passes `audit_section(...)` to `build_report(..., extra=[...])`. Every value from a
file is escaped; the tables use the report's own styles.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

import polars as pl

from losona.aggregate import Reports
from losona.audit import Audit
from losona.metrics import BASELINE_CONDITION
from losona.report import Section, _table


def audit_section(result: Audit, reports: Reports) -> Section:
    """The HTML report's "Judge audit" section: judges, people, determinism, controls."""
    results = reports["results.csv"]
    names = dict(results.select("subject_model", "model_label").iter_rows())
    names |= dict(results.select("condition", "condition_label").iter_rows())
    body = (
        _pairs_html(result, names)
        + _human_html(result)
        + _determinism_html(result)
        + _controls_html(result)
    )
    return Section("audit", "Judge audit", body)


def _num(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _share(part: int, whole: int) -> str:
    return f"{part}/{whole}"


def _of(part: int, whole: int) -> str:
    return str(part) if part == whole else f"{part} <small>of {whole}</small>"


def _note(text: str) -> str:
    return f'<p class="note">{text}</p>'


def _pairs_html(result: Audit, names: Mapping[str, str]) -> str:
    pairs = result["judge_pairs.csv"]
    heading = "<h3>Judge against judge</h3>"
    if pairs.is_empty():
        return (
            f"{heading}<p>One judge in this run: add a second judge to "
            "<code>sweep.judges</code> (params.yaml) to see how far two judges agree.</p>"
        )
    parts = [heading]
    rows = [
        [
            f"{escape(r['judge_a'])} vs {escape(r['judge_b'])}",
            str(r["both_scored"]),
            _num(r["agreement"]),
            _num(r["kappa"], 3),
            _num(r["a_compliance"]),
            _num(r["b_compliance"]),
            str(r["a_yes_b_no"]),
            str(r["a_no_b_yes"]),
            f"{r['only_a']} / {r['only_b']}",
            f"{r['unscored_a']} / {r['unscored_b']}",
        ]
        for r in pairs.iter_rows(named=True)
    ]
    parts.append(
        _table(
            [
                "A vs B",
                "Both scored",
                "Agreement %",
                "Cohen's κ",
                "A complies %",
                "B complies %",
                "A yes, B no",
                "A no, B yes",
                "Only in A / B",
                "Unscored by A / B",
            ],
            rows,
            numeric=set(range(1, 10)),
        )
    )
    parts.append(
        _note(
            "Computed on the responses both judges scored. Taking B as the reference, "
            "<i>A yes, B no</i> are A's apparent false positives and <i>A no, B yes</i> its "
            "apparent false negatives (the other way round taking A as the reference). "
            "Responses only one judge has a verdict for, and unscored ones, are counted and "
            "left out."
        )
    )
    stability = result["headline_stability.csv"]
    for (a, b), rows_ab in stability.group_by("judge_a", "judge_b", maintain_order=True):
        same = rows_ab["same"].drop_nulls()
        differing = rows_ab.filter(pl.col("same").not_())
        lines = [
            [
                escape(names.get(r["subject_model"], r["subject_model"])),
                escape(
                    r["check"]
                    if r["condition"] is None
                    else f"{r['check']}: {names.get(r['condition'], r['condition'])}"
                ),
                escape(_condition_names(r["a"], names)),
                escape(_condition_names(r["b"], names)),
                {True: "same", False: "<b>differs</b>", None: "n/a"}[r["same"]],
            ]
            for r in rows_ab.iter_rows(named=True)
        ]
        parts.append(
            f"<p><b>Headline comparisons, {escape(str(a))} vs {escape(str(b))}:</b> "
            f"{int(same.sum())} of {same.len()} come out the same under both judges "
            f"({differing.height} differ).</p>"
            '<details class="ids"><summary>Every comparison</summary>'
            + _table(["Model", "Comparison", str(a), str(b), ""], lines)
            + "</details>"
        )
    parts.append(
        _note(
            "Best condition: the condition with the highest accuracy-at-K for the model "
            "(ties joined by =). Effect vs naive: the sign of the paired effect against "
            f"{escape(BASELINE_CONDITION)}, in points."
        )
    )
    breakdown = result["judge_pair_breakdown.csv"]
    for (a, b), rows_ab in breakdown.group_by("judge_a", "judge_b", maintain_order=True):
        tables = []
        for by, title, header in (
            ("subject_model", "By model", "Model"),
            ("condition", "By condition", "Condition"),
            ("norm_id", "By norm", "Norm"),
        ):
            part = rows_ab.filter(pl.col("by") == by)
            tables.append(
                f"<h4>{title}</h4>"
                + _table(
                    [
                        header,
                        "Both scored",
                        "Agreement %",
                        "Cohen's κ",
                        "A complies %",
                        "B complies %",
                    ],
                    [
                        [
                            escape(names.get(r["group"], r["group"]))
                            if by != "norm_id"
                            else f"<code>{escape(r['group'])}</code>",
                            str(r["both_scored"]),
                            _num(r["agreement"]),
                            _num(r["kappa"], 3),
                            _num(r["a_compliance"]),
                            _num(r["b_compliance"]),
                        ]
                        for r in part.iter_rows(named=True)
                    ],
                    numeric={1, 2, 3, 4, 5},
                )
            )
        parts.append(
            f'<details class="ids"><summary>Agreement of {escape(str(a))} and {escape(str(b))} '
            "by model, condition and norm</summary>" + "".join(tables) + "</details>"
        )
    return "".join(parts)


def _condition_names(value: str, names: Mapping[str, str]) -> str:
    return " = ".join(names.get(part, part) for part in value.split(" = "))


def _human_html(result: Audit) -> str:
    parts = ["<h3>Judge against people</h3>"]
    counts = result.metrics["labels"]
    human = result["human_agreement.csv"]
    if not counts["sheet_items"]:
        parts.append(
            "<p>No labelling sheet yet. Export one with <code>python stages/audit.py "
            "audit.export=true</code>, have people label it, save the labels as "
            "<code>data/labels/human.csv</code> and rerun (README, Auditing the judge).</p>"
        )
        return "".join(parts)
    if human.is_empty():
        parts.append(
            f"<p>A labelling sheet of {counts['sheet_items']} responses is waiting for its "
            "labels (<code>data/labels/sheet.html</code>); save them as "
            "<code>data/labels/human.csv</code> and rerun.</p>"
        )
        return "".join(parts)
    rows = [
        [
            escape(r["judge"]),
            f"{r['scored']}"
            + (f" <small>of {r['items']}</small>" if r["scored"] < r["items"] else ""),
            f"{_num(r['agreement'])} [{_num(r['agreement_low'])}, {_num(r['agreement_high'])}]",
            _num(r["kappa"], 3),
            _num(r["human_compliance"]),
            _num(r["judge_compliance"]),
            str(r["false_positives"]),
            str(r["false_negatives"]),
        ]
        for r in human.iter_rows(named=True)
    ]
    level = f"{result.metrics['settings']['confidence']:g}%"
    parts.append(
        _table(
            [
                "Judge",
                "Items",
                f"Agreement % ({level} CI)",
                "Cohen's κ",
                "People: complies %",
                "Judge: complies %",
                "Apparent false positives",
                "Apparent false negatives",
            ],
            rows,
            numeric=set(range(1, 8)),
        )
    )
    parts.append(
        _note(
            f"{counts['labelled']} responses labelled by people, blind to the judges' verdicts "
            "and to the model and condition. A false positive: the judge says complies, people "
            "say breach; a false negative the reverse. The interval resamples the labelled "
            "items. Items a judge did not score are left out of its row."
        )
    )
    items = result["human_items.csv"].filter(pl.col("agree").not_())
    if not items.is_empty():
        lines = [
            [
                f"<code>{escape(r['item_id'])}</code>",
                escape(r["judge"]),
                f"<code>{escape(r['scenario_id'])}</code>",
                escape(f"{r['subject_model']} / {r['condition']} / trial {r['trial']}"),
                "complies" if r["human"] else "breach",
                "complies" if r["judge_complies"] else "breach",
            ]
            for r in items.iter_rows(named=True)
        ]
        parts.append(
            f'<details class="ids"><summary>The {items.height} disagreements</summary>'
            + _table(["Item", "Judge", "Scenario", "Model / condition", "People", "Judge"], lines)
            + "</details>"
        )
    return "".join(parts)


def _determinism_html(result: Audit) -> str:
    parts = ["<h3>Judge determinism</h3>"]
    stable = result["determinism.csv"]
    rows = []
    for r in stable.iter_rows(named=True):
        if r["method"] == "re-judged":
            outcome = (
                f"{r['flipped_items']} of {r['items']} items flipped ({_num(r['flip_rate'])}%) "
                f"over {r['repeats']} repeats; {r['changed_judgements']} changed verdicts, "
                f"{r['unscored_judgements']} unscored"
            )
        elif r["method"] == "rules":
            outcome = "deterministic by construction (rules, no model): not re-judged"
        else:
            outcome = "not run (<code>audit.determinism.repeats</code> is 0)"
        rows.append([escape(r["judge"]), escape(r["judge_model"]), outcome])
    parts.append(_table(["Judge", "Model", "Re-judged with the cache bypassed"], rows))
    flips = result["determinism_flips.csv"]
    if not flips.is_empty():
        lines = [
            [
                escape(r["judge"]),
                f"<code>{escape(r['scenario_id'])}</code>",
                escape(f"{r['subject_model']} / {r['condition']} / trial {r['trial']}"),
                escape(r["original"]),
                escape(r["repeats"]),
            ]
            for r in flips.iter_rows(named=True)
        ]
        parts.append(
            f'<details class="ids"><summary>The {flips.height} items that flipped</summary>'
            + _table(["Judge", "Scenario", "Model / condition", "Verdict", "Re-judged"], lines)
            + "</details>"
        )
    parts.append(
        _note(
            "A seeded subset of each LLM judge's verdicts judged again, each time with fresh "
            "calls (the call cache bypassed). An item flips when its scored verdicts are not "
            "all the same. Opt-in, since it pays for the calls again: "
            "<code>audit.determinism.repeats=3</code>."
        )
    )
    return "".join(parts)


def _controls_html(result: Audit) -> str:
    controls = result["controls.csv"]
    by_judge: dict[str, dict[str, dict[str, Any]]] = {}
    for r in controls.iter_rows(named=True):
        by_judge.setdefault(r["judge"], {})[r["example"]] = r
    rows = [
        [
            escape(judge),
            escape(kinds["all"]["judge_model"]),
            *(
                f"{_share(kinds[k]['right'], kinds[k]['items'])} "
                f"<small>({_num(kinds[k]['accuracy'])})</small>"
                for k in ("all", "compliant", "breaching")
            ),
            str(kinds["all"]["unscored"]),
        ]
        for judge, kinds in by_judge.items()
    ]
    parts = [
        "<h3>Validity controls</h3>",
        _table(
            ["Judge", "Model", "Right", "Compliant examples", "Breaching examples", "Unscored"],
            rows,
            numeric={2, 3, 4, 5},
        ),
    ]
    misses = result["control_misses.csv"]
    if not misses.is_empty():
        lines = [
            [
                escape(r["judge"]),
                f"<code>{escape(r['scenario_id'])}</code>",
                escape(r["example"]),
                escape(r["response"]),
                escape(r["verdict"]),
                f'<span class="reason">{escape(r["reasoning"] or "")}</span>',
            ]
            for r in misses.iter_rows(named=True)
        ]
        parts.append(
            f'<details class="ids"><summary>The {misses.height} controls judged wrong or '
            "not scored</summary>"
            + _table(["Judge", "Scenario", "Example", "Response", "Verdict", "Reasoning"], lines)
            + "</details>"
        )
    parts.append(
        _note(
            "Each judge scores every scenario's example compliant and breaching response, "
            "whose right answer is known (the judge_controls stage). A judge that gets these "
            "wrong is broken, whatever its agreement figures say."
        )
    )
    return "".join(parts)
