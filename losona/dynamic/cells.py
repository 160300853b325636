"""The dynamic turn's cells as dynamic_aggregate reads them, and the check that a cell's
replies or verdicts answer its rendered prompts one for one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from losona.core.cell_tables import check_cell_columns
from losona.core.errors import LosonaError
from losona.core.files import display_path, read_parquet
from losona.core.layout import RunLayout
from losona.dynamic.arms import OK
from losona.dynamic.tables import DYNAMIC_PROMPT_SCHEMA, DYNAMIC_VERDICT_SCHEMA

# A first-turn trial in one arm.
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
            place = {"subject_model": model, "condition": condition}
            prompts = layout.dynamic_prompts(judge, model, condition)
            verdicts = layout.dynamic_verdicts(judge, model, condition)
            cells.append(
                Cell(
                    model,
                    condition,
                    _read(prompts, DYNAMIC_PROMPT_SCHEMA, "dynamic_render", place),
                    _read(verdicts, DYNAMIC_VERDICT_SCHEMA, "dynamic_judge", place),
                )
            )
    return cells


def _read(path: Path, schema: pl.Schema, made_by: str, place: dict[str, str]) -> pl.DataFrame:
    table = read_parquet(path, schema, made_by=made_by)
    if table.height:  # a cell whose every trial was left out has no verdicts
        check_cell_columns(table, display_path(path), place, made_by)
    return table


def check_one_for_one(
    prompts: pl.DataFrame,
    answers: pl.DataFrame,
    *,
    where: str,
    what: str,
    rerun: str,
    same: Sequence[str] = (),
) -> None:
    """Refuse `answers` (replies or verdicts: `what`) that do not match a cell's rendered
    prompts one for one on KEY, and agree with them on the columns `same`."""
    joined = (
        prompts.filter(pl.col("status") == OK)
        .select(*KEY, *same, prompt=pl.lit(True))
        .join(
            answers.select(*KEY, *same, answer=pl.lit(True)),
            on=KEY,
            how="full",
            coalesce=True,
            suffix="_answer",
        )
    )
    problem = (
        pl.when(pl.col("answer").is_null())
        .then(pl.lit(f"a prompt without a {what}"))
        .when(pl.col("prompt").is_null())
        .then(pl.lit(f"a {what} without a prompt"))
    )
    for column in same:
        problem = problem.when(pl.col(column).ne_missing(pl.col(f"{column}_answer"))).then(
            pl.lit(f"a {what} to another prompt")
        )
    unmatched = joined.select(*KEY, problem=problem).drop_nulls("problem")
    if not unmatched.is_empty():
        row = unmatched.sort(KEY).row(0, named=True)
        raise LosonaError(
            f"{where}: scenario '{row['scenario_id']}', trial {row['trial']}, arm "
            f"'{row['arm']}' has {row['problem']}; rerun {rerun}"
        )
