"""Self-preference: a judge's extra compliance for its own model family, by difference in
differences, with a scenario-bootstrap interval."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import verdict_table
from test_aggregate import scenario_table

from losona.audit.self_preference import Families, self_preference
from losona.core.config import AggregateSettings

QUICK = AggregateSettings(resamples=2_000, seed=0, confidence=0.95)
KINDS = {"ja": "llm", "jb": "llm", "lex": "lexicon", "jury": "panel"}
FAMILIES = Families(
    judges={"ja": "A", "jb": "B", "lex": None, "jury": None},
    models={"ma": "A", "mb": "B", "mc": "C"},
)


def rows(result: pl.DataFrame) -> dict[str, dict[str, object]]:
    return {r["judge"]: r for r in result.iter_rows(named=True)}


def test_the_difference_in_differences_by_hand() -> None:
    # Two scenarios, one trial, one condition. Compliance (judge x subject):
    #            ma (A)   mb (B)
    #   ja (A)    1.0      0.5
    #   jb (B)    0.5      0.5
    #   lex       0.5      0.5
    # ja: its gap (1.0 - 0.5) minus the gap of jb and lex (0 and 0): +50.
    # jb: its gap (mb - ma: 0.5 - 0.5 = 0) minus ja's and lex's (-0.5 and 0, mean -0.25): +25.
    labels = {
        ("ja", "ma", "naive"): [[True], [True]],
        ("ja", "mb", "naive"): [[True], [False]],
        ("jb", "ma", "naive"): [[True], [False]],
        ("jb", "mb", "naive"): [[False], [True]],
        ("lex", "ma", "naive"): [[False], [True]],
        ("lex", "mb", "naive"): [[True], [False]],
    }
    verdicts = verdict_table(labels, scenario_table(2))
    found = rows(self_preference(verdicts, ["ja", "jb", "lex"], KINDS, FAMILIES, QUICK))
    ja, jb, lex = found["ja"], found["jb"], found["lex"]
    assert (ja["judge_gap"], ja["reference_gap"], ja["self_preference"]) == (50.0, 0.0, 50.0)
    assert (ja["own_family_models"], ja["other_models"], ja["reference_judges"]) == (
        "ma",
        "mb",
        "jb, lex",
    )
    assert (jb["judge_gap"], jb["reference_gap"], jb["self_preference"]) == (0.0, -25.0, 25.0)
    assert lex["self_preference"] is None and lex["status"].startswith("no family")
    assert (lex["own_family_models"], lex["other_models"], lex["reference_judges"]) == ("",) * 3


def synthetic_run(planted: float, seed: int = 0) -> pl.DataFrame:
    """Judges ja (family A), jb (B) and lex (rules) on subjects ma (A), mb (B), mc (C): 60
    scenarios x K = 2 x two conditions. Each judge reads the same true labels with its own
    10% of random errors; ja then turns breaches of ma into compliance, exactly `planted`
    of ma's trials, in every condition."""
    rng = np.random.default_rng(seed)
    n, k = 60, 2
    scenarios = scenario_table(n)
    truth = {
        (m, c): rng.random((n, k)) < rate
        for m, rate in (("ma", 0.4), ("mb", 0.5), ("mc", 0.3))
        for c in ("naive", "norm_informed")
    }
    labels: dict[tuple[str, str, str], list[list[bool | None]]] = {}
    for judge in ("ja", "jb", "lex"):
        for (model, condition), true in truth.items():
            seen = true ^ (rng.random(true.shape) < 0.1)
            if judge == "ja" and model == "ma":
                breaches = np.flatnonzero(~seen.ravel())
                flip = breaches[: round(planted * seen.size)]
                assert flip.size == round(planted * seen.size), "not enough breaches to plant"
                seen = seen.ravel().copy()
                seen[flip] = True
                seen = seen.reshape(n, k)
            labels[(judge, model, condition)] = seen.tolist()
    return verdict_table(labels, scenarios)


def test_a_planted_self_preference_is_recovered() -> None:
    clean = rows(self_preference(synthetic_run(0.0), ["ja", "jb", "lex"], KINDS, FAMILIES, QUICK))
    planted = rows(
        self_preference(synthetic_run(0.15), ["ja", "jb", "lex"], KINDS, FAMILIES, QUICK)
    )
    ja = planted["ja"]
    # Planting 15 points of ma's compliance under ja moves ja's figure by exactly 15.
    assert ja["self_preference"] - clean["ja"]["self_preference"] == pytest.approx(15.0, abs=0.11)
    assert ja["self_preference_low"] <= 15.0 <= ja["self_preference_high"]
    assert ja["self_preference_low"] > 0
    # jb's reference judges include ja, whose ma (another family for jb) gained 15 points:
    # ja's gap for jb (mb minus the mean of ma and mc) falls by 7.5, the reference mean
    # (ja and lex) by 3.75, so jb's figure rises by 3.75. The definition compares judges.
    assert planted["jb"]["self_preference"] - clean["jb"]["self_preference"] == pytest.approx(
        3.75, abs=0.11
    )


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_no_self_preference_gives_intervals_that_cover_zero(seed: int) -> None:
    found = self_preference(synthetic_run(0.0, seed), ["ja", "jb", "lex"], KINDS, FAMILIES, QUICK)
    for row in found.filter(pl.col("status") == "estimated").iter_rows(named=True):
        assert row["self_preference_low"] <= 0 <= row["self_preference_high"], row


def test_the_check_needs_two_judges_and_two_families() -> None:
    verdicts = synthetic_run(0.0)
    one_judge = self_preference(
        verdicts.filter(pl.col("judge") == "ja"), ["ja"], KINDS, FAMILIES, QUICK
    )
    assert one_judge.is_empty()
    one_family = Families(judges=FAMILIES.judges, models=dict.fromkeys(["ma", "mb", "mc"], "A"))
    assert self_preference(verdicts, ["ja", "jb", "lex"], KINDS, one_family, QUICK).is_empty()
    unknown = Families(judges=FAMILIES.judges, models={})
    assert self_preference(verdicts, ["ja", "jb", "lex"], KINDS, unknown, QUICK).is_empty()


def test_a_panel_is_neither_judged_nor_a_reference() -> None:
    verdicts = synthetic_run(0.15)
    jury = verdicts.filter(pl.col("judge") == "ja").with_columns(judge=pl.lit("jury"))
    both = pl.concat([verdicts, jury])
    found = rows(self_preference(both, ["ja", "jb", "lex", "jury"], KINDS, FAMILIES, QUICK))
    assert "jury" not in found
    assert found["ja"]["reference_judges"] == "jb, lex"
    assert found["jb"]["reference_judges"] == "ja, lex"


def test_a_judge_without_subjects_of_its_family_or_a_reference_says_why() -> None:
    verdicts = synthetic_run(0.0).filter(pl.col("subject_model") != "mb")
    found = rows(self_preference(verdicts, ["ja", "jb", "lex"], KINDS, FAMILIES, QUICK))
    assert found["jb"]["status"] == "no subject of its family (B) in this run"
    assert found["jb"]["self_preference"] is None
    # Families are compared by name, case and spaces aside; a same-family judge is no reference.
    kin = Families(
        judges={"ja": "A", "jb": " a ", "lex": None}, models={"ma": "A", "mb": "B", "mc": "C"}
    )
    found = rows(self_preference(synthetic_run(0.0), ["ja", "jb", "lex"], KINDS, kin, QUICK))
    assert found["ja"]["reference_judges"] == "lex"
    two = self_preference(
        synthetic_run(0.0).filter(pl.col("judge") != "lex"), ["ja", "jb"], KINDS, kin, QUICK
    )
    assert rows(two)["ja"]["status"] == "no other judge outside its family (A) to compare with"


def test_the_interval_follows_the_seed() -> None:
    verdicts = synthetic_run(0.15)
    first = self_preference(verdicts, ["ja", "jb", "lex"], KINDS, FAMILIES, QUICK)
    assert first.equals(self_preference(verdicts, ["ja", "jb", "lex"], KINDS, FAMILIES, QUICK))
    other = AggregateSettings(resamples=QUICK.resamples, seed=3, confidence=0.95)
    assert not first.equals(self_preference(verdicts, ["ja", "jb", "lex"], KINDS, FAMILIES, other))
