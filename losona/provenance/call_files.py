"""A run's calls, published with it: the call store stages read, and the calls stage's merge.

Each sample, judge and judge_controls stage writes the calls its table was built from
beside it, under paths.calls_dir (one file per cell, where losona/layout.py puts it: a DVC
output of that stage, so it travels with the cell through `dvc push`, `dvc pull` and DVC's
run cache). The calls stage merges them into one file, paths.calls, at the end of the
pipeline.

Every stage that calls a model reads that merged file as a read-only layer below the
user's call cache. It has to be a file of its own stage: DVC deletes a stage's outputs
before it runs the stage, so during `dvc repro --force` a cell's own calls file is gone
when the cell reruns, while the merged file is only deleted when the calls stage, last,
rewrites it from the cells' files, with the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from losona.contracts import CALL_SCHEMA
from losona.errors import LosonaError
from losona.files import display_path, read_yaml
from losona.layout import RunLayout
from losona.models import CallStore, PublishedCalls, read_calls

# DVC's record of the last run, in the repository root (the working directory of a stage).
LOCK_FILE = Path("dvc.lock")


def lock_outputs(record: Any, origin: str | Path = LOCK_FILE) -> dict[str, str]:
    """Every output a dvc.lock records (as read from YAML), with its md5, by path."""
    stages = record.get("stages") if isinstance(record, dict) else None
    if not isinstance(stages, dict):
        raise LosonaError(f"{origin}: no 'stages' mapping; is it DVC's lock file?")
    found = {}
    for stage in stages.values():
        for entry in (stage or {}).get("outs") or []:
            if isinstance(entry, dict) and "path" in entry:
                md5 = entry.get("md5")
                if not isinstance(md5, str):
                    raise LosonaError(f"{origin}: the entry of {entry['path']} has no md5")
                found[str(entry["path"])] = md5
    return found


def recorded_md5(out: str | Path, lock: Path = LOCK_FILE) -> str | None:
    """The MD5 dvc.lock records for an output of the pipeline, or None if it records none."""
    if not lock.is_file():
        return None
    return lock_outputs(read_yaml(lock), lock).get(Path(out).as_posix())


def call_store(layout: RunLayout) -> CallStore:
    """The user's call cache, with the run's published calls (paths.calls) below it."""
    published = layout.calls
    if published is None:  # paths.calls=null: no published layer, on purpose
        return CallStore(layout.call_cache)
    where = display_path(published)
    remedy = (
        f"Get the run's own with `dvc pull {where}` (or `dvc checkout {where}`); to call "
        "the models instead, rerun with paths.calls=null."
    )
    return CallStore(layout.call_cache, PublishedCalls(published, recorded_md5(published), remedy))


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
