"""The paper's Figures 2, 3 and 4 and a heatmap per judge, drawn from the report tables,
each saved as PNG and SVG with its numbers as a CSV beside it (for `dvc plots`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import matplotlib
import numpy as np
import polars as pl
from matplotlib.axes import Axes

# The object-oriented API without pyplot: no global figure registry, no GUI backend.
from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter
from mpl_toolkits.axes_grid1 import Divider, Size

from losona.core.formatting import counted
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
from losona.judges.verdicts import CELL
from losona.results.aggregate import Reports
from losona.results.metrics import BASELINE_CONDITION

RECOVERED_COLOUR, REGRESSED_COLOUR = "#009E73", "#D55E00"


def draw_figures(reports: Reports, subset: str | None = None) -> list[Figure]:
    """Figures 2, 3 and 4 for every judge in the reports, then a heatmap per judge, each
    saying what it rests on (and `subset`, when the run covers part of its dataset)."""
    results, deltas = reports["results.csv"], reports["deltas.csv"]
    k, level = k_label(results), reports.confidence
    judges = _judges(results)
    scope = scope_text(reports["outcomes.csv"]["scenario_id"].n_unique(), k, subset)
    drawings: list[tuple[str, str, Callable[[], MplFigure], pl.DataFrame, bool]] = [
        (
            "fig2_accuracy",
            f"Figure 2. Accuracy-at-{k} per model and prompt condition; error bars are "
            f"{level} scenario-bootstrap intervals.",
            lambda: _accuracy(results, judges, k),
            _labelled(results, judges).select(*CELL, "label", "acc_at_k", "acc_low", "acc_high"),
            False,
        ),
        (
            "fig3_paired_effect",
            f"Figure 3. Paired effect of each condition against Naive over the same scenarios, "
            f"in points of accuracy-at-{k}, with {level} paired scenario-bootstrap intervals.",
            lambda: _paired_effect(deltas, judges, k, results),
            _labelled(deltas, judges).select(*CELL, "label", "delta", "delta_low", "delta_high"),
            False,
        ),
        (
            "fig4_flips",
            "Figure 4. Recovered failures (Naive fails, the condition passes) and introduced "
            f"regressions (Naive passes, the condition fails), by accuracy-at-{k} per scenario.",
            lambda: _flips(deltas, judges, results),
            _flip_data(_labelled(deltas, judges)),
            False,
        ),
        *(
            (
                f"heatmap_{judge[0]}",
                f"Scenario x condition, judge {judge[2]}: the share of each scenario's scored "
                f"trials judged compliant, per model and condition; a dot marks a pass under "
                f"accuracy-at-{k}, a cross a scenario left undetermined by unscored trials.",
                # Bound now: a lambda reads its loop variable when called, not when made.
                lambda judge=judge: _heatmap(reports, judge),
                _heatmap_data(reports, judge),
                True,
            )
            for judge in judges
        ),
    ]
    figures = []
    for name, caption, draw, data, full_size in drawings:
        with matplotlib.rc_context(STYLE):
            figure = draw()
            mark_scope(figure, scope, subset)
            png, svg = render(figure)
        figures.append(Figure(name, caption, png, svg, data, full_size))
    return figures


def _judges(results: pl.DataFrame) -> list[Judge]:
    return list(
        results.select("judge", "judge_model", "judge_label")
        .unique(maintain_order=True)
        .iter_rows()
    )


def _labelled(df: pl.DataFrame, judges: Sequence[Judge]) -> pl.DataFrame:
    """Adds `label` ("Model · Condition", the judge first when there are several)."""
    parts = [pl.col("model_label"), pl.col("condition_label")]
    if len(judges) > 1:
        parts.insert(0, pl.col("judge"))
    return df.with_columns(label=pl.concat_str(parts, separator=SEP))


def _panels(rows: int, cols: int, width: float, height: float) -> tuple[MplFigure, np.ndarray]:
    figure = MplFigure(figsize=(width * cols, height * rows), layout="constrained")
    return figure, figure.subplots(rows, cols, squeeze=False)


def _empty(ax: Axes, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, wrap=True)
    ax.set_axis_off()


def _colours(conditions: Sequence[str]) -> dict[str, str]:
    return {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(conditions)}


def _with_errors(part: pl.DataFrame, value: str, low: str, high: str) -> tuple[np.ndarray, ...]:
    """A column's values and their error bars (distance down to `low`, up to `high`)."""
    values = part[value].to_numpy()
    return values, np.vstack([values - part[low].to_numpy(), part[high].to_numpy() - values])


def _model_rows(ax: Axes, models: Sequence[str]) -> None:
    """One row per model, the first at the top."""
    ax.set_yticks(range(len(models)), models)
    ax.set_ylim(len(models) - 0.5, -0.5)


def _accuracy(results: pl.DataFrame, judges: Sequence[Judge], k: str) -> MplFigure:
    models = results["model_label"].unique(maintain_order=True).to_list()
    conditions = results["condition_label"].unique(maintain_order=True).to_list()
    figure, axes = _panels(len(judges), 1, max(6.0, 1.1 * len(models) + 2.5), 3.6)
    colours = _colours(conditions)
    width = 0.8 / len(conditions)
    x = np.arange(len(models))
    at = {m: j for j, m in enumerate(models)}
    for ax, judge in zip(axes[:, 0], judges, strict=True):
        rows = results.filter(pl.col("judge") == judge[0])
        for i, condition in enumerate(conditions):
            part = rows.filter(pl.col("condition_label") == condition)
            xs = (
                np.array([at[m] for m in part["model_label"]])
                + (i - (len(conditions) - 1) / 2) * width
            )
            acc, errors = _with_errors(part, "acc_at_k", "acc_low", "acc_high")
            ax.bar(xs, acc, width, label=condition, color=colours[condition])
            ax.errorbar(
                xs, acc, yerr=errors, fmt="none", ecolor="#333333", elinewidth=0.8, capsize=2
            )
        ax.set_xticks(
            x,
            models,
            rotation=20 if len(models) > 4 else 0,
            ha="right" if len(models) > 4 else "center",
        )
        ax.set_ylim(0, 100)
        ax.set_ylabel(f"accuracy-at-{k} (%)")
        ax.set_title(judge_title(f"Accuracy-at-{k} by model and prompt condition", judge))
        ax.grid(axis="y", linewidth=0.4, alpha=0.5)
        # Beside the panel, not over it: bars and their intervals reach 100.
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return figure


def no_pairs(conditions: Iterable[str]) -> str:
    """Why there is no paired effect, given the conditions the judge's cells have."""
    present = set(conditions)
    if BASELINE_CONDITION not in present:
        why = f"the run has no '{BASELINE_CONDITION}' condition to compare the others with"
    elif present == {BASELINE_CONDITION}:
        why = f"the run has only the '{BASELINE_CONDITION}' condition, so none to compare with it"
    else:
        why = f"no model has both '{BASELINE_CONDITION}' and another condition"
    return f"No paired effects: {why}."


def _no_pairs_of(results: pl.DataFrame, judge: Judge) -> str:
    return no_pairs(results.filter(pl.col("judge") == judge[0])["condition"])


def _paired_effect(
    deltas: pl.DataFrame, judges: Sequence[Judge], k: str, results: pl.DataFrame
) -> MplFigure:
    models = deltas["model_label"].unique(maintain_order=True).to_list() or [""]
    conditions = deltas["condition_label"].unique(maintain_order=True).to_list()
    height = 1.6 + 0.5 * len(models) * (0.4 + 0.2 * len(conditions))
    figure, axes = _panels(len(judges), 1, 7.0, height)
    colours = _colours(["", *conditions])  # grey stays the baseline's colour
    bounds = deltas.select(pl.col("delta_low").abs(), pl.col("delta_high").abs()).to_numpy()
    reach = max(20.0, 10 * np.ceil(np.nanmax(bounds, initial=0.0) / 10) + 5)
    at = {m: j for j, m in enumerate(models)}
    step = 0.7 / max(1, len(conditions))
    for ax, judge in zip(axes[:, 0], judges, strict=True):
        rows = deltas.filter(pl.col("judge") == judge[0])
        ax.set_title(judge_title(f"Paired effect against {BASELINE_CONDITION}", judge))
        if rows.is_empty():
            _empty(ax, _no_pairs_of(results, judge))
            continue
        for i, condition in enumerate(conditions):
            part = rows.filter(pl.col("condition_label") == condition)
            offset = (i - (len(conditions) - 1) / 2) * step
            ys = np.array([at[m] for m in part["model_label"]]) + offset
            delta, errors = _with_errors(part, "delta", "delta_low", "delta_high")
            ax.errorbar(
                delta,
                ys,
                xerr=errors,
                fmt="o",
                color=colours[condition],
                label=condition,
                capsize=2,
                markersize=4,
                elinewidth=1,
            )
        ax.axvline(0, color="#333333", linewidth=0.8)
        _model_rows(ax, models)
        ax.set_xlim(-reach, reach)
        ax.set_xlabel(f"change in accuracy-at-{k} against {BASELINE_CONDITION} (points)")
        ax.grid(axis="x", linewidth=0.4, alpha=0.5)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    return figure


def _flips(deltas: pl.DataFrame, judges: Sequence[Judge], results: pl.DataFrame) -> MplFigure:
    models = deltas["model_label"].unique(maintain_order=True).to_list() or [""]
    conditions = deltas["condition_label"].unique(maintain_order=True).to_list() or [""]
    figure, axes = _panels(len(judges), len(conditions), 4.2, 0.32 * len(models) + 1.6)
    reach = max([1, *deltas["naive_failures"], *deltas["naive_successes"]])
    at = {m: j for j, m in enumerate(models)}
    for row, judge in zip(axes, judges, strict=True):
        for ax, condition in zip(row, conditions, strict=True):
            ax.set_title(judge_title(f"{condition} against {BASELINE_CONDITION}", judge))
            part = deltas.filter(
                (pl.col("judge") == judge[0]) & (pl.col("condition_label") == condition)
            )
            if part.is_empty():
                _empty(ax, _no_pairs_of(results, judge))
                continue
            ys = [at[m] for m in part["model_label"]]
            ax.barh(ys, part["recovered"].to_numpy(), color=RECOVERED_COLOUR)
            ax.barh(ys, -part["regressed"].to_numpy(), color=REGRESSED_COLOUR)
            pad = reach * 0.03
            for y, r in zip(ys, part.iter_rows(named=True), strict=True):
                recovered = f"{r['recovered']}/{r['naive_failures']}"
                regressed = f"{r['regressed']}/{r['naive_successes']}"
                ax.text(r["recovered"] + pad, y, recovered, va="center", fontsize=7)
                ax.text(-r["regressed"] - pad, y, regressed, va="center", ha="right", fontsize=7)
            ax.axvline(0, color="#333333", linewidth=0.8)
            ax.set_xlim(-reach * 1.35, reach * 1.35)
            _model_rows(ax, models)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{abs(value):g}"))
            ax.set_xlabel("scenarios")
    figure.legend(
        handles=[
            Patch(color=REGRESSED_COLOUR, label="introduced regressions / naive passes"),
            Patch(color=RECOVERED_COLOUR, label="recovered failures / naive failures"),
        ],
        loc="outside lower center",
        ncols=2,
        fontsize=8,
    )
    return figure


def _flip_data(deltas: pl.DataFrame) -> pl.DataFrame:
    """Figure 4's numbers, one row per flip kind; `signed` is negative for regressions."""
    ordered = deltas.with_row_index("order")
    kinds = [("recovered", "naive_failures", 1), ("regressed", "naive_successes", -1)]
    return (
        pl.concat(
            ordered.select(
                "order",
                *CELL,
                "label",
                flip=pl.lit(flip),
                scenarios=pl.col(flip),
                out_of=pl.col(out_of),
                signed=pl.col(flip) * sign,
            )
            for flip, out_of, sign in kinds
        )
        .sort("order", "flip")
        .drop("order")
    )


def _heatmap_data(reports: Reports, judge: Judge) -> pl.DataFrame:
    """One judge's heatmap numbers: each scenario's share of compliant trials per cell."""
    labels = reports["results.csv"].select(*CELL, "model_label", "condition_label")
    outcomes = (
        reports["outcomes.csv"]
        .filter(pl.col("judge") == judge[0])
        .join(labels, on=CELL, how="left", maintain_order="left")
    )
    return outcomes.select(
        "judge",
        "scenario_id",
        "subject_model",
        "condition",
        "model_label",
        "condition_label",
        complying_share=pl.when(pl.col("scored") > 0).then(
            (pl.col("complying") / pl.col("scored")).round(4)
        ),
        passed=pl.col("passed"),
    )


# The heatmap's cells in inches, whatever the number of scenarios, so a cell is never a
# strip. Past LABELLED_ROWS scenarios the rows lose their labels and markers, and the panel
# stops growing at HEATMAP_MAX_H.
CELL_W, CELL_H = 0.42, 0.2
LABELLED_ROWS = 150
HEATMAP_MAX_H = 24.0
# Its smallest text in points, readable at the size the report shows a heatmap, and small
# enough for a scenario row (0.2 in = 14.4 pt).
HEATMAP_LABEL_PT = 8.0
# Room for tick labels, per character, at HEATMAP_LABEL_PT (generous: the figure is cropped).
ROW_LABEL_IN, COLUMN_LABEL_IN = 0.065, 0.06


def _heatmap(reports: Reports, judge: Judge) -> MplFigure:
    data = _heatmap_data(reports, judge)
    # Every judge's heatmap has the same rows and columns, so that they read side by side.
    results = reports["results.csv"]
    columns = list(
        results.select("subject_model", "condition", "model_label", "condition_label")
        .unique(maintain_order=True)
        .iter_rows()
    )
    column_labels = [f"{c[2]}{SEP}{c[3]}" for c in columns]
    scenarios = sorted(reports["outcomes.csv"]["scenario_id"].unique().to_list())
    labelled_rows = len(scenarios) <= LABELLED_ROWS
    # Every length in inches, fixed: the panel's size follows the cells, not the figure.
    grid_w = CELL_W * len(columns)
    grid_h = min(HEATMAP_MAX_H, CELL_H * len(scenarios))
    rows_w = ROW_LABEL_IN * max(map(len, scenarios)) if labelled_rows else 0.5
    below = COLUMN_LABEL_IN * max(map(len, column_labels)) + 0.2
    # The colour bar spans the panel and what it needs beyond it to be 3 inches wide.
    widths = [Size.Fixed(rows_w), Size.Fixed(grid_w), Size.Fixed(max(0.3, 3.0 - grid_w))]
    heights = [Size.Fixed(h) for h in (0.9, 0.16, below, grid_h, 1.1)]
    figure = MplFigure(
        figsize=(sum(w.fixed_size for w in widths), sum(h.fixed_size for h in heights))
    )
    divider = Divider(figure, (0, 0, 1, 1), widths, heights, aspect=False)
    cmap = matplotlib.colormaps["RdBu"].with_extremes(bad="#dddddd")
    ax = figure.add_axes((0, 0, 1, 1), axes_locator=divider.new_locator(nx=1, ny=3))
    grid = np.full((len(scenarios), len(columns)), np.nan)
    passed = np.zeros_like(grid, dtype=bool)
    undetermined = np.zeros_like(grid, dtype=bool)
    row_of = {s: i for i, s in enumerate(scenarios)}
    col_of = {(c[0], c[1]): j for j, c in enumerate(columns)}
    for r in data.iter_rows(named=True):
        i, j = row_of[r["scenario_id"]], col_of[(r["subject_model"], r["condition"])]
        grid[i, j] = np.nan if r["complying_share"] is None else r["complying_share"]
        passed[i, j] = r["passed"] is True
        undetermined[i, j] = r["passed"] is None
    image = ax.imshow(grid, cmap=cmap, vmin=0, vmax=1, aspect="auto", interpolation="nearest")
    if labelled_rows:
        ys, xs = np.nonzero(passed)
        ax.scatter(xs, ys, s=14, c="white", marker="o", edgecolors="#111111", linewidths=0.7)
        ys, xs = np.nonzero(undetermined)
        ax.scatter(xs, ys, s=18, c="#111111", marker="x", linewidths=0.9)
        ax.set_yticks(range(len(scenarios)), scenarios, fontsize=HEATMAP_LABEL_PT)
    else:
        ax.set_yticks([])
        ax.set_ylabel(counted(len(scenarios), "scenario"), fontsize=HEATMAP_LABEL_PT)
    ax.set_xticks(range(len(columns)), column_labels, rotation=90, fontsize=HEATMAP_LABEL_PT)
    for j in range(1, len(columns)):
        if columns[j][0] != columns[j - 1][0]:
            ax.axvline(j - 0.5, color="white", linewidth=1.5)
    ax.set_title(judge_title("Scenario x condition", judge), fontsize=10)
    ax.spines[:].set_visible(False)
    # A colour bar of its own, under the panel and at least 3 inches wide, at any size.
    cax = figure.add_axes(
        (0, 0, 1, 1), axes_locator=divider.new_locator(nx=1, nx1=len(widths), ny=1)
    )
    bar = figure.colorbar(image, cax=cax, orientation="horizontal")
    bar.set_ticks([0, 0.25, 0.5, 0.75, 1])
    bar.set_label("share of scored trials judged compliant", fontsize=HEATMAP_LABEL_PT + 0.5)
    bar.ax.tick_params(labelsize=HEATMAP_LABEL_PT)
    if labelled_rows:
        marks = [
            Line2D([], [], ls="", marker="o", mfc="white", mec="#111111", label="pass (Acc@K)"),
            Line2D([], [], ls="", marker="x", color="#111111", label="undetermined"),
        ]
        cax.legend(
            handles=marks,
            loc="upper center",
            bbox_to_anchor=(0.5, -3.4),
            ncols=2,
            fontsize=HEATMAP_LABEL_PT,
        )
    return figure
