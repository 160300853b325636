"""The one check of dvc.lock: every output file against the md5 it records, and dvc.lock
against the one committed at git HEAD.

`python -m losona.publishable` (before a run is published) and `python -m losona.reproduce`
(when a published run is checked) both read it from here, so neither passes a run whose
files the other finds are not the recorded, committed run.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from losona.models.call_store import LOCK_FILE, lock_outputs
from losona.models.published_calls import md5_file
from losona.provenance.dvc_json import run_in

MISSING = "(missing)"


@dataclass(frozen=True)
class Drift:
    """An output whose md5 is not the one expected of it."""

    path: str
    expected: str
    found: str


@dataclass(frozen=True)
class LockCheck:
    """What dvc.lock says of the files on disk, and of itself against git HEAD's."""

    compared: int  # output files held against their recorded md5 (folders are dvc status's)
    drifted: tuple[Drift, ...]  # output files whose bytes are not what dvc.lock records
    committed_outputs: int | None  # outputs HEAD's dvc.lock records; None: no committed lock
    # Outputs this dvc.lock records otherwise than HEAD's: the run was recomputed since.
    recomputed: tuple[Drift, ...]
    lock_changed: bool  # dvc.lock's text differs from HEAD's (recorded inputs, at least)


def committed_lock(root: Path = Path(".")) -> str | None:
    """dvc.lock as committed at git HEAD, None outside a git work tree or without one."""
    try:
        shown = run_in(root, ["git", "show", f"HEAD:./{LOCK_FILE.as_posix()}"])
    except OSError:  # no git on this machine: there is no commit to compare with
        return None
    return shown.stdout if shown.returncode == 0 else None


def check_lock(root: Path = Path(".")) -> LockCheck | None:
    """dvc.lock held against the files and against git HEAD; None without a dvc.lock."""
    lock = root / LOCK_FILE
    if not lock.is_file():
        return None
    text = lock.read_text(encoding="utf-8")
    recorded = lock_outputs(yaml.safe_load(text), LOCK_FILE)
    files = {path: md5 for path, md5 in sorted(recorded.items()) if not md5.endswith(".dir")}
    drifted = tuple(
        Drift(path, md5, found)
        for path, md5 in files.items()
        if (found := md5_file(root / path) if (root / path).is_file() else MISSING) != md5
    )
    committed = committed_lock(root)
    if committed is None or committed == text:
        counted = None if committed is None else len(recorded)
        return LockCheck(len(files), drifted, counted, (), lock_changed=False)
    published = lock_outputs(yaml.safe_load(committed), f"{LOCK_FILE} at git HEAD")
    recomputed = tuple(
        Drift(path, published.get(path, MISSING), recorded.get(path, MISSING))
        for path in sorted(set(published) | set(recorded))
        if published.get(path) != recorded.get(path)
    )
    return LockCheck(len(files), drifted, len(published), recomputed, True)
