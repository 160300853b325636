"""A command's own peak memory: `python -m losona.testing.peak OUT -- COMMAND...`.

On Linux a child's peak resident memory starts at its parent's (exec keeps the peak), so a
child of pytest or a benchmark peaks at no less than them. This starts the command from a
small process of its own, writes its peak resident memory in KiB to OUT, and exits with the
command's status.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

USAGE = "usage: python -m losona.testing.peak OUT -- COMMAND..."


def main(argv: list[str]) -> int:
    """Run the command after `--`; write its peak RSS (KiB) to the file before it."""
    if argv in (["-h"], ["--help"]):
        print(f"{USAGE}\n\n{__doc__}")
        return 0
    if len(argv) < 3 or argv[1] != "--":
        print(USAGE, file=sys.stderr)
        return 2
    out, command = Path(argv[0]), argv[2:]
    child = subprocess.Popen(command)
    # wait4: this child's own accounting (RUSAGE_CHILDREN would be the largest of any).
    _, status, usage = os.wait4(child.pid, 0)
    out.write_text(f"{usage.ru_maxrss}\n", encoding="utf-8")
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
