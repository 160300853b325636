"""What each cell of a run cost, as the report shows it: only the facts that are the same on
every rerun (calls, tokens, list cost, from the calls files), so that a warm rerun writes the
report byte for byte; what differs between runs is in the run logs (run_logs.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from losona.core.contracts import CALL_SCHEMA
from losona.core.files import read_parquet
from losona.core.layout import CONTROLS_CALLS, JUDGE_CALLS, SAMPLE_CALLS
from losona.judges.verdicts import CELL
from losona.pages import Section, section


def cell_calls(calls_dir: str | Path) -> pl.DataFrame:
    """Per cell: the calls its table was built from, their tokens and list cost; in order."""
    root = Path(calls_dir)
    rows = []
    for kind, pattern in (
        (SAMPLE_CALLS, "*/*.parquet"),
        (JUDGE_CALLS, "*/*/*.parquet"),
        (CONTROLS_CALLS, "*.parquet"),
    ):
        for path in sorted((root / kind).glob(pattern)):
            parts = path.relative_to(root / kind).with_suffix("").parts
            calls = read_parquet(path, CALL_SCHEMA, made_by=kind)
            judge, model, condition = {
                SAMPLE_CALLS: (None, *parts),
                JUDGE_CALLS: tuple(parts),
                CONTROLS_CALLS: (parts[0], None, None),
            }[kind]
            rows.append(
                {
                    "stage": kind,
                    "judge": judge,
                    "subject_model": model,
                    "condition": condition,
                    "calls": calls.height,
                    "prompt_tokens": int(calls["prompt_tokens"].sum()),
                    "completion_tokens": int(calls["completion_tokens"].sum()),
                    "cost_usd": float(calls["cost_usd"].sum()),
                }
            )
    return pl.DataFrame(
        rows,
        schema={
            "stage": pl.String(),
            "judge": pl.String(),
            "subject_model": pl.String(),
            "condition": pl.String(),
            "calls": pl.Int64(),
            "prompt_tokens": pl.Int64(),
            "completion_tokens": pl.Int64(),
            "cost_usd": pl.Float64(),
        },
    )


def facts_section(calls: pl.DataFrame, labels: Mapping[str, str]) -> Section:
    """The report's "Run facts": each cell's calls, tokens and list cost (rerun-proof), in the
    reports' order: `labels` lists names as results.csv does."""

    order = {name: i for i, name in enumerate(labels)}

    def rank(name: str | None) -> tuple[int, str]:
        return (order.get(name, len(order)), name or "") if name else (-1, "")

    stages = {SAMPLE_CALLS: 0, JUDGE_CALLS: 1, CONTROLS_CALLS: 2}
    ordered = sorted(
        calls.iter_rows(named=True), key=lambda r: (stages[r["stage"]], [rank(r[k]) for k in CELL])
    )

    rows = [
        {
            "cell": cell_name(r, labels),
            "calls": f"{r['calls']:,}",
            "prompt_tokens": f"{r['prompt_tokens']:,}",
            "completion_tokens": f"{r['completion_tokens']:,}",
            "cost": f"{r['cost_usd']:.4f}",
        }
        for r in ordered
    ]
    total = {
        "calls": f"{int(calls['calls'].sum()):,}",
        "prompt_tokens": f"{int(calls['prompt_tokens'].sum()):,}",
        "completion_tokens": f"{int(calls['completion_tokens'].sum()):,}",
        "cost": f"{float(calls['cost_usd'].sum()):.4f}",
    }
    return section("facts", "Run facts", "report/facts.html", rows=rows, total=total)


def display_names(results: pl.DataFrame) -> dict[str, str]:
    """Each model's, condition's and judge's display label, by config name, in the order
    results.csv names them (the sweep's)."""
    return {
        name: label
        for names, labels in (
            ("subject_model", "model_label"),
            ("condition", "condition_label"),
            ("judge", "judge_label"),
        )
        for name, label in results.select(names, labels).iter_rows()
    }


def cell_name(row: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """A cell as a reader names it, e.g. "sample: SmolLM2 / Naive"; labels by config name."""

    def shown(name: str) -> str:
        return labels.get(name, name)

    if row["stage"] == SAMPLE_CALLS:
        return f"sample: {shown(row['subject_model'])} / {shown(row['condition'])}"
    if row["stage"] == JUDGE_CALLS:
        return (
            f"judge {shown(row['judge'])}: {shown(row['subject_model'])} / "
            f"{shown(row['condition'])}"
        )
    return f"validity controls: {shown(row['judge'])}"
