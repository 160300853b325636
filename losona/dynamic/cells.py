"""The dynamic turn's cells as dynamic_aggregate reads them: each model x condition's prompt
and verdict tables, checked against their place."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import polars as pl

from losona.core.errors import LosonaError
from losona.core.files import display_path, read_parquet
from losona.core.layout import RunLayout
from losona.dynamic.tables import (
    DYNAMIC_PROMPT_SCHEMA,
    DYNAMIC_VERDICT_SCHEMA,
)

# The columns that name a cell, and a trial of it in one arm.
CELL = ["judge", "subject_model", "condition"]
KEY = ["scenario_id", "trial", "arm"]


@dataclass(frozen=True)
class Cell:
    """One model x condition's second turn: every first-turn trial's rows, and the verdicts."""

    model: str
    condition: str
    prompts: pl.DataFrame  # DYNAMIC_PROMPT_SCHEMA
    verdicts: pl.DataFrame  # DYNAMIC_VERDICT_SCHEMA


def load_cells(
    layout: RunLayout, judge: str, models: Sequence[str], conditions: Sequence[str]
) -> list[Cell]:
    """Every cell's prompt and verdict tables, each checked against its place."""
    cells = []
    for model in models:
        for condition in conditions:
            tables = []
            for path, schema, made_by in (
                (
                    layout.dynamic_prompts(judge, model, condition),
                    DYNAMIC_PROMPT_SCHEMA,
                    "dynamic_render",
                ),
                (
                    layout.dynamic_verdicts(judge, model, condition),
                    DYNAMIC_VERDICT_SCHEMA,
                    "dynamic_judge",
                ),
            ):
                df = read_parquet(path, schema, made_by=made_by)
                for column, expected in (("subject_model", model), ("condition", condition)):
                    found = sorted(df[column].unique().to_list(), key=str)
                    if df.height and found != [expected]:
                        raise LosonaError(
                            f"{display_path(path)}: column '{column}' holds {found}, but the "
                            f"file's place says '{expected}'; rerun {made_by}"
                        )
                tables.append(df)
            cells.append(Cell(model, condition, tables[0], tables[1]))
    return cells
