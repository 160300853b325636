"""The one exception type for problems a user can fix: bad input, bad config, a missing key."""

from __future__ import annotations

from collections.abc import Iterator


class LosonaError(Exception):
    """A user-fixable problem; stage scripts print its message and exit nonzero, no traceback."""


def causes(exc: BaseException) -> Iterator[BaseException]:
    """The exception, then every exception it was raised from or while handling, each once."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop(0)
        if current is not None and all(current is not other for other in seen):
            seen.append(current)
            yield current
            todo += [current.__cause__, current.__context__]
