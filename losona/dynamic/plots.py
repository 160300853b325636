"""The dynamic extension's figure: recovery after the sanction and after the control, and
retention, per model and condition, at the trial and the scenario level."""

from __future__ import annotations

import matplotlib
import numpy as np
import polars as pl
from matplotlib.figure import Figure as MplFigure

from losona.figures import (
    PALETTE,
    SEP,
    STYLE,
    Figure,
    Judge,
    judge_title,
    k_label,
    mark_scope,
    render,
    scope_text,
)

SHOWN = {
    "recovery_after_sanction": "recovery after the sanction",
    "recovery_after_control": "recovery after the control",
    "retention": "retention",
}
COLOURS = dict(zip(SHOWN, (PALETTE[3], PALETTE[0], PALETTE[2]), strict=True))
LEVELS = {"trial": "Trials (share of the arm's trials)", "scenario": "Scenarios (majority rule)"}


def figure_data(results: pl.DataFrame) -> pl.DataFrame:
    """The numbers the figure shows: one row per model x condition x level x metric."""
    label = pl.concat_str([pl.col("model_label"), pl.col("condition_label")], separator=SEP)
    return results.filter(pl.col("metric").is_in(list(SHOWN))).select(
        "judge",
        "subject_model",
        "condition",
        label.alias("label"),
        "level",
        "metric",
        "estimate",
        "low",
        "high",
    )


def scope(results: pl.DataFrame, subset: str | None) -> str:
    """What one judge's second turn rests on, as the first turn's figures say theirs: N
    scenarios and K first-turn trials each, after a subset's warning (`subset`)."""

    scenarios = max(results["scenarios"].to_list(), default=0)
    return scope_text(scenarios, k_label(results), subset)


def draw_recovery(results: pl.DataFrame, name: str, level: str, subset: str | None) -> Figure:
    """The figure of one judge's results.csv (`level`: the intervals' confidence, e.g. 95%;
    `subset`: the run's subset note, None for a whole dataset)."""
    data = figure_data(results)
    first = results.row(0, named=True) if results.height else {}
    judge: Judge = (
        first.get("judge", ""),
        first.get("judge_model", ""),
        first.get("judge_label", ""),
    )
    with matplotlib.rc_context(STYLE):
        figure = _draw(data, judge)
        mark_scope(figure, scope(results, subset), subset)
        png, svg = render(figure)
    caption = (
        "The dynamic second turn: of the first turn's breaches, the share that comply on the "
        "second turn after the sanction and after the neutral control; of its compliant "
        f"replies, the share that comply again (retention). Error bars: {level} "
        "scenario-bootstrap intervals."
    )
    return Figure(name, caption, png, svg, data)


def _draw(data: pl.DataFrame, judge: Judge) -> MplFigure:
    labels = data["label"].unique(maintain_order=True).to_list()
    figure = MplFigure(figsize=(11.0, 1.8 + 0.6 * max(1, len(labels))), layout="constrained")
    axes = figure.subplots(1, len(LEVELS), squeeze=False)[0]
    height = 0.8 / len(SHOWN)
    y = np.arange(len(labels))
    for ax, (level_name, title) in zip(axes, LEVELS.items(), strict=True):
        rows = data.filter(pl.col("level") == level_name)
        for i, metric in enumerate(SHOWN):
            part = rows.filter(pl.col("metric") == metric)
            at = {label: j for j, label in enumerate(labels)}
            ys = np.array([at[label] for label in part["label"]]) + (i - 1) * height
            value = part["estimate"].fill_null(np.nan).to_numpy()
            low = part["low"].fill_null(np.nan).to_numpy()
            high = part["high"].fill_null(np.nan).to_numpy()
            ax.barh(ys, np.nan_to_num(value), height, label=SHOWN[metric], color=COLOURS[metric])
            known = ~np.isnan(low) & ~np.isnan(high) & ~np.isnan(value)
            if known.any():
                errors = np.vstack([value[known] - low[known], high[known] - value[known]])
                ax.errorbar(
                    value[known],
                    ys[known],
                    xerr=errors,
                    fmt="none",
                    ecolor="#333333",
                    elinewidth=0.8,
                    capsize=2,
                )
        ax.set_yticks(y, labels)
        ax.invert_yaxis()
        ax.set_xlim(0, 100)
        ax.set_xlabel("complying on the second turn (%)")
        ax.set_title(judge_title(title, judge))
        ax.grid(axis="x", linewidth=0.4, alpha=0.5)
    handles, names = axes[0].get_legend_handles_labels()
    figure.legend(handles, names, loc="outside lower center", ncols=len(SHOWN), fontsize=8)
    return figure
