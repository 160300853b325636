"""How stage scripts report problems: a user's mistake is one clear message, not a traceback."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import TypeVar

from losona.errors import LosonaError

T = TypeVar("T")

# Distinct from 1 (a crash) so scripts and CI can tell bad input from a bug.
USER_ERROR_EXIT = 2


def reports_user_errors(task: Callable[..., T]) -> Callable[..., T]:
    """Wrap a stage's main function: print a LosonaError as `error: ...` and exit 2."""

    @functools.wraps(task)
    def wrapper(*args: object, **kwargs: object) -> T:
        try:
            return task(*args, **kwargs)
        except LosonaError as exc:
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(USER_ERROR_EXIT)

    return wrapper
