"""The one exception type for problems a user can fix: bad input, bad config, a missing key."""


class LosonaError(Exception):
    """A user-fixable problem; stage scripts print its message and exit nonzero, no traceback."""
