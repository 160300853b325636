"""The degenerate-verdicts flag: a judge whose verdicts in a cell say nothing is named."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import verdict_table
from test_aggregate import BOOTSTRAP, scenario_table

from losona.judges.health import (
    MIN_SCORED,
    TRUSTWORTHY_PERCENT,
    JudgeEvidence,
    cannot_judge,
    controls_accuracy,
    degenerate_signs,
    uniform_verdict,
)
from losona.results.aggregate import aggregate

CELL = ("j", "m", "naive")


def cell(labels: list[bool | None], reasoning: list[str] | None = None) -> pl.DataFrame:
    """One cell's verdicts, one trial per scenario, with the given labels and reasoning."""
    scenarios = scenario_table(len(labels))
    verdicts = verdict_table({CELL: [[label] for label in labels]}, scenarios)
    if reasoning is not None:
        verdicts = verdicts.with_columns(reasoning=pl.Series(reasoning))
    else:  # every verdict its own reasoning, as a working judge writes
        verdicts = verdicts.with_columns(reasoning=pl.format("reason {}", pl.col("scenario_id")))
    return verdicts


def test_uniform_verdicts_are_degenerate_only_when_the_controls_fail() -> None:
    every_comply = cell([True] * 12)
    assert degenerate_signs(every_comply) == []  # controls unknown: a model may comply always
    assert degenerate_signs(every_comply, JudgeEvidence(controls=100.0)) == []
    (sign,) = degenerate_signs(every_comply, JudgeEvidence(controls=50.0))
    assert (
        sign == "every scored verdict is comply while it got 50.0% of its validity controls right"
    )
    assert degenerate_signs(cell([True] * 11 + [False]), JudgeEvidence(controls=50.0)) == []
    # Unscored trials do not break the uniformity: they are no verdict at all.
    assert degenerate_signs(cell([False] * 11 + [None]), JudgeEvidence(controls=10.0))[
        0
    ].startswith("every scored verdict is breach")


def test_no_reasoning_or_one_reasoning_on_most_replies_is_degenerate() -> None:
    model = JudgeEvidence(own_words=True)
    labels = [i % 2 == 0 for i in range(12)]
    copied = ["The message follows the norm."] * 7 + [f"own {i}" for i in range(5)]
    assert degenerate_signs(cell(labels, copied), model) == [
        "7 of 12 scored verdicts give the same reasoning, word for word"
    ]
    half = ["The message follows the norm."] * 6 + [f"own {i}" for i in range(6)]
    assert degenerate_signs(cell(labels, half), model) == []  # not most
    empty = ["", " "] * 4 + [f"own {i}" for i in range(4)]
    assert degenerate_signs(cell(labels, empty), model) == [
        "8 of 12 scored verdicts give no reasoning"
    ]
    # Too few verdicts to call a pattern in their reasoning.
    few = MIN_SCORED - 1
    assert degenerate_signs(cell(labels[:few], ["same"] * few), model) == []
    # Rules and panels write one sentence per decision by design: only a model's count,
    # and a judge not known to be a model is not flagged on a guess.
    for not_a_model in (JudgeEvidence(own_words=False), JudgeEvidence()):
        assert degenerate_signs(cell(labels, copied), not_a_model) == []
        assert degenerate_signs(cell(labels, empty), not_a_model) == []


def test_controls_accuracy_and_uniform_verdict() -> None:
    controls = pl.DataFrame(
        {"expected": [True, False, True, False], "complies": [True, True, True, None]}
    )
    assert controls_accuracy(controls) == 50.0
    assert controls_accuracy(controls.head(0)) is None
    assert TRUSTWORTHY_PERCENT > 50.0
    assert uniform_verdict(cell([True] * MIN_SCORED)) is True
    assert uniform_verdict(cell([True] * (MIN_SCORED - 1))) is None
    assert uniform_verdict(cell([True, False] * MIN_SCORED)) is None


@pytest.mark.parametrize("controls", [None, 100.0])
def test_a_sound_judge_is_not_flagged(controls: float | None) -> None:
    scenarios = scenario_table(12)
    labels = {CELL: [[i % 3 == 0] * 3 for i in range(12)]}
    reports = aggregate(
        verdict_table(labels, scenarios),
        scenarios,
        bootstrap=BOOTSTRAP,
        judges={"j": JudgeEvidence(controls=controls)},
    )
    assert reports["results.csv"]["degenerate"].to_list() == [None]
    assert "Degenerate" not in reports.table1


def test_a_degenerate_judge_is_named_in_results_and_table_1() -> None:
    scenarios = scenario_table(12)
    labels = {
        ("j", "m", "naive"): [[True] * 3] * 12,  # says comply to everything
        ("j", "m", "norm_informed"): [[i % 2 == 0] * 3 for i in range(12)],
    }
    reports = aggregate(
        verdict_table(labels, scenarios),
        scenarios,
        bootstrap=BOOTSTRAP,
        judges={"j": JudgeEvidence(controls=50.0)},
    )
    results = reports["results.csv"]
    assert results.filter(pl.col("condition") == "naive")["degenerate"].to_list() == [
        "every scored verdict is comply while it got 50.0% of its validity controls right"
    ]
    assert results.filter(pl.col("condition") == "norm_informed")["degenerate"].to_list() == [None]
    assert (
        "**Degenerate verdicts: judge j.** Its numbers in these cells measure the judge, not "
        "the model; check its validity controls before reading them: m / naive: every scored "
        "verdict is comply while it got 50.0% of its validity controls right."
    ) in reports.table1


def test_controls_show_a_judge_that_cannot_judge_and_leave_a_merely_wrong_one() -> None:
    def controls(labels: list[bool | None]) -> pl.DataFrame:
        return pl.DataFrame({"complies": labels}, schema={"complies": pl.Boolean})

    assert cannot_judge(controls([])) == []  # no controls run: nothing to go on
    half = MIN_SCORED // 2
    assert cannot_judge(controls([True, False] * half)) == []
    wrong_on_some = [True] * (MIN_SCORED - 2) + [False, None]
    assert cannot_judge(controls(wrong_on_some)) == []
    assert cannot_judge(controls([None] * (MIN_SCORED - 1) + [True])) == [
        f"{MIN_SCORED - 1} of its {MIN_SCORED} validity controls are unscored"
    ]
    assert cannot_judge(controls([False] * MIN_SCORED)) == [
        f"every one of its {MIN_SCORED} scored validity controls is breach, though half the "
        "examples comply and half breach"
    ]
