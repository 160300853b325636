"""How numbers read in reports, summaries and console lines, written one way everywhere.

Percentages are 0 to 100 with one decimal, as in the paper's Table 1; a value that does
not exist (no scenario scored, no human label) reads "n/a", never 0.
"""

from __future__ import annotations

MISSING = "n/a"


def number(value: float | None, digits: int = 1) -> str:
    """A value with `digits` decimals (one, the paper's, unless told), or n/a."""
    return MISSING if value is None else f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 1) -> str:
    """A difference with its sign always shown (+1.5, -0.3), or n/a."""
    return MISSING if value is None else f"{value:+.{digits}f}"


def percent(part: int, whole: int) -> float | None:
    """`part` as a percentage of `whole`, rounded to one decimal; None when `whole` is 0."""
    return round(100 * part / whole, 1) if whole else None
