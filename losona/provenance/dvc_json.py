"""Asking DVC through its own command line for a JSON answer, or one clear error."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from losona.core.errors import LosonaError


def dvc_json(args: Sequence[str], root: Path, expect: type, failure: str) -> Any:
    """`dvc <args> --json` run in `root`, parsed; a LosonaError starting `failure` when DVC
    fails or answers anything but JSON of the `expect` type (what it said, shortened)."""
    done = subprocess.run(
        [sys.executable, "-m", "dvc", *args, "--json"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        found = json.loads(done.stdout) if done.returncode == 0 else None
    except json.JSONDecodeError:
        found = None
    if not isinstance(found, expect):
        said = " ".join((done.stderr or done.stdout).split())[:400]
        raise LosonaError(f"{failure}: {said}")
    return found
