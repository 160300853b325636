"""The one exception type for problems a user can fix: bad input, bad config, a missing key."""


class LosonaError(Exception):
    """A user-fixable problem; stage scripts print its message and exit nonzero, no traceback."""


def causes(exc: BaseException) -> list[BaseException]:
    """The exception and every exception it was raised from or while handling, each once,
    depth first: a `raise ... from` cause before the context, the nearest cause first."""

    found: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is not None and all(current is not seen for seen in found):
            found.append(current)
            todo += [current.__context__, current.__cause__]  # the cause is taken first
    return found
