"""A submission's stage commands, read as data (never run): one that would write outside the
run's tree if it were run costs the run its row, since whoever rechecks it by hand would
run it."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from losona.board.tree import Refused

# What a shell makes of a command beyond running one program: DVC runs `cmd` in a shell.
SHELL_SYNTAX = ("&", "|", ";", ">", "<", "`", "$", "(", ")", "\n")
SHOWN_CHARS = 120


def check_commands(node: Any, origin: str) -> None:
    """Refuse the first stage command of a dvc.yaml or dvc.lock (`node`, read from `origin`)
    that could reach outside the run's tree."""
    stages = node.get("stages") if isinstance(node, dict) else None
    if not isinstance(stages, dict):
        raise Refused(f"{origin}: no 'stages' mapping; not DVC's pipeline file")
    for name, stage in stages.items():
        for command in _commands(stage):
            outside = _reaches_outside(command)
            if outside:
                shown = command if len(command) <= SHOWN_CHARS else command[:SHOWN_CHARS] + "..."
                raise Refused(
                    f"{origin}, stage '{name}': its command {shown!r} {outside}; the board "
                    "runs no command of a run, and ranks no run whose commands would write "
                    "elsewhere"
                )


def _commands(stage: Any) -> Iterator[str]:
    """Every `cmd` of a stage, a `foreach`'s or `matrix`'s `do:` included."""
    if not isinstance(stage, dict):
        return
    for node in (stage, stage.get("do")):
        cmd = node.get("cmd") if isinstance(node, dict) else None
        for one in cmd if isinstance(cmd, list) else [cmd]:
            if one is not None:
                yield str(one)


def _reaches_outside(command: str) -> str | None:
    """Why `command` could reach outside the tree, or None."""
    try:
        words = shlex.split(command)
    except ValueError:
        return "cannot be read as one command"
    for word in words:
        value = word.split("=", 1)[-1]  # key=value: Hydra's options
        if value.startswith(("/", "~")) or ".." in PurePosixPath(value).parts:
            return f"names '{value}', outside the run's tree"
    for syntax in SHELL_SYNTAX:
        if syntax in command.replace("${", "{"):  # ${...}: DVC's own templating, not the shell's
            return f"uses the shell ({syntax!r})"
    return None
