"""The call store a stage reads, from its run's layout, and what dvc.lock says of its calls."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from losona.core.errors import LosonaError
from losona.core.files import display_path, read_yaml
from losona.core.layout import RunLayout
from losona.models.call_cache import CallStore
from losona.models.published_calls import PublishedCalls

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
    """Where a stage's calls are answered: the user's call cache, with the run's published
    calls (paths.calls) below it; for a replaying layout, the published calls alone."""
    published = layout.calls
    if layout.replaying:
        calls = None if published is None else _published_alone(published, _stamp(published))
        return CallStore(layout.call_cache, calls, offline=True)
    if published is None:  # paths.calls=null: no published layer, on purpose
        return CallStore(layout.call_cache)
    where = display_path(published)
    remedy = (
        f"Get the run's own with `dvc pull {where}` (or `dvc checkout {where}`); to call "
        "the models instead, rerun with paths.calls=null."
    )
    return CallStore(layout.call_cache, PublishedCalls(published, recorded_md5(published), remedy))


def _stamp(path: Path) -> tuple[int, int] | None:
    """What changes when a file is written again: a replay's stages read one file once."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns


@functools.lru_cache(maxsize=1)
def _published_alone(path: Path, stamp: tuple[int, int] | None) -> PublishedCalls:
    # Its bytes are held against dvc.lock by reproduce's own check, not here.
    return PublishedCalls(path, None, remedy=f"get the run's own with `dvc pull {path}`")
