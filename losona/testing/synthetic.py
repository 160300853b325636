"""Synthetic scenario sets of any size, for the scale benchmark and its guard test."""

from __future__ import annotations

import polars as pl

from losona.scenarios.datasets import fetch_scenarios


def synthetic_scenarios(n: int) -> pl.DataFrame:
    """N valid scenarios: the bundled set repeated, each copy with its own id and channel, so
    that every prompt, and so every call, is distinct."""
    bundled = fetch_scenarios({"name": "bundled", "kind": "bundled"})
    copies = pl.concat([bundled] * -(-n // bundled.height)).head(n)
    index = pl.int_range(n, eager=True).cast(pl.String).str.zfill(5)
    return copies.with_columns(
        scenario_id=pl.col("scenario_id") + "__synthetic_" + index,
        channel_description=pl.col("channel_description") + " (thread " + index + ")",
    ).sort("scenario_id")
