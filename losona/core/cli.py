"""How stage scripts report problems: a user's mistake is one clear message, not a traceback."""

from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TypeVar

from omegaconf.errors import InterpolationResolutionError

from losona.core.errors import LosonaError, causes

T = TypeVar("T")

# Distinct from 1 (a crash) so scripts and CI can tell bad input from a bug.
USER_ERROR_EXIT = 2
HYDRA_ERROR_EXIT = 1
# What a shell reports for a process ended by SIGINT (128 + 2), so `make` and DVC see Ctrl-C.
INTERRUPTED_EXIT = 130

# Set once Hydra has composed the config and a stage's own code is running.
_stage_started = False


def restore_command(files: Sequence[str], outputs: bool) -> str:
    """The command that gets back the committed `files` and, with `outputs`, the outputs DVC
    holds ("" for neither)."""
    # touch first: DVC rewrites a file in place, and an edit of the same size within the
    # same second is one git's stat cache misses, so a plain checkout keeps it.
    names = " ".join(files)
    steps = [f"touch {names} && git checkout HEAD -- {names}"] if files else []
    return " && ".join([*steps, "dvc checkout"] if outputs else steps)


# What gets the committed run back after DVC stopped midway: DVC deletes a stage's outputs
# before it runs it, writes dvc.lock stage by stage, and `-S` edits the settings files.
RESTORE_COMMITTED_RUN = restore_command(["dvc.lock", "params.yaml", "conf/run.yaml"], True)


def launch(main: Callable[[], None]) -> None:
    """Run a stage script's Hydra main: Hydra's own refusal (exit 1 before the stage starts)
    exits 2 like every user error, and Ctrl-C says what was kept and exits 130 at once."""
    try:
        main()
    except SystemExit as exc:
        if exc.code == HYDRA_ERROR_EXIT and not _stage_started:
            sys.exit(USER_ERROR_EXIT)
        raise
    except KeyboardInterrupt:
        print(interrupted_message(_calls_stored(), "DVC_STAGE" in os.environ), file=sys.stderr)
        exit_now(INTERRUPTED_EXIT)


def exit_now(code: int) -> NoReturn:
    """End the process with this code without waiting for its threads or its teardown: every
    completed call is stored, and the call in flight may be llama.cpp's, which nothing stops."""
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def interrupted_message(stored: dict[Path, int], under_dvc: bool = False) -> str:
    """The one line for a stage stopped by Ctrl-C, given the calls it stored by cache file,
    and, for a stage DVC ran, how to get the committed run back."""
    line = "interrupted: stopped by Ctrl-C"
    kept = {path: n for path, n in stored.items() if n}
    if kept:
        where = ", ".join(str(path) for path in sorted(kept))
        calls = sum(kept.values())
        noun = "call is" if calls == 1 else "calls are"
        line += (
            f"; {calls} completed {noun} kept in the call cache ({where}) and will not be "
            "paid again: run the stage again to go on"
        )
    if under_dvc:
        line += (
            "; DVC deleted this stage's outputs before it ran, and dvc.lock and the settings "
            f"may hold this run's: to get the committed run back, {RESTORE_COMMITTED_RUN}"
        )
    return line


def _calls_stored() -> dict[Path, int]:
    # Looked up, not imported: a stage that never loaded the call cache stored no call, and
    # importing it now would load litellm after the user asked to stop.
    cache = sys.modules.get("losona.models.call_cache")
    return {} if cache is None else cache.stored_this_process()


def refused(message: str, under_dvc: bool) -> str:
    """A refusal as a stage prints it: under DVC, which may have removed outputs and rewritten
    dvc.lock and the settings before the stage ran, it ends with the way back to the
    committed run, unless it gives one already."""
    if not under_dvc or "git checkout HEAD" in message or "dvc checkout" in message:
        return message
    return f"{message}\n  to get the committed run back instead: {RESTORE_COMMITTED_RUN}"


def reports_user_errors(task: Callable[..., T]) -> Callable[..., T]:
    """Wrap a stage's main function: print a LosonaError as `error: ...` and exit 2."""

    @functools.wraps(task)
    def wrapper(*args: object, **kwargs: object) -> T:
        global _stage_started
        _stage_started = True
        try:
            return task(*args, **kwargs)
        except LosonaError as exc:
            print(f"error: {refused(str(exc), 'DVC_STAGE' in os.environ)}", file=sys.stderr)
            sys.exit(USER_ERROR_EXIT)
        except InterpolationResolutionError as exc:
            # A resolver's LosonaError (e.g. a broken params.yaml behind ${dvc_param:...})
            # reaches us wrapped by OmegaConf, which chains the original as the context.
            cause = next((c for c in causes(exc) if isinstance(c, LosonaError)), None)
            if cause is None:
                raise
            print(f"error: {cause}", file=sys.stderr)
            sys.exit(USER_ERROR_EXIT)

    return wrapper


def overrides_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The command line of a command that takes a stage's config overrides (key=value),
    parsed before Hydra's compose API, which would take `--help` for a bad override."""

    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="KEY=VALUE",
        help="config overrides as a stage script takes them, e.g. paths.reports_dir=out",
    )
    return parser
