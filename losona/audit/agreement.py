"""Two raters on the same items: the confusion table, agreement and Cohen's kappa."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from losona.core.formatting import percent

# One judged response: the same key in two judges' verdicts is the same response.
RESPONSE_KEY = ["scenario_id", "subject_model", "condition", "trial"]


@dataclass(frozen=True)
class Confusion:
    """Two raters' labels on the same items: A is the rater under test, B the reference."""

    yes_yes: int
    yes_no: int  # A says complies, B says breach: A's apparent false positives
    no_yes: int  # A says breach, B says complies: A's apparent false negatives
    no_no: int

    @classmethod
    def of(cls, a: Iterable[bool], b: Iterable[bool]) -> Confusion:
        """Count the label pairs of two equally long sequences."""
        counts = Counter(zip(a, b, strict=True))
        return cls(
            counts[True, True], counts[True, False], counts[False, True], counts[False, False]
        )

    @property
    def n(self) -> int:
        """Items rated by both."""
        return self.yes_yes + self.yes_no + self.no_yes + self.no_no

    @property
    def agree(self) -> int:
        """Items both rated alike."""
        return self.yes_yes + self.no_no

    @property
    def agreement(self) -> float | None:
        """Share of items rated alike (None with no items)."""
        return self.agree / self.n if self.n else None

    @property
    def a_rate(self) -> float | None:
        """Share of items A marks compliant."""
        return (self.yes_yes + self.yes_no) / self.n if self.n else None

    @property
    def b_rate(self) -> float | None:
        """Share of items B marks compliant."""
        return (self.yes_yes + self.no_yes) / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa, (p_o - p_e) / (1 - p_e); None when chance agreement p_e is 1."""
        n = self.n
        # In counts, exactly: n^2 p_e = (A's yes)(B's yes) + (A's no)(B's no).
        chance = (self.yes_yes + self.yes_no) * (self.yes_yes + self.no_yes) + (
            self.no_yes + self.no_no
        ) * (self.yes_no + self.no_no)
        if n == 0 or chance == n * n:
            return None
        return (n * self.agree - chance) / (n * n - chance)

    def figures(self) -> dict[str, Any]:
        """Agreement, kappa and both compliance rates as reports write them."""
        return {
            "agree": self.agree,
            "agreement": percent(self.agreement),
            "kappa": None if self.kappa is None else round(self.kappa, 3),
            "a_compliance": percent(self.a_rate),
            "b_compliance": percent(self.b_rate),
        }
