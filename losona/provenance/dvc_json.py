"""git's and DVC's command lines run in a run's folder, and DVC asked for a JSON answer, or
one clear error."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from losona.core.errors import LosonaError

# DVC as the Python running this has it.
DVC = (sys.executable, "-m", "dvc")


def run_in(root: Path, command: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """A git or DVC command run in `root`, its output as text; its exit status is the caller's."""
    return subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)


def dvc_json(args: Sequence[str], root: Path, expect: type, failure: str) -> Any:
    """`dvc <args> --json` run in `root`, parsed; a LosonaError starting `failure` when DVC
    fails or answers anything but JSON of the `expect` type (what it said, shortened)."""
    done = run_in(root, [*DVC, *args, "--json"])
    try:
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except json.JSONDecodeError:
        found = None
    if not isinstance(found, expect):
        said = " ".join((done.stderr or done.stdout).split())[:400]
        raise LosonaError(f"{failure}: {said}")
    return found
