"""A run's calls, published with it: the calls stage's merge of the cells' calls files.

The merged file is what every paying stage reads below the user's call cache. It must be
a file of its own stage: DVC deletes a stage's outputs before rerunning it, so under
`dvc repro --force` a cell's own calls file is gone when the cell reruns.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from losona.core.contracts import CALL_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import display_path
from losona.models import read_calls


def merge_calls(files: Sequence[Path]) -> pl.DataFrame:
    """The calls of every file, each key once, sorted; a key answered two ways is refused."""
    tables = []
    for path in files:
        if not path.is_file():
            raise LosonaError(
                f"{display_path(path)} not found: run the stage of that cell first (dvc repro)"
            )
        remedy = "rerun the stage that writes it (dvc repro --force <stage>)"
        tables.append(read_calls(path, remedy).with_columns(pl.lit(str(path)).alias("_file")))
    if not tables:
        return pl.DataFrame(schema=CALL_SCHEMA)
    every = pl.concat(tables)
    distinct = every.unique(subset=CALL_SCHEMA.names(), keep="first", maintain_order=True)
    clash = distinct.filter(pl.col("key").is_duplicated()).sort("key", "_file")
    if not clash.is_empty():
        key, files_ = clash["key"][0], clash.filter(pl.col("key") == clash["key"][0])["_file"]
        raise LosonaError(
            f"call {key} has different answers in {display_path(files_[0])} and "
            f"{display_path(files_[1])}: the cells were built from different calls (two "
            "machines made the same call?); rerun one of them from the other's calls"
        )
    return distinct.drop("_file").sort("key")
