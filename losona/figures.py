"""What every figure of a run shares, the paper's (losona/report/plots.py) and the dynamic
turn's (losona/dynamic/plots.py): the style, the palette, the scope line over a figure, the
judge under a panel's title, and writing a figure as PNG, SVG and the CSV of its numbers.

Rendering settings are fixed here so that the same tables give byte-identical files.
"""

from __future__ import annotations

import base64
import io
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

# The object-oriented API without pyplot: no global figure registry, no GUI backend.
from matplotlib.figure import Figure as MplFigure

from losona.core.files import atomic_path, write_text
from losona.core.formatting import counted

STYLE: dict[Any, Any] = {
    "svg.hashsalt": "losona",  # stable element ids in SVG, so reruns give identical bytes
    "svg.fonttype": "none",  # text stays text: smaller, searchable files
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "legend.frameon": False,
}


# Okabe-Ito: distinguishable with every common colour-vision deficiency.
PALETTE = ["#999999", "#E69F00", "#56B4E9", "#009E73", "#CC79A7", "#0072B2", "#D55E00"]


SUBSET_COLOUR = "#A15C00"  # the report's warning colour (losona/pages/templates/page.css)


SEP = " · "


@dataclass(frozen=True)
class Figure:
    """One figure, rendered: its file stem, a caption, its PNG and SVG, and its data."""

    name: str
    caption: str
    png: bytes
    svg: str
    data: pl.DataFrame
    # Shown at its own size, scrolled rather than shrunk to the page: a heatmap's labels
    # are small already, and shrinking made them unreadable (issue 30).
    full_size: bool = False


def write_figures(figures: Sequence[Figure], figures_dir: str | Path) -> None:
    """Each figure as `<name>.png`, `<name>.svg` and `<name>.csv` under `figures_dir`."""
    root = Path(figures_dir)
    for figure in figures:
        with atomic_path(root / f"{figure.name}.png") as tmp:
            tmp.write_bytes(figure.png)
        write_text(figure.svg, root / f"{figure.name}.svg")
        write_text(figure.data.write_csv(), root / f"{figure.name}.csv")


def render(figure: MplFigure) -> tuple[bytes, str]:
    """The figure as PNG and SVG, with the settings that make its bytes reproducible."""
    png, svg = io.BytesIO(), io.StringIO()
    figure.savefig(png, format="png", dpi=150, bbox_inches="tight")
    figure.savefig(svg, format="svg", bbox_inches="tight", metadata={"Date": None})
    return png.getvalue(), svg.getvalue()


def svg_data_uri(svg: str) -> str:
    """An SVG as a data: URI, so that a page holding it opens offline."""
    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")


def scope_text(scenarios: int, k: str, subset: str | None) -> str:
    """The scope line of any figure or section: "N = 5 scenarios, K = 1 trial each", after
    "SUBSET: ..." for a run on part of its dataset (`subset`: losona.core.contracts.subset_note).

    The dynamic extension's figure and section say theirs with it too (issue 32).
    """
    trials = "trial" if k == "1" else "trials"
    scope = f"N = {counted(scenarios, 'scenario')}, K = {k} {trials} each"
    if subset is None:
        return scope
    return f"SUBSET: {subset}, not the whole dataset; not comparable with a full run\n{scope}"


def mark_scope(figure: MplFigure, scope: str, subset: str | None) -> None:
    """The scope line over the whole figure, in the report's warning colour for a subset."""
    figure.suptitle(
        scope,
        fontsize=8.5,
        color=SUBSET_COLOUR if subset else "#333333",
        fontweight="bold" if subset else "normal",
    )


# (name, provider model string, display label) of each judge, in the reports' order.
Judge = tuple[str, str, str]


def k_label(results: pl.DataFrame) -> str:
    """K as a figure or table says it: the one K of the rows, else "K" (several)."""
    ks = results["k"].unique().to_list()
    return str(ks[0]) if len(ks) == 1 else "K"


def judge_title(text: str, judge: Judge) -> str:
    """A panel's title, then its judge: label (a test double's marked), model string."""
    # Wrapped, so that a long label (a test double's mark) stays over its own panel.
    return f"{text}\n" + textwrap.fill(f"judge: {judge[2]} ({judge[1]})", width=48)
