"""Judge-error-corrected compliance: Rogan-Gladen by hand, the paper's audit, the intervals."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from conftest import verdict_table
from test_aggregate import scenario_table
from test_audit import labelled_items

from losona.audit.correction import corrected_compliance, rogan_gladen
from losona.audit.tables import SHEET_KEY_SCHEMA
from losona.core.config import AggregateSettings
from losona.core.contracts import table
from losona.core.files import sha256_text
from losona.results.presentation import Presentation
from losona.results.resampling import percentile_interval

PAPER = AggregateSettings(resamples=10_000, seed=0, confidence=0.95)
QUICK = AggregateSettings(resamples=2_000, seed=0, confidence=0.95)
SHOW = Presentation(judges=["j"], models=["m"], conditions=["naive", "norm_informed"])


# -- the estimator ---------------------------------------------------------------------------


def test_rogan_gladen_by_hand() -> None:
    # sens 0.8, spec 0.9: p_obs = 0.8 p + 0.1 (1 - p) = 0.1 + 0.7 p, so p_obs 0.45 is p 0.5.
    assert rogan_gladen(0.45, 0.8, 0.9) == pytest.approx(0.5)
    # (0.29 + 59/62 - 1) / (26/38 + 59/62 - 1) = 0.38: the paper's audit, exactly.
    assert rogan_gladen(0.29, 26 / 38, 59 / 62) == pytest.approx(0.38)
    # Below the judge's false-positive rate the estimate would be negative: clipped to 0.
    assert rogan_gladen(0.05, 0.8, 0.9) == 0.0
    # Above sens it would pass 1: clipped to 1.
    assert rogan_gladen(0.85, 0.8, 0.9) == 1.0
    # A perfect judge changes nothing.
    assert rogan_gladen(0.37, 1.0, 1.0) == pytest.approx(0.37)


@pytest.mark.parametrize(("sens", "spec"), [(0.5, 0.5), (0.3, 0.6), (0.0, 1.0)])
def test_a_judge_no_better_than_chance_gives_no_number(sens: float, spec: float) -> None:
    assert np.isnan(rogan_gladen(0.4, sens, spec))


def test_an_undefined_resample_widens_the_interval_to_both_ends() -> None:
    values = np.array([[0.4, 0.5, 0.6, np.nan]])
    low, high = percentile_interval(values, 0.5, undefined=(0.0, 1.0))
    dropped_low, dropped_high = percentile_interval(values, 0.5)
    assert low[0] < dropped_low[0] and high[0] > dropped_high[0]


# -- the paper's audit ------------------------------------------------------------------------

# Section 7: 100 items, people 38 compliant, the judge 29, 3 apparent false positives and
# 12 apparent false negatives (85% agreement): both yes 26, both no 59.
PAPER_ITEMS = [(True, True)] * 26 + [(True, False)] * 3 + [(False, True)] * 12
PAPER_ITEMS += [(False, False)] * 59


def paper_sample() -> tuple[pl.DataFrame, pl.DataFrame]:
    """The paper's 100 labelled items as one cell: 100 scenarios, one trial each."""
    verdicts = verdict_table(
        {("j", "m", "naive"): [[judge] for judge, _ in PAPER_ITEMS]}, scenario_table(100)
    )
    people = labelled_items(
        {(f"s{i:02d}", "m", 0): human for i, (_, human) in enumerate(PAPER_ITEMS)}
    )
    return people, verdicts


def test_the_papers_audit_recovers_peoples_38_percent_within_its_interval() -> None:
    people, verdicts = paper_sample()
    basis, corrected, _ = corrected_compliance(people, verdicts, ["j"], SHOW, PAPER)
    b = basis.row(0, named=True)
    assert (b["labelled"], b["people_compliant"], b["people_breaching"]) == (100, 38, 62)
    assert (b["true_positives"], b["false_negatives"], b["false_positives"]) == (26, 12, 3)
    assert (b["sensitivity"], b["specificity"], b["youden"]) == (68.4, 95.2, 0.636)
    assert b["identifiable"] and b["status"] == "corrected"
    row = corrected.row(0, named=True)
    assert (row["compliance"], row["corrected"]) == (29.0, 38.0)
    assert row["corrected_low"] < 38.0 < row["corrected_high"]
    # Docs quote these (docs/judge-audit.md): the judge's own 29% and the corrected 38%.
    print(
        f"paper sample: judge {row['compliance']} [{row['compliance_low']}, "
        f"{row['compliance_high']}], corrected {row['corrected']} [{row['corrected_low']}, "
        f"{row['corrected_high']}], sensitivity {b['sensitivity']} [{b['sensitivity_low']}, "
        f"{b['sensitivity_high']}], specificity {b['specificity']} [{b['specificity_low']}, "
        f"{b['specificity_high']}], unidentified resamples {row['unidentified_resamples']}"
    )
    # The label uncertainty widens the interval beyond the scenario bootstrap's.
    assert (row["corrected_high"] - row["corrected_low"]) > (
        row["compliance_high"] - row["compliance_low"]
    )


# -- recovering a known truth, effects included ---------------------------------------------


def known_judge(
    truth: list[bool], sens_every: tuple[int, int], fp_every: tuple[int, int]
) -> list[bool]:
    """A judge that marks compliant exactly `a` of every `b` truly compliant items (in order)
    and exactly `c` of every `d` truly breaching ones: sensitivity a/b, specificity 1 - c/d."""
    (a, b), (c, d) = sens_every, fp_every
    yes_seen = no_seen = 0
    verdicts = []
    for true in truth:
        if true:
            verdicts.append(yes_seen % b < a)
            yes_seen += 1
        else:
            verdicts.append(no_seen % d < c)
            no_seen += 1
    return verdicts


def test_a_known_truth_is_recovered_where_the_judges_own_figures_miss_it() -> None:
    # 200 scenarios, K = 1. True compliance: 20% naive, 70% norm-informed. The judge: sens
    # 0.6, spec 0.8, so it shows 0.2 + 0.4 p: 28% and 48%, an effect of +20 for a true +50.
    n = 200
    truth = {
        "naive": [i % 10 < 2 for i in range(n)],
        "norm_informed": [i % 10 < 7 for i in range(n)],
    }
    judged = {c: known_judge(t, (3, 5), (1, 5)) for c, t in truth.items()}
    verdicts = verdict_table(
        {("j", "m", c): [[v] for v in judged[c]] for c in truth}, scenario_table(n)
    )
    # People label every other item of both cells: 200 labelled items.
    people = labelled(
        {("m", c, f"s{i:02d}", 0): truth[c][i] for c in truth for i in range(0, n, 2)}
    )
    basis, corrected, deltas = corrected_compliance(people, verdicts, ["j"], SHOW, QUICK)
    b = basis.row(0, named=True)
    assert (b["sensitivity"], b["specificity"]) == (60.0, 80.0)
    rows = {r["condition"]: r for r in corrected.iter_rows(named=True)}
    assert (rows["naive"]["compliance"], rows["norm_informed"]["compliance"]) == (28.0, 48.0)
    assert (rows["naive"]["corrected"], rows["norm_informed"]["corrected"]) == (20.0, 70.0)
    for condition, true in (("naive", 20.0), ("norm_informed", 70.0)):
        row = rows[condition]
        assert row["corrected_low"] <= true <= row["corrected_high"]
        # The judge's own interval (scenario bootstrap) misses the truth: it is biased.
        assert not row["compliance_low"] <= true <= row["compliance_high"]
    effect = deltas.row(0, named=True)
    assert effect["condition"] == "norm_informed"
    assert (effect["compliance_delta"], effect["corrected_delta"]) == (20.0, 50.0)
    assert effect["corrected_delta_low"] <= 50.0 <= effect["corrected_delta_high"]
    assert effect["compliance_delta_high"] < 50.0
    # The corrected effect is the difference of the corrected rates, as the files show them.
    assert effect["corrected_delta"] == pytest.approx(
        rows["norm_informed"]["corrected"] - rows["naive"]["corrected"]
    )


def labelled(human: dict[tuple[str, str, str, int], bool]) -> pl.DataFrame:
    """The sheet's key for (model, condition, scenario, trial) items, with people's labels."""
    rows = [
        {
            "item_id": f"r{model}{condition}{scenario_id}{trial}",
            "scenario_id": scenario_id,
            "norm_id": "norm_0",
            "condition": condition,
            "subject_model": model,
            "trial": trial,
            "response_sha256": sha256_text(
                f"{model} answers {scenario_id} under {condition} ({trial})"
            ),
            "human": label,
        }
        for (model, condition, scenario_id, trial), label in human.items()
    ]
    schema = {**dict(SHEET_KEY_SCHEMA), "human": pl.Boolean()}
    return table(rows, pl.Schema(schema), sort_by=["item_id"])


# -- when there is nothing to correct with ---------------------------------------------------


@pytest.mark.parametrize(
    ("pairs", "reason"),
    [
        # The embedded model's sheets (data/labels/smollm2/): people marked nothing compliant.
        ([(True, False)] * 3 + [(False, False)] * 97, "people marked none of the 100 labelled"),
        ([(True, True)] * 90 + [(False, True)] * 10, "people marked none of the 100 labelled"),
        # A judge that says complies half the time whatever people say: sens + spec - 1 = 0.
        ([(True, True), (False, True), (True, False), (False, False)] * 10, "say nothing"),
        # Worse than chance: it says the opposite of people.
        ([(False, True)] * 20 + [(True, False)] * 20, "say nothing"),
    ],
)
def test_no_corrected_number_is_invented_when_the_labels_cannot_give_one(
    pairs: list[tuple[bool, bool]], reason: str
) -> None:
    verdicts = verdict_table(
        {("j", "m", "naive"): [[judge] for judge, _ in pairs]}, scenario_table(len(pairs))
    )
    people = labelled_items({(f"s{i:02d}", "m", 0): h for i, (_, h) in enumerate(pairs)})
    basis, corrected, deltas = corrected_compliance(people, verdicts, ["j"], SHOW, QUICK)
    row = basis.row(0, named=True)
    assert not row["identifiable"]
    assert row["status"].startswith("not identifiable: ") and reason in row["status"]
    assert corrected.is_empty() and deltas.is_empty()


def test_items_the_judge_left_unscored_or_never_judged_are_not_its_basis() -> None:
    labels = {("j", "m", "naive"): [[True], [False], [None], [True], [False]]}
    verdicts = verdict_table(labels, scenario_table(5))
    people = labelled_items(
        {
            ("s00", "m", 0): True,
            ("s01", "m", 0): False,
            ("s02", "m", 0): True,  # unscored by the judge
            ("s03", "m", 0): False,  # a false positive
            ("s04", "m", 0): False,
            ("s00", "other", 0): True,  # a model the judge never scored
        }
    )
    basis, _, _ = corrected_compliance(people, verdicts, ["j"], SHOW, QUICK)
    row = basis.row(0, named=True)
    assert (row["labelled"], row["true_positives"], row["false_positives"]) == (4, 1, 1)
    assert (row["sensitivity"], row["specificity"]) == (100.0, 66.7)


def test_resamples_that_lose_a_class_count_at_both_ends_of_the_interval() -> None:
    # Two compliant items among 40 labelled: many resamples draw neither, and then the
    # judge's sensitivity is unknown.
    pairs = [(True, True)] * 2 + [(False, False)] * 36 + [(True, False)] * 2
    verdicts = verdict_table(
        {("j", "m", "naive"): [[judge] for judge, _ in pairs]}, scenario_table(len(pairs))
    )
    people = labelled_items({(f"s{i:02d}", "m", 0): h for i, (_, h) in enumerate(pairs)})
    _, corrected, _ = corrected_compliance(people, verdicts, ["j"], SHOW, QUICK)
    row = corrected.row(0, named=True)
    # P(no compliant item in 40 draws) = (38/40)^40 = 12.9%: more than the 2.5% tails.
    assert 0.09 * QUICK.resamples < row["unidentified_resamples"] < 0.17 * QUICK.resamples
    assert (row["corrected_low"], row["corrected_high"]) == (0.0, 100.0)


def test_the_intervals_follow_the_seed() -> None:
    people, verdicts = paper_sample()
    first = corrected_compliance(people, verdicts, ["j"], SHOW, QUICK)[1]
    assert first.equals(corrected_compliance(people, verdicts, ["j"], SHOW, QUICK)[1])
    other = AggregateSettings(resamples=QUICK.resamples, seed=1, confidence=0.95)
    assert not first.equals(corrected_compliance(people, verdicts, ["j"], SHOW, other)[1])


# -- in the audit --------------------------------------------------------------------------------


def test_the_audit_writes_the_corrected_figures_only_when_labels_give_them() -> None:
    from test_audit import NO_LABELS, run_audit, scenarios_table

    from losona.audit.labelling import Labels
    from losona.audit.summary import summary_lines

    scenarios = scenarios_table()
    without = run_audit(scenarios, NO_LABELS)
    for name in ("correction.csv", "corrected.csv", "corrected_deltas.csv", "self_preference.csv"):
        assert without[name].is_empty(), name
    # A run without labels keeps exactly the metrics it had before corrections existed.
    assert "corrected" not in without.metrics and "self_preference" not in without.metrics
    # Label judge a's six naive responses as a says, and one as it does not.
    naive = [[True, False, False], [True, True, False]]
    human = {
        (f"standup__binary_answer_norm__{s}", "m", t): label
        for s, trials in enumerate(naive)
        for t, label in enumerate(trials)
    }
    human[("standup__binary_answer_norm__0", "m", 1)] = True  # a false negative of a
    key = labelled_items(human)
    labels = Labels(key.drop("human"), key)
    with_labels = run_audit(scenarios, labels)
    basis = {r["judge"]: r for r in with_labels["correction.csv"].iter_rows(named=True)}
    assert basis["a"]["identifiable"] and basis["a"]["sensitivity"] == 75.0
    # b says the opposite of a under naive: worse than chance against these labels.
    assert not basis["b"]["identifiable"]
    assert set(with_labels["corrected.csv"]["judge"]) == {"a"}
    assert set(with_labels.metrics["corrected"]) == {"a"}
    lines = summary_lines(with_labels)
    assert any(
        line.startswith("a: compliance corrected for judge error (sensitivity 75.0%")
        for line in lines
    )
    assert any(
        line.startswith("b: compliance corrected for judge error: not identifiable")
        for line in lines
    )
