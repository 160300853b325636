"""The verdict files a run leaves (`<judge>/<model>/<condition>.parquet`), read, and checked
to form one complete run over the scenario table before any number is computed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from losona.core.cell_tables import check_cell_columns
from losona.core.contracts import VERDICT_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import display_path, read_parquet, run_first
from losona.core.formatting import counted, first_of

# A verdict's cell: (judge, subject_model, condition), the unit every metric is grouped by.
CELL = ["judge", "subject_model", "condition"]
Cell = tuple[str, str, str]


def load_verdicts(verdicts_dir: str | Path) -> pl.DataFrame:
    """Every `<judge>/<model>/<condition>.parquet` under `verdicts_dir` in one table, each
    checked against its place."""
    root = Path(verdicts_dir)
    if not root.is_dir():
        raise LosonaError(f"{root} not found: {run_first('judge')}")
    frames = []
    for path in sorted(root.glob("*/*/*.parquet")):
        judge, model, _ = parts = path.relative_to(root).parts
        if any(part.startswith(".") for part in parts):
            continue  # an atomic write in progress, or an editor's file
        df = read_parquet(path, VERDICT_SCHEMA, made_by="judge")
        if df.is_empty():
            raise LosonaError(f"{display_path(path)}: no verdicts in the file; rerun judge")
        cell = dict(zip(CELL, (judge, model, path.stem), strict=True))
        check_cell_columns(df, display_path(path), cell, "judge")
        frames.append(df)
    if not frames:
        raise LosonaError(
            f"{root} holds no verdict files (<judge>/<model>/<condition>.parquet): "
            + run_first("judge")
        )
    return pl.concat(frames)


def check_verdicts(verdicts: pl.DataFrame, scenarios: pl.DataFrame) -> None:
    """Refuse verdicts that do not form one complete run over the scenario table."""
    for column in ("scenario_id", "event_type", "norm_id", "trial", *CELL):
        if verdicts[column].null_count():
            raise LosonaError(f"verdicts: column '{column}' has empty values; rerun judge")
    _check_scenarios(verdicts, scenarios)
    _check_trials(verdicts, set(scenarios["scenario_id"]))
    _check_grid(verdicts)


def _check_scenarios(verdicts: pl.DataFrame, scenarios: pl.DataFrame) -> None:
    """Every verdict names a scenario of the table, with the table's event and norm."""
    expected = scenarios.select(
        "scenario_id", table_event="event_type", table_norm="norm_id"
    ).unique("scenario_id")
    named = (
        verdicts.select("scenario_id", "event_type", "norm_id", *CELL)
        .unique()
        .join(expected, on="scenario_id", how="left")
        .sort(pl.all())
    )
    unknown = named.filter(pl.col("table_event").is_null())
    if not unknown.is_empty():
        row = unknown.row(0, named=True)
        raise LosonaError(
            f"verdicts of {_cell_name(cell_of(row))} name scenario '{row['scenario_id']}', "
            "which is not in the scenario table: they come from another scenario set; "
            "rerun sample and judge"
        )
    differing = named.filter(
        (pl.col("event_type") != pl.col("table_event"))
        | (pl.col("norm_id") != pl.col("table_norm"))
    )
    if not differing.is_empty():
        row = differing.row(0, named=True)
        raise LosonaError(
            f"verdicts of {_cell_name(cell_of(row))}, scenario '{row['scenario_id']}': "
            f"event_type/norm_id are {row['event_type']}/{row['norm_id']}, the scenario "
            f"table says {row['table_event']}/{row['table_norm']}"
        )


def _check_trials(verdicts: pl.DataFrame, scenario_ids: set[str]) -> None:
    """Each cell covers every scenario with the same number K of distinct trials."""
    duplicated = verdicts.filter(pl.struct("scenario_id", "trial", *CELL).is_duplicated())
    if not duplicated.is_empty():
        row = duplicated.sort(pl.all()).row(0, named=True)
        raise LosonaError(
            f"verdicts of {_cell_name(cell_of(row))}, scenario '{row['scenario_id']}': "
            f"trial {row['trial']} appears more than once; rerun judge"
        )
    per_scenario = verdicts.group_by(*CELL, "scenario_id").agg(trials=pl.len())
    for counts in per_scenario.partition_by(CELL):
        where = _cell_name(cell_of(counts.row(0, named=True)))
        missing = sorted(scenario_ids - set(counts["scenario_id"]))
        if missing:
            raise LosonaError(
                f"verdicts of {where} miss {len(missing)} of {len(scenario_ids)} "
                f"scenarios ({first_of(missing, 3)}); rerun sample and judge for that cell"
            )
        if counts["trials"].n_unique() > 1:
            ordered = counts.sort("trials", "scenario_id")
            short, most = ordered.row(0, named=True), ordered.row(-1, named=True)
            raise LosonaError(
                f"verdicts of {where}: scenario '{short['scenario_id']}' has "
                f"{counted(short['trials'], 'trial')} where others have {most['trials']}; "
                "a trial is missing: rerun sample and judge for that cell"
            )


def _check_grid(verdicts: pl.DataFrame) -> None:
    """Every judge scored every model under every condition."""
    cells: set[Cell] = set(verdicts.select(CELL).unique().iter_rows())
    judges, models, conditions = (sorted({c[i] for c in cells}) for i in range(3))
    for cell in ((j, m, c) for j in judges for m in models for c in conditions):
        if cell not in cells:
            raise LosonaError(
                f"no verdicts for {_cell_name(cell)}, though the run has judges {judges}, "
                f"models {models} and conditions {conditions}: every judge must score "
                "every model under every condition so the reports compare like with like"
            )


def judge_model(verdicts: pl.DataFrame, judge: str) -> str:
    """What decided a judge's verdicts, as reports name it: its `judge_model` strings, joined."""
    models = verdicts.filter(pl.col("judge") == judge)["judge_model"]
    return ", ".join(models.drop_nulls().unique().sort())


def cell_of(row: Mapping[str, Any]) -> Cell:
    """The cell of a row that has judge, subject_model and condition columns."""
    return (row["judge"], row["subject_model"], row["condition"])


def _cell_name(cell: Cell) -> str:
    judge, model, condition = cell
    return f"judge '{judge}', model '{model}', condition '{condition}'"
