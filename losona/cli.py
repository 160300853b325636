"""How stage scripts report problems: a user's mistake is one clear message, not a traceback."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TypeVar

from omegaconf.errors import InterpolationResolutionError

from losona.errors import LosonaError, causes

T = TypeVar("T")

# Distinct from 1 (a crash) so scripts and CI can tell bad input from a bug.
USER_ERROR_EXIT = 2
HYDRA_ERROR_EXIT = 1

# Set once Hydra has composed the config and a stage's own code is running.
_stage_started = False


def launch(main: Callable[[], None]) -> None:
    """Run a stage script's Hydra main, with a config Hydra cannot compose as a user error.

    Hydra itself reports an unknown option or a misspelt key, clearly and without a
    traceback, but exits 1, the code of a crash. It does so before the stage starts, which
    is how the two are told apart: such an exit becomes 2 like every other user error.
    """
    try:
        main()
    except SystemExit as exc:
        if exc.code == HYDRA_ERROR_EXIT and not _stage_started:
            sys.exit(USER_ERROR_EXIT)
        raise


def reports_user_errors(task: Callable[..., T]) -> Callable[..., T]:
    """Wrap a stage's main function: print a LosonaError as `error: ...` and exit 2."""

    @functools.wraps(task)
    def wrapper(*args: object, **kwargs: object) -> T:
        global _stage_started
        _stage_started = True
        try:
            return task(*args, **kwargs)
        except LosonaError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(USER_ERROR_EXIT)
        except InterpolationResolutionError as exc:
            # A resolver's LosonaError (e.g. a broken params.yaml behind ${dvc_param:...})
            # reaches us wrapped by OmegaConf, which chains the original as the context.
            cause = _losona_error_in_chain(exc)
            if cause is None:
                raise
            print(f"error: {cause}", file=sys.stderr)
            sys.exit(USER_ERROR_EXIT)

    return wrapper


def _losona_error_in_chain(exc: BaseException) -> LosonaError | None:
    """The LosonaError an exception was raised from or while handling, if any."""
    return next((e for e in causes(exc) if isinstance(e, LosonaError)), None)
