"""A board's own files, its maintainers' (never a submission's): its submissions
(board/submissions.yaml) and its settings (board/params.yaml), read strictly; and where
each of its outputs lives."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from losona.core.errors import LosonaError
from losona.core.files import read_yaml

SUBMISSIONS_FILE = Path("submissions.yaml")
PARAMS_FILE = Path("params.yaml")
# A submission's name names its files and its DVC stage (verify@<name>).
NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
ENTRY_KEYS = {"repo", "rev", "remote"}


@dataclass(frozen=True)
class Submission:
    """One run on the board: its git repository (URL or path), the revision, and the DVC
    remote to fetch its outputs from (None: the run's own default remote)."""

    name: str
    repo: str
    rev: str
    remote: str | None = None


@dataclass(frozen=True)
class VerifySettings:
    """How far the board goes for one submission."""

    max_file_bytes: int  # any one file of the run, from git or the remote
    timeout_s: int  # the recheck of one run, all stages together


@dataclass(frozen=True)
class BoardFiles:
    """Where a board writes, relative to its folder (board/)."""

    root: Path = Path(".")

    def rows(self, name: str) -> Path:
        return self.root / "rows" / f"{name}.parquet"

    def verify_report(self, name: str) -> Path:
        return self.root / "reports" / "verify" / f"{name}.json"

    @property
    def board(self) -> Path:
        return self.root / "reports" / "board.parquet"

    @property
    def page(self) -> Path:
        return self.root / "reports" / "index.html"

    @property
    def metrics(self) -> Path:
        return self.root / "reports" / "metrics.json"


def read_submissions(path: Path = SUBMISSIONS_FILE) -> dict[str, Submission]:
    """Every submission of the board, by name, each entry checked."""
    node = read_yaml(path)
    entries = node.get("submissions") if isinstance(node, dict) else None
    if not isinstance(entries, dict):
        raise LosonaError(
            f"{path}: 'submissions': expected a mapping of names to entries, found {entries!r}"
        )
    return {name: _submission(path, name, entry) for name, entry in entries.items()}


def _submission(path: Path, name: Any, entry: Any) -> Submission:
    where = f"{path}: 'submissions.{name}'"
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise LosonaError(
            f"{where}: expected a name of lower-case letters, digits, - and _, found {name!r}"
        )
    if not isinstance(entry, dict) or not {"repo", "rev"} <= entry.keys():
        raise LosonaError(f"{where}: expected a mapping with repo and rev, found {entry!r}")
    unknown = sorted(set(entry) - ENTRY_KEYS)
    if unknown:
        raise LosonaError(f"{where}: expected only {sorted(ENTRY_KEYS)}, found {unknown}")
    for key in sorted(entry):
        value = entry[key]
        if not isinstance(value, str) or not value or value.startswith("-"):
            raise LosonaError(
                f"{path}: 'submissions.{name}.{key}': expected a non-empty string not "
                f"starting with -, found {value!r}"
            )
    return Submission(name, entry["repo"], entry["rev"], entry.get("remote"))


def read_settings(path: Path = PARAMS_FILE) -> VerifySettings:
    """The board's verify settings (params.yaml, `verify:`)."""
    node = read_yaml(path)
    verify = node.get("verify") if isinstance(node, dict) else None
    values = {}
    for key in ("max_file_mb", "timeout_s"):
        value = verify.get(key) if isinstance(verify, dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise LosonaError(
                f"{path}: 'verify.{key}': expected a positive whole number, found {value!r}"
            )
        values[key] = value
    return VerifySettings(values["max_file_mb"] << 20, values["timeout_s"])
