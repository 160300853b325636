"""reports/index.html: one self-contained page from the numbers down to every chat and response.

The page is a list of `Section`s (anchor, title, HTML body) with a table of contents.
A stage adds its own part by writing a function that returns a Section and passing it to
`build_report(..., extra=[...])`; extra sections appear after the paired effects, before
the casebook and the scenario browser. Figures are embedded as data URIs and the styles
are inline, so the file opens offline and can be mailed or archived as it is. No script.
"""

from __future__ import annotations

import base64
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

import polars as pl

from losona.aggregate import Reports, subset_warning
from losona.contracts import Scenario, scenarios_from_table, subset_note
from losona.metrics import BASELINE_CONDITION, UNSCORED_POLICY
from losona.plots import Figure


@dataclass(frozen=True)
class Section:
    """One part of the page: its anchor id, its heading, and its body as HTML."""

    anchor: str
    title: str
    body: str


def build_report(
    reports: Reports,
    figures: Sequence[Figure],
    verdicts: pl.DataFrame,
    scenarios: pl.DataFrame,
    extra: Sequence[Section] = (),
) -> str:
    """The whole page: summary, results, figures, effects, `extra`, casebook, browser."""
    view = _View(reports, verdicts, scenarios)
    sections = [
        results_section(reports),
        figures_section(figures),
        effects_section(reports),
        *extra,
        casebook_section(view),
        breakdown_section(reports),
        browser_section(view),
    ]
    return render_page("LoSoNA report", _summary(reports, subset_note(scenarios)), sections)


def render_page(title: str, lead: str, sections: Sequence[Section]) -> str:
    """An HTML document with a table of contents over `sections`."""
    toc = "".join(f'<li><a href="#{s.anchor}">{escape(s.title)}</a></li>' for s in sections)
    body = "".join(
        f'<section id="{s.anchor}"><h2>{escape(s.title)}</h2>{s.body}</section>' for s in sections
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{escape(title)}</h1>{lead}<nav><ol>{toc}</ol></nav></header>"
        f"<main>{body}</main></body></html>\n"
    )


# -- the numbers ---------------------------------------------------------------------------


def _summary(reports: Reports, subset: str | None) -> str:
    results = reports["results.csv"]
    judges = results.select("judge", "judge_model").unique(maintain_order=True).iter_rows()
    ks = sorted(set(results["k"].to_list()))
    outcomes = reports["outcomes.csv"]
    return (
        '<p class="lead">'
        f"Judged by {', '.join(f'<b>{escape(j)}</b> ({escape(m)})' for j, m in judges)}. "
        f"{_count(outcomes['scenario_id'].n_unique(), 'scenario')}, "
        f"{_count(results['subject_model'].n_unique(), 'model')}, "
        f"{_count(results['condition'].n_unique(), 'prompt condition')}, "
        f"K = {', '.join(map(str, ks))} trials each; "
        f"{results['unscored_trials'].sum()} of {results['trials'].sum()} trials unscored, "
        f"{results['undetermined'].sum()} scenario results undetermined.</p>"
    ) + (_subset_banner(subset) if subset is not None else "")


def _subset_banner(subset: str) -> str:
    # Styled inline: the shared CSS, and so a full run's page, stays byte for byte the same.
    return (
        '<p class="lead" style="background:#fff4d6;border-left:4px solid #d89b00;'
        f'padding:6px 10px"><b>Subset:</b> {escape(subset_warning(subset))}</p>'
    )


def results_section(reports: Reports) -> Section:
    """Table 1 in the paper's layout, per judge, with the mean over models and the policy."""
    results, means = reports["results.csv"], reports["means.csv"]
    k, level = _k_label(results), reports.confidence
    parts = []
    for (judge,), rows in results.group_by("judge", maintain_order=True):
        body = [
            [
                escape(r["model_label"]),
                escape(r["condition_label"]),
                _acc(r) + _undetermined(r),
                _num(r["compliance"]),
                _num(r["consistency"]),
                _num(r["non_answer_share"]),
            ]
            for r in rows.iter_rows(named=True)
        ]
        mean_rows = [
            [
                "<i>Mean over models</i>",
                escape(r["condition_label"]),
                _acc(r),
                _num(r["compliance"]),
                _num(r["consistency"]),
                "",  # a diagnostic of each model's replies, not averaged
            ]
            for r in means.filter(pl.col("judge") == judge).iter_rows(named=True)
            if rows["subject_model"].n_unique() > 1  # one model is its own mean
        ]
        parts.append(f"<h3>Judge: {escape(str(judge))} ({escape(rows['judge_model'][0])})</h3>")
        parts.append(
            _table(
                [
                    "Model",
                    "Prompt",
                    f"Acc@{k} ({level} CI)",
                    "Compliance",
                    "Consistency",
                    "Non-answers",
                ],
                body + mean_rows,
                numeric={2, 3, 4, 5},
                means_from=len(body),
            )
        )
    parts.append(
        '<p class="note">'
        f"Acc@{k}: a scenario passes when at least half its trials (rounded up) comply; "
        f"the share of scenarios that pass, with a {level} percentile interval from resampling "
        "scenarios. Compliance: mean of the trial labels. Consistency: share of scenarios "
        f"whose trial labels all agree. Percent. Unscored trials: {escape(UNSCORED_POLICY)}. "
        "Non-answers: the share of scored trials the judge found to take up no elicitor "
        "(empty, filler, off-topic, an echo, another language); they count as breaches in "
        "Compliance, and the column only shows how much of a low score is replies that do "
        "not answer. A diagnostic, in no metric; n/a when the judge does not check uptake."
        "</p>"
    )
    return Section("results", "Results (Table 1)", "".join(parts))


def figures_section(figures: Sequence[Figure]) -> Section:
    """Every figure, embedded as SVG, with its caption."""
    body = "".join(
        f'<figure id="{f.name}"><img alt="{escape(f.caption)}" src="data:image/svg+xml;base64,'
        f'{base64.b64encode(f.svg.encode("utf-8")).decode("ascii")}">'
        f"<figcaption>{escape(f.caption)}</figcaption></figure>"
        for f in figures
    )
    return Section("figures", "Figures", body)


def effects_section(reports: Reports) -> Section:
    """Paired effects against naive: delta with interval, McNemar test, flips with ids."""
    deltas, flips = reports["deltas.csv"], reports["flips.csv"]
    if deltas.is_empty():
        return Section(
            "effects",
            "Paired effects",
            f"<p>No paired effects: the run lacks the '{BASELINE_CONDITION}' condition or any "
            "other.</p>",
        )
    ids = _flip_ids(flips)
    rows = []
    for r in deltas.iter_rows(named=True):
        cell = (r["judge"], r["subject_model"], r["condition"])
        rows.append(
            [
                escape(r["judge"]),
                escape(r["model_label"]),
                escape(r["condition_label"]),
                f"{_signed(r['delta'])} [{_num(r['delta_low'])}, {_num(r['delta_high'])}]",
                _p(r["mcnemar_p"]),
                _flip_cell(r["recovered"], r["naive_failures"], ids[(*cell, "recovered")]),
                _flip_cell(r["regressed"], r["naive_successes"], ids[(*cell, "regressed")]),
                str(r["scenarios"]),
            ]
        )
    table = _table(
        [
            "Judge",
            "Model",
            "Prompt",
            f"Δ points ({reports.confidence} CI)",
            "McNemar p",
            "Recovered",
            "Regressed",
            "Scenarios",
        ],
        rows,
        numeric={3, 4, 7},
    )
    note = (
        '<p class="note">Each condition against Naive over the same scenarios. Δ: change in '
        "the share of scenarios passing, with a paired scenario-bootstrap interval. McNemar: "
        "exact two-sided binomial test on the scenarios that flip. Recovered: Naive fails, the "
        "condition passes, out of Naive's failures. Regressed: Naive passes, the condition "
        "fails, out of Naive's passes. Click a count for the scenarios.</p>"
    )
    return Section("effects", "Paired effects against Naive", table + note)


def _flip_ids(flips: pl.DataFrame) -> defaultdict[tuple[str, ...], list[str]]:
    ids: defaultdict[tuple[str, ...], list[str]] = defaultdict(list)
    for r in flips.iter_rows(named=True):
        ids[(r["judge"], r["subject_model"], r["condition"], r["flip"])].append(r["scenario_id"])
    return ids


def _flip_cell(count: int, out_of: int, scenario_ids: list[str]) -> str:
    if not scenario_ids:
        return f"{count}/{out_of}"
    links = ", ".join(f'<a href="#{_anchor(s)}">{escape(s)}</a>' for s in scenario_ids)
    return f'<details class="ids"><summary>{count}/{out_of}</summary>{links}</details>'


def breakdown_section(reports: Reports) -> Section:
    """Per-norm and per-event accuracy pooled over models: diagnostic, with counts."""
    parts = [
        '<p class="note">Diagnostic, not inferential: most norms and events have only a '
        "few scenarios (paper, Section 6). Each cell: scenarios passing / scenarios counted, "
        "pooled over models, and the percentage. Per-model rows are in by_norm.csv and "
        "by_event.csv.</p>"
    ]
    for name, by, title in (
        ("by_norm.csv", "norm_id", "By norm"),
        ("by_event.csv", "event_type", "By event"),
    ):
        table = reports[name]
        labels = dict(reports["results.csv"].select("condition", "condition_label").iter_rows())
        for (judge,), rows in table.group_by("judge", maintain_order=True):
            pooled = rows.group_by(by, "condition", maintain_order=True).agg(
                pl.col("passed").sum(), pl.col("scenarios").sum()
            )
            conditions = list(dict.fromkeys(rows["condition"].to_list()))
            cells = {(r[by], r["condition"]): r for r in pooled.iter_rows(named=True)}
            body = []
            for group in sorted(set(rows[by].to_list())):
                body.append(
                    [f"<code>{escape(group)}</code>"]
                    + [_pooled(cells.get((group, c))) for c in conditions]
                )
            parts.append(f"<h3>{title}, judge {escape(str(judge))}</h3>")
            parts.append(
                _table(
                    [by, *(escape(labels.get(c, c)) for c in conditions)],
                    body,
                    numeric=set(range(1, len(conditions) + 1)),
                )
            )
    return Section("breakdowns", "By norm and by event (diagnostic)", "".join(parts))


def _pooled(row: Mapping[str, Any] | None) -> str:
    if row is None or not row["scenarios"]:
        return "n/a"
    share = 100 * row["passed"] / row["scenarios"]
    return f"{row['passed']}/{row['scenarios']} <small>({share:.1f})</small>"


# -- the chats -----------------------------------------------------------------------------


class _View:
    """Verdicts and scenarios indexed for the casebook and the browser."""

    def __init__(self, reports: Reports, verdicts: pl.DataFrame, scenarios: pl.DataFrame):
        self.reports = reports
        results = reports["results.csv"]
        self.model_label = dict(results.select("subject_model", "model_label").iter_rows())
        self.condition_label = dict(results.select("condition", "condition_label").iter_rows())
        self.scenarios = {s.scenario_id: s for s in scenarios_from_table(scenarios)}
        order = {
            cell: i
            for i, cell in enumerate(
                results.select("judge", "subject_model", "condition").iter_rows()
            )
        }
        self.verdicts: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
        for row in verdicts.iter_rows(named=True):
            self.verdicts[row["scenario_id"]].append(row)
        for rows in self.verdicts.values():
            rows.sort(
                key=lambda r: (
                    order.get((r["judge"], r["subject_model"], r["condition"]), 0),
                    r["trial"],
                )
            )
        self.several_judges = results["judge"].n_unique() > 1


def casebook_section(view: _View) -> Section:
    """Every introduced regression: the naive responses beside the prompted ones."""
    regressions = view.reports["flips.csv"].filter(pl.col("flip") == "regressed")
    if regressions.is_empty():
        return Section(
            "casebook",
            "Regressions casebook",
            "<p>No introduced regressions: no scenario that passes under Naive fails under "
            "another condition.</p>",
        )
    cases = "".join(_case(view, r) for r in regressions.iter_rows(named=True))
    intro = (
        f"<p>{regressions.height} introduced regressions: scenarios that pass under Naive "
        "and fail under another condition. Open one for every trial of both, side by side.</p>"
    )
    return Section("casebook", "Regressions casebook", intro + cases)


def _case(view: _View, flip: Mapping[str, Any]) -> str:
    """One regression: the scenario's norm and elicitor, then both conditions' trials."""
    scenario = view.scenarios[flip["scenario_id"]]
    columns = []
    for condition, complying, scored in (
        (BASELINE_CONDITION, flip["naive_complying"], flip["naive_scored"]),
        (flip["condition"], flip["condition_complying"], flip["condition_scored"]),
    ):
        cell = (flip["judge"], flip["subject_model"], condition)
        trials = [
            v
            for v in view.verdicts[flip["scenario_id"]]
            if (v["judge"], v["subject_model"], v["condition"]) == cell
        ]
        columns.append(
            f"<div><h4>{escape(view.condition_label.get(condition, condition))} "
            f"({complying}/{scored} comply)</h4>{_responses(trials)}</div>"
        )
    judge = f", judge {escape(flip['judge'])}" if view.several_judges else ""
    return (
        '<details class="case"><summary>'
        f"<b>{escape(view.model_label.get(flip['subject_model'], flip['subject_model']))}, "
        f"{escape(view.condition_label.get(flip['condition'], flip['condition']))}</b>{judge}: "
        f"<code>{escape(flip['scenario_id'])}</code> <span class=muted>(naive "
        f"{flip['naive_complying']}/{flip['naive_scored']} comply, then "
        f"{flip['condition_complying']}/{flip['condition_scored']})</span></summary>"
        f'<p><a href="#{_anchor(flip["scenario_id"])}">The whole scenario</a></p>'
        f'<p class="norm"><b>Hidden norm</b> (<code>{escape(scenario.norm_id)}</code>): '
        f"{escape(scenario.norm_statement)}</p>"
        f'<p class="elicitor"><b>{escape(scenario.elicitor_actor)}:</b> '
        f"{escape(scenario.elicitor_content)}</p>"
        f'<div class="pair">{"".join(columns)}</div></details>'
    )


def browser_section(view: _View) -> Section:
    """Every scenario's chat, hidden norm, and every response with its verdict and reasoning."""
    outcomes = view.reports["outcomes.csv"]
    passes = dict(
        outcomes.group_by("scenario_id")
        .agg(pl.col("passed").sum(), pl.len())
        .select("scenario_id", pl.struct("passed", "len"))
        .iter_rows()
    )
    items = []
    for sid in sorted(view.scenarios):
        scenario = view.scenarios[sid]
        count = passes.get(sid, {"passed": 0, "len": 0})
        items.append(
            f'<details class="scenario" id="{_anchor(sid)}"><summary><code>{escape(sid)}</code> '
            f'<span class="muted">{escape(scenario.event_type)} · {escape(scenario.norm_id)} · '
            f"passes in {count['passed']} of {count['len']} model &times; condition cells</span>"
            f"</summary>{_scenario(scenario)}"
            f"<h4>Responses</h4>{_responses(view.verdicts[sid], view)}</details>"
        )
    intro = (
        '<p class="note">Click a scenario to open it: the chat as the subject saw it '
        '(<span class="tag demo">demo</span> marks the turns that demonstrate the hidden '
        'norm, <span class="tag elicitor">elicitor</span> the message it answers), the norm '
        "the judge scored against, and every response with its verdict.</p>"
    )
    return Section("browser", "Scenario browser", intro + "".join(items))


def _scenario(s: Scenario) -> str:
    cast = "".join(f"<li><b>{escape(m.name)}</b>: {escape(m.bio)}</li>" for m in s.cast)
    turns = "".join(
        _turn(t.index, t.actor, t.content, "demo" if t.is_demo else "") for t in s.turns
    )
    turns += _turn(s.elicitor_index, s.elicitor_actor, s.elicitor_content, "elicitor")
    return (
        f'<p class="meta">{escape(s.venue)} · {escape(s.channel_description)}. Subject: '
        f"<b>{escape(s.subject)}</b>, {escape(s.subject_bio)}</p>"
        f'<details class="cast"><summary>Cast</summary><ul>{cast}</ul></details>'
        f'<p class="norm"><b>Hidden norm</b> (<code>{escape(s.norm_id)}</code>): '
        f"{escape(s.norm_statement)}</p>"
        f'<ol class="chat">{turns}</ol>'
    )


def _turn(index: int, actor: str, content: str, kind: str) -> str:
    tag = f' <span class="tag {kind}">{kind}</span>' if kind else ""
    return (
        f'<li class="{kind}"><span class="idx">[{index}]</span> <b>{escape(actor)}:</b> '
        f"{escape(content)}{tag}</li>"
    )


def _responses(rows: Iterable[dict[str, Any]], view: _View | None = None) -> str:
    body = []
    for v in rows:
        label = (
            [
                escape(view.model_label.get(v["subject_model"], v["subject_model"])),
                escape(view.condition_label.get(v["condition"], v["condition"])),
            ]
            if view
            else []
        )
        judge = [escape(v["judge"])] if view and view.several_judges else []
        body.append(
            [
                *judge,
                *label,
                str(v["trial"]),
                _verdict(v["complies"], v["judge_status"]),
                _text(v["response"]),
                f'<span class="reason">{_text(v["reasoning"])}</span>',
            ]
        )
    judge_head = ["Judge"] if view and view.several_judges else []
    head = [*judge_head, *(["Model", "Prompt"] if view else []), "Trial", "Verdict", "Response"]
    return _table([*head, "Judge's reasoning"], body, css="responses")


def _verdict(complies: bool | None, status: str | None) -> str:
    if complies is None:
        return f'<span class="v unscored">unscored: {escape(status or "unknown")}</span>'
    return '<span class="v ok">complies</span>' if complies else '<span class="v no">breach</span>'


def _text(value: str | None) -> str:
    return '<i class="muted">(none)</i>' if value is None else escape(value)


# -- small helpers -----------------------------------------------------------------------------


def _anchor(scenario_id: str) -> str:
    return "s-" + "".join(ch if ch.isalnum() or ch in "-_" else "-" for ch in scenario_id)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _k_label(results: pl.DataFrame) -> str:
    ks = results["k"].unique().to_list()
    return str(ks[0]) if len(ks) == 1 else "K"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}"


def _p(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if value >= 0.001 else f"{value:.1e}"


def _acc(row: Mapping[str, Any]) -> str:
    if row["acc_low"] is None:
        return _num(row["acc_at_k"])
    return f"{_num(row['acc_at_k'])} [{_num(row['acc_low'])}, {_num(row['acc_high'])}]"


def _undetermined(row: Mapping[str, Any]) -> str:
    n = row["undetermined"]
    return f' <small class="warn">({n} undetermined)</small>' if n else ""


def _table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    numeric: set[int] | None = None,
    css: str = "",
    means_from: int | None = None,
) -> str:
    """An HTML table of already-escaped cells; `numeric` columns align right, and rows from
    `means_from` on are styled as means."""
    numeric = numeric or set()

    def cells(tag: str, values: Sequence[str]) -> str:
        return "".join(
            f"<{tag}{' class=num' if i in numeric else ''}>{v}</{tag}>"
            for i, v in enumerate(values)
        )

    body = "".join(
        f"<tr{' class=mean' if means_from is not None and i >= means_from else ''}>"
        f"{cells('td', row)}</tr>"
        for i, row in enumerate(rows)
    )
    return (
        f'<table class="{css}"><thead><tr>{cells("th", head)}</tr></thead>'
        f"<tbody>{body}</tbody></table>"
    )


CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;
margin:0;background:#fafafa}
header,main{max-width:1100px;margin:0 auto;padding:0 20px}
header{padding-top:24px}h1{margin:0 0 6px}h2{border-bottom:2px solid #ddd;padding-top:18px}
nav ol{display:flex;flex-wrap:wrap;gap:4px 18px;padding:0;list-style:none;margin:8px 0 0}
a{color:#0b5cad}.lead{font-size:16px}.note,.muted{color:#555}.note{font-size:13px}
table{border-collapse:collapse;margin:8px 0 16px;background:#fff;font-size:13.5px}
th,td{border-bottom:1px solid #e4e4e4;padding:4px 10px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.mean td{background:#f6f6fb;font-style:italic}
figure{margin:16px 0 28px;background:#fff;padding:8px;border:1px solid #eee}
figure img{max-width:100%;height:auto}figcaption{font-size:13px;color:#444}
details.scenario{background:#fff;border:1px solid #e4e4e4;margin:6px 0;padding:6px 10px}
details.scenario>summary{cursor:pointer}
ol.chat{list-style:none;padding:0;font-size:13.5px}ol.chat li{padding:2px 6px}
ol.chat li.demo{background:#eaf6ee}ol.chat li.elicitor{background:#fff4d6}
.idx{color:#888;font-variant-numeric:tabular-nums}
.tag{font-size:11px;border-radius:3px;padding:0 5px;margin-left:4px;text-transform:uppercase}
.tag.demo{background:#009E73;color:#fff}.tag.elicitor{background:#E69F00;color:#000}
.norm{background:#eef3fb;padding:6px 10px;border-left:3px solid #0072B2}
.elicitor{background:#fff4d6;padding:6px 10px}
table.responses td{max-width:420px}.reason{color:#555;font-size:12.5px}
.v{font-size:12px;padding:1px 6px;border-radius:3px;white-space:nowrap}
.v.ok{background:#d9f2e3}.v.no{background:#fbe0d6}.v.unscored{background:#e6e6e6}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:12px}
.case{background:#fff;border:1px solid #e4e4e4;padding:4px 12px;margin:6px 0}
.case>summary{cursor:pointer}
.warn{color:#a15c00}details.ids summary{cursor:pointer}
"""
