"""`python -m losona.reproduce`: compose the run's paths and settings, check it, print
what differs, and return the exit status (docs/reproducing.md).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from losona.core.cli import USER_ERROR_EXIT, overrides_parser
from losona.core.config import compose_config, compose_paths
from losona.core.errors import LosonaError
from losona.core.formatting import counted
from losona.core.layout import RunLayout
from losona.pipeline.command import ComposedSettings
from losona.reproduce.checks import check_run
from losona.reproduce.compare import Check

DIFFERENCE_EXIT = 3
DESCRIPTION = (
    "Check the run in this repository: every stage from render on runs again from the "
    "run's own files, with no model call, and what it writes is compared value by value "
    "with the run's files. Exit 0: every value matches; 3: a value differs (each one is "
    "named); 2: the run cannot be checked (docs/reproducing.md)."
)
SHOWN = 40  # differences printed before "... and N more"


def report(check: Check, out: Callable[[str], None] = print) -> None:
    """What was checked, what differs (the first SHOWN), and what was not rechecked."""
    for note in check.notes:
        out(f"note: {note}")
    for difference in check.differences[:SHOWN]:
        out(f"differs: {difference}")
    if len(check.differences) > SHOWN:
        out(f"differs: ... and {len(check.differences) - SHOWN} more")
    verdict = (
        "every value matches"
        if check.ok
        else f"{len(check.differences)} differ (expected: recomputed; found: on disk)"
    )
    files = counted(len(check.files), "file")
    out(f"reproduce: {check.values:,} values in {files} checked; {verdict}")


def main(argv: Sequence[str] | None = None) -> int:
    """Check the run in the working directory; return the exit status."""
    parser = overrides_parser("python -m losona.reproduce", DESCRIPTION)
    overrides = parser.parse_args(argv).overrides
    try:
        # The dynamic turn's settings are the repository's: a run's record does not hold them.
        cfg = compose_config(overrides)
        check = check_run(RunLayout(compose_paths(overrides, cfg)), ComposedSettings(cfg))
    except LosonaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    report(check)
    return 0 if check.ok else DIFFERENCE_EXIT
