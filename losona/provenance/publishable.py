"""Is this run fit to publish? Only when `dvc status` is clean: every stage up to date.

    python -m losona.publishable        # in the run's repository root, before git commit

A run whose status is not clean is not the run its files say: a config, a param or an
output changed after the stage that uses it last ran, and whoever checks it out reads
`changed deps` in their own `dvc status` (docs/reproducing.md, "Publish a run"). This
refuses such a run, exit 3, naming each stage and each changed file; where DVC names only
a folder (conf/condition, say), the files git sees changed in it. Exit 0 when the run is
clean, 2 when there is no DVC pipeline here or DVC cannot say.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from losona.cli import USER_ERROR_EXIT
from losona.errors import LosonaError
from losona.provenance.dvc_json import dvc_json

NOT_CLEAN_EXIT = 3  # as reproduce's "a value differs"


def dvc_status(root: Path = Path(".")) -> dict[str, list[Any]]:
    """`dvc status --json` of the pipeline in `root`: each stage that is not up to date."""
    if not (root / "dvc.yaml").is_file():
        raise LosonaError(f"no dvc.yaml in {root.resolve()}: run this in the run's repository root")
    status: dict[str, list[Any]] = dvc_json(
        ["status"], root, dict, "dvc status could not say whether the run is up to date"
    )
    return status


def changed_in(folder: str, root: Path = Path(".")) -> list[str]:
    """The files git sees changed in a folder (new, modified, deleted), as 'path (how)'."""
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "--", folder],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return []
    how = {"??": "new", "M": "modified", "A": "added", "D": "deleted", "R": "renamed"}
    found = []
    for line in done.stdout.splitlines():
        code, path = line[:2].strip(), line[3:]
        found.append(f"{path} ({how.get(code, how.get(code[:1], code))})")
    return found


def describe(status: Mapping[str, Sequence[Any]], root: Path = Path(".")) -> list[str]:
    """One line per stage that is not up to date, naming what changed."""
    lines = []
    for stage, changes in status.items():
        parts = []
        for change in changes:
            if isinstance(change, str):  # "changed checksum", "always changed", ...
                parts.append(change)
                continue
            for kind, paths in change.items():
                named = []
                for path, how in paths.items():
                    if isinstance(how, dict):  # params: each key and how it changed
                        keys = ", ".join(f"{key} {what}" for key, what in how.items())
                        named.append(f"{path} ({keys})")
                    elif (root / path).is_dir():
                        inside = changed_in(path, root)
                        files = f"; in it, git sees {', '.join(inside)}" if inside else ""
                        named.append(f"{path} ({how}, a folder{files})")
                    else:
                        named.append(f"{path} ({how})")
                parts.append(f"{kind}: {', '.join(named)}")
        lines.append(f"{stage}: {'; '.join(parts)}")
    return lines


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Say whether the run here may be published; the exit status says it too."""
    del argv  # no options: the run is the repository in the working directory
    try:
        status = dvc_status()
    except LosonaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    if not status:
        out("publishable: yes. dvc status is clean: every stage is up to date with its inputs.")
        return 0
    out(
        f"publishable: no. dvc status is not clean: {len(status)} stage(s) are not up to date "
        "with what they read, so the files are not the run they claim to be:"
    )
    for line in describe(status):
        out(f"  {line}")
    out(
        "Rerun them (dvc repro), or undo the change (git checkout -- <file>; a new file the "
        "sweep does not need: move it out of the folder), then check again."
    )
    return NOT_CLEAN_EXIT
