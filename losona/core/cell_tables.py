"""The one check that a table read for one cell of the sweep is that cell's table: a file
copied to the wrong place, or two cells' rows written into one, is refused, naming the file,
the column or the scenario, and the stage to rerun."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from losona.core.errors import LosonaError


def check_cell_columns(
    table: pl.DataFrame, origin: str, cell: Mapping[str, str], rerun: str
) -> None:
    """Refuse a table whose cell columns hold anything but the cell's values (`cell`: column
    to value); `rerun` is the stage that writes it."""
    for column, expected in cell.items():
        found = sorted(table[column].unique().to_list(), key=str)
        if found != [expected]:
            raise LosonaError(
                f"{origin}: column '{column}' holds {found}, expected only '{expected}'; "
                f"rerun {rerun}"
            )


def check_cell_table(
    table: pl.DataFrame,
    origin: str,
    *,
    cell: Mapping[str, str],
    rows: str,
    rerun: str,
    rerun_duplicates: str | None = None,
) -> None:
    """Refuse a table that is not one cell's: empty, another cell's rows, a trial twice;
    `rows` names what the rows are, `rerun_duplicates` what mends a trial written twice."""

    if table.is_empty():
        raise LosonaError(f"{origin}: holds no {rows}; rerun {rerun}")
    check_cell_columns(table, origin, cell, rerun)
    duplicated = table.filter(pl.struct("scenario_id", "trial").is_duplicated())
    if not duplicated.is_empty():
        first = duplicated.sort("scenario_id", "trial").row(0, named=True)
        raise LosonaError(
            f"{origin}: scenario '{first['scenario_id']}' has trial {first['trial']} more than "
            f"once; rerun {rerun_duplicates or rerun}"
        )
