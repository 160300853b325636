"""Table 1 in the paper's layout (reports/table1.md): one table per judge, with what it
rests on below (the vote rule, the intervals, unscored trials, non-answers, a degenerate
judge), and the headings and subset warning the HTML report shares with it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from losona.core.config import AggregateSettings
from losona.core.formatting import counted, number, percent
from losona.results.metrics import UNSCORED_POLICY, VOTE_RULE, majority_threshold


def _ci(row: Mapping[str, Any]) -> str:
    interval = (
        "" if row["acc_low"] is None else f" [{number(row['acc_low'])}, {number(row['acc_high'])}]"
    )
    return f"{number(row['acc_at_k'])}{interval}"


def _vote_rule(ks: list[int]) -> str:
    if len(ks) > 1:
        return f"{VOTE_RULE} (K = {', '.join(map(str, ks))})"
    if ks == [1]:
        return "a scenario passes when its one trial complies"
    return (
        f"a scenario passes when at least {majority_threshold(ks[0])} of its {ks[0]} trials comply"
    )


def _mean_table(means: pl.DataFrame, k: str, confidence: str) -> list[str]:
    lines = [
        "",
        "Mean over models:",
        "",
        f"| Prompt | Models | Acc@{k} ({confidence} CI) "
        f"| Paired effect vs naive ({confidence} CI) |",
        "|---|---|---|---|",
    ]
    for row in means.iter_rows(named=True):
        effect = (
            "(baseline)"
            if row["delta"] is None
            else f"{row['delta']:+.1f} [{number(row['delta_low'])}, {number(row['delta_high'])}]"
        )
        lines.append(f"| {row['condition_label']} | {row['models']} | {_ci(row)} | {effect} |")
    return lines


def table1_markdown(
    results: pl.DataFrame,
    means: pl.DataFrame,
    unscored: dict[str, dict[str, int]],
    bootstrap: AggregateSettings,
    n_scenarios: int,
    subset: str | None,
) -> str:
    """Table 1 in the paper's layout, one table per judge, with what it rests on below; a
    run on a subset of the dataset says so under the title, before any figure."""

    confidence = f"{percent(bootstrap.confidence):g}%"
    parts = ["# LoSoNA results (the paper's Table 1)\n"]
    if subset is not None:
        parts.append(f"> **Subset:** {subset_warning(subset)}\n")
    for (judge,), rows in results.group_by("judge", maintain_order=True):
        ks = sorted(set(rows["k"].to_list()))
        k = str(ks[0]) if len(ks) == 1 else "K"
        heading = judge_heading(str(judge), rows["judge_label"][0], rows["judge_model"][0])
        parts += [
            f"## Judge: {heading}\n",
            f"| Model | Prompt | Acc@{k} ({confidence} CI) | Compliance | Consistency |",
            "|---|---|---|---|---|",
        ]
        for row in rows.iter_rows(named=True):
            parts.append(
                f"| {row['model_label']} | {row['condition_label']} | {_ci(row)} "
                f"| {number(row['compliance'])} | {number(row['consistency'])} |"
            )
        if rows["subject_model"].n_unique() > 1:  # one model is its own mean
            parts += _mean_table(means.filter(pl.col("judge") == judge), k, confidence)
        trials, missing = int(rows["trials"].sum()), int(rows["unscored_trials"].sum())
        statuses = ", ".join(f"{n} {s}" for s, n in unscored[judge].items()) or "none"
        undetermined = [
            f"{r['model_label']} / {r['condition_label']}: {r['undetermined']}"
            for r in rows.iter_rows(named=True)
            if r["undetermined"]
        ]
        parts += [
            "",
            f"Acc@{k}: accuracy-at-K over {counted(n_scenarios, 'scenario')}; {_vote_rule(ks)}. "
            f"Intervals: {confidence} percentile intervals "
            f"from {bootstrap.resamples:,} scenario-bootstrap resamples, seed {bootstrap.seed}. "
            "Compliance: mean of the trial labels. Consistency: share of scenarios whose "
            f"trial labels all agree{_consistency_note(ks)}. All figures in percent.",
            "",
            f"Unscored trials: {missing} of {trials} ({statuses}). "
            f"Undetermined scenarios: {'; '.join(undetermined) or 'none'}. "
            f"Policy: {UNSCORED_POLICY}.",
            "",
            _non_answer_note(rows),
            "",
            *_degenerate_note(str(judge), rows),
        ]
    return "\n".join(parts)


def _consistency_note(ks: list[int]) -> str:
    """Why a K = 1 cell's consistency reads n/a: its one trial cannot disagree."""
    return (
        " (n/a at K = 1: each scenario has one trial, which always agrees with itself)"
        if 1 in ks
        else ""
    )


def _degenerate_note(judge: str, rows: pl.DataFrame) -> list[str]:
    """Table 1's warning, by name, about a judge whose verdicts in some cells say nothing."""
    flagged = [
        f"{r['model_label']} / {r['condition_label']}: {r['degenerate']}"
        for r in rows.iter_rows(named=True)
        if r["degenerate"] is not None
    ]
    if not flagged:
        return []
    return [
        f"**Degenerate verdicts: judge {judge}.** Its numbers in these cells measure the "
        f"judge, not the model; check its validity controls before reading them: "
        + "; ".join(flagged)
        + ".",
        "",
    ]


def judge_heading(judge: str, label: str, judge_model: str) -> str:
    """How a table names its judge: the label, then the config name and model string."""
    return f"{judge} ({judge_model})" if label == judge else f"{label} ({judge}, {judge_model})"


def subset_warning(subset: str) -> str:
    """What Table 1 and the HTML report say, after "Subset:", of a run on part of its dataset."""
    return (
        f"this run covers {subset}, not the whole dataset; its figures are not comparable "
        "with a full run's."
    )


def _non_answer_note(rows: pl.DataFrame) -> str:
    """Table 1's note on non-answers: a diagnostic for reading a low score, not a metric."""
    if rows["non_answers"].null_count() == rows.height:
        return "Non-answers: this judge does not check uptake, so they are not counted."
    shares = "; ".join(
        f"{r['model_label']} / {r['condition_label']}: {number(r['non_answer_share'])}"
        for r in rows.iter_rows(named=True)
    )
    return (
        "Non-answers (scored trials that take up no elicitor: empty, filler, off-topic, an "
        "echo, another language, talk to the judge or other members' lines; judged breaches, "
        "and counted in Compliance as such; a diagnostic, in no metric): " + shares + "."
    )
