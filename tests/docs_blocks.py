"""The fenced shell blocks of README.md and docs/, and how a test runs one as a user would.

A test that runs a block takes its text from the page (`docs_block`), never a copy of it,
and runs it whole in bash (`run_block`) with the environment of a new shell (`clean_env`):
whatever the block needs it must show. tests/test_docs_blocks.py checks that every block is
either run so or says why not.
"""

from __future__ import annotations

import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

REPO = Path(__file__).resolve().parents[1]
SHELLS = ("bash", "sh", "shell", "console")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """One fenced shell block: its page (relative to the repository), line and text."""

    page: str
    line: int
    text: str

    @property
    def opening(self) -> str:
        """Its first line without a trailing comment: the readable half of its key."""
        return self.text.splitlines()[0].split("   #", 1)[0].strip()

    @property
    def digest(self) -> str:
        """The first 8 hex digits of the SHA-256 of its text: any edit changes it."""
        return hashlib.sha256(self.text.encode()).hexdigest()[:8]


def pages() -> list[Path]:
    """README.md and every page of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def shell_blocks(page: Path) -> list[Block]:
    """The page's fenced shell blocks, in order."""
    text = page.read_text(encoding="utf-8")
    return [
        Block(str(page.relative_to(REPO)), text[: fence.start()].count("\n") + 1, fence[2])
        for fence in FENCE.finditer(text)
        if fence[1] in SHELLS
    ]


def docs_block(page: str, opening: str) -> str:
    """The text of the one shell block of `page` (e.g. "docs/dynamic.md") that opens with
    `opening` (its first line, comment aside)."""
    found = [b for b in shell_blocks(REPO / page) if b.opening == opening]
    assert len(found) == 1, f"{page}: {len(found)} shell blocks open with {opening!r}"
    return found[0].text


def clean_env(home: Path, package: Path) -> dict[str, str]:
    """A new shell's environment on a machine with the project installed, and nothing else.

    PATH has the project's environment first, as after `source .venv/bin/activate`. Its
    package is the one at `package` (a repository copy): PYTHONPATH stands for the copy's
    own editable install, which .venv's (of the checkout) would otherwise shadow.
    DVC_NO_ANALYTICS keeps DVC from sending its usage report from a test; nothing a block
    does depends on it.
    """
    venv_bin = Path(sys.executable).parent
    return {
        "PATH": os.pathsep.join([str(venv_bin), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(home),
        "PYTHONPATH": str(package),
        "DVC_NO_ANALYTICS": "1",
    }


def run_block(text: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a block whole in bash, as pasted into a terminal; then stop whatever it left
    running in the background (a server without its `kill %1`), as closing the terminal
    would."""
    # Output goes to files: a process the block leaves behind would hold a pipe open.
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        shell = subprocess.Popen(
            ["bash", "-c", text],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
        try:
            shell.wait()
        finally:
            with suppress(ProcessLookupError):
                os.killpg(shell.pid, signal.SIGTERM)
        stdout.seek(0)
        stderr.seek(0)
        return subprocess.CompletedProcess(
            shell.args, shell.returncode, stdout.read(), stderr.read()
        )


@contextmanager
def port_to_ourselves(port: int) -> Iterator[None]:
    """Hold `port` on 127.0.0.1 for a block that names it, against every other test of this
    machine that does the same (a lock file); fail at once if another process holds it."""
    with FileLock(Path(tempfile.gettempdir()) / f"losona-docs-port-{port}.lock"):
        with socket.socket() as probe:
            # As the server binds: a connection of an earlier one in TIME_WAIT is no holder.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                raise AssertionError(
                    f"port {port} on 127.0.0.1 is taken by another process; the docs' block "
                    "names it, so this test needs it free"
                ) from None
        yield
