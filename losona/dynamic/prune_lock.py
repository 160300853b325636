"""`python -m losona.dynamic.prune_lock`: drop the dvc.lock entries of stages dvc.yaml no
longer has, so that turning the extension off leaves dvc.lock as it was before. DVC never
drops such entries itself (treeverse/dvc#5293), and the lock checks refuse them."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from losona.core.formatting import counted

PIPELINE_FILE = "dvc.yaml"
LOCK_FILE = "dvc.lock"
COMMAND = "python -m losona.dynamic.prune_lock"
DESCRIPTION = (
    f"Drop the {LOCK_FILE} entries of stages {PIPELINE_FILE} no longer has (the dynamic "
    f"extension's, once it is off), so that {LOCK_FILE} is again the one before it was on. "
    "Run it at the project's root; it changes neither outputs nor the cache."
)


def stale_stages(lock: Mapping[str, Any], stages: Iterable[str]) -> list[str]:
    """The stages dvc.lock has an entry for and dvc.yaml does not, in dvc.lock's order."""
    present = set(stages)
    recorded = lock.get("stages") or {}
    return [name for name in recorded if name not in present]


def pipeline_stages(root: Path) -> list[str]:
    """The stage names the pipeline file at `root` defines, matrices expanded, as DVC reads it."""
    from dvc.repo import Repo

    pipeline = (root / PIPELINE_FILE).resolve()
    with Repo(str(root)) as repo:
        return [
            stage.name
            for stage in repo.index.stages
            if getattr(stage, "dvcfile", None) is not None
            and Path(stage.dvcfile.path).resolve() == pipeline
        ]


def prune_lock(root: Path) -> list[str]:
    """Drop the entries of stages dvc.yaml no longer has from dvc.lock; the names dropped."""
    from dvc.utils.serialize import modify_yaml

    lock = root / LOCK_FILE
    if not lock.is_file():
        return []
    stale = stale_stages(
        yaml.safe_load(lock.read_text(encoding="utf-8")) or {}, pipeline_stages(root)
    )
    if stale:  # else dvc.lock is left as it is, not even rewritten
        with modify_yaml(str(lock)) as data:
            for name in stale:
                del data["stages"][name]
    return stale


def main(argv: list[str] | None = None) -> int:
    """Drop the stale entries of dvc.lock here; return the exit status."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=DESCRIPTION)
    _, args = parser.parse_known_args(sys.argv[1:] if argv is None else argv)  # -h: usage
    if args:
        print(f"error: {COMMAND} takes no arguments, found {' '.join(args)}", file=sys.stderr)
        return 2
    root = Path(".")
    if not (root / PIPELINE_FILE).is_file():
        print(f"error: no {PIPELINE_FILE} here: run it at the project's root", file=sys.stderr)
        return 2
    from dvc.exceptions import DvcException

    try:
        dropped = prune_lock(root)
    except DvcException as exc:
        # dvc.yaml or dvc.lock DVC cannot read: nothing was written.
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(
        f"{LOCK_FILE}: dropped {counted(len(dropped), 'entry', 'entries')} of stages "
        f"{PIPELINE_FILE} no longer has: {', '.join(dropped)}"
        if dropped
        else f"{LOCK_FILE}: every entry is a stage of {PIPELINE_FILE}; nothing to drop"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
