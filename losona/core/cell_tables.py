"""The one check that a table read for one cell of the sweep is that cell's table.

A responses or verdicts file is named after its cell (model, condition, judge), but its
rows say whose they are: a file copied to the wrong place, or rows of two cells written
into one, would otherwise be read as the cell's own. So every stage that reads one cell's
table asks here first: rows there are, every cell column holds only the cell's value, and
no scenario has a trial twice. Each refusal names the file, the column or the scenario,
and the stage to rerun.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from losona.core.errors import LosonaError


def check_cell_table(
    table: pl.DataFrame,
    origin: str,
    *,
    cell: Mapping[str, str],
    rows: str,
    rerun: str,
    rerun_duplicates: str | None = None,
) -> None:
    """Refuse a table that is not one cell's: empty, another cell's rows, a trial twice.

    `cell` maps each cell column to the cell's value; `rows` names what the rows are
    ("responses"); `rerun` is the stage that writes the table, `rerun_duplicates` what
    mends a trial written twice (default: `rerun`).
    """
    if table.is_empty():
        raise LosonaError(f"{origin}: holds no {rows}; rerun {rerun}")
    for column, expected in cell.items():
        found = sorted(table[column].unique().to_list(), key=str)
        if found != [expected]:
            raise LosonaError(
                f"{origin}: column '{column}' holds {found}, expected only '{expected}'; "
                f"rerun {rerun}"
            )
    duplicated = table.filter(pl.struct("scenario_id", "trial").is_duplicated())
    if not duplicated.is_empty():
        first = duplicated.sort("scenario_id", "trial").row(0, named=True)
        raise LosonaError(
            f"{origin}: scenario '{first['scenario_id']}' has trial {first['trial']} more than "
            f"once; rerun {rerun_duplicates or rerun}"
        )
