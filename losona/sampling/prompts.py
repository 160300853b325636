"""The prompts sample reads: render's, for the conditions asked; or, for a dry run before
render has run, the same prompts rendered in memory (nothing written)."""

from __future__ import annotations

from collections.abc import Callable

import polars as pl

from losona.core.config import DatasetConfig, origin_of
from losona.core.contracts import PROMPT_SCHEMA, SCENARIO_SCHEMA
from losona.core.files import read_parquet
from losona.core.layout import RunLayout
from losona.prompts.render import render_prompts
from losona.scenarios.datasets import fetch_scenarios

# The dataset's config, read only by a dry run before fetch has written the scenario table.
DatasetSource = Callable[[], DatasetConfig]


def condition_rows(layout: RunLayout, conditions: list[str]) -> pl.DataFrame:
    """Render's prompts of these conditions; all of them when it has none, to say which it has."""
    prompts = read_parquet(
        layout.prompts, PROMPT_SCHEMA, made_by="render", where=pl.col("condition").is_in(conditions)
    )
    if prompts.is_empty():
        prompts = read_parquet(layout.prompts, PROMPT_SCHEMA, made_by="render")
    return prompts


def dry_run_prompts(
    layout: RunLayout, conditions: list[str], dataset: DatasetSource
) -> pl.DataFrame:
    """The prompts a dry run prices: render's, or before render has run, rendered in memory
    by the code fetch and render run (`dataset` is read only then)."""
    if layout.prompts.is_file():
        return condition_rows(layout, conditions)
    if layout.scenarios.is_file():
        scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
        source = str(layout.scenarios)
    else:
        config = dataset()
        scenarios = fetch_scenarios(config, origin=origin_of)
        source = f"the dataset '{config.name or config.kind}'"
    print(
        f"sample (dry run): no {layout.prompts} yet, so the prompts are rendered in memory "
        f"from {source}; nothing is written"
    )
    return render_prompts(scenarios, conditions)
