"""How numbers and names read in reports, summaries and console lines, one way everywhere:
percentages 0 to 100 with one decimal (the paper's Table 1), "n/a" for a value that does
not exist, a test double's label marked, trials counted from 1."""

from __future__ import annotations

import math
from collections.abc import Sequence

MISSING = "n/a"
# Appended to a test double's label: its numbers are the plumbing's, not a model's or judge's.
TEST_DOUBLE = "[TEST DOUBLE]"


def number(value: float | None, digits: int = 1) -> str:
    """A value with `digits` decimals (one, the paper's, unless told), or n/a."""
    return MISSING if value is None else f"{value:.{digits}f}"


def signed(value: float | None) -> str:
    """A difference with one decimal and its sign always shown (+1.5, -0.3), or n/a."""
    return MISSING if value is None else f"{value:+.1f}"


def percent(part: float | None, whole: float = 1) -> float | None:
    """`part` as a percentage of `whole` (a share of 1 unless told), with one decimal as in
    the paper's tables; None when there is no value (None or NaN) or `whole` is 0."""
    if part is None or math.isnan(part) or not whole:
        return None
    return round(100 * part / whole, 1)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """A count with its noun in the number it takes: "1 trial", "0 trials", "2 entries"."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def first_of(names: Sequence[str], shown: int) -> str:
    """The first `shown` names, then how many more: "a, b, c, and 4 more"."""
    more = f", and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def display_label(label: str, test_double: bool) -> str:
    """A model's or judge's name as reports show it: its label, marked if a test double."""
    return f"{label} {TEST_DOUBLE}" if test_double else label


def is_test_double(label: str) -> bool:
    """Whether a display label (from `display_label`) marks a test double."""
    return label.endswith(TEST_DOUBLE)


def trial_number(index: int) -> int:
    """A trial as a page shows it, counted from 1: the tables' `trial` index is 0-based."""
    return index + 1
