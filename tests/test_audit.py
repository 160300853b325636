"""The judge audit: agreement and kappa, judge pairs, headline stability, people, determinism."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from conftest import BASE_ROW, verdict_table
from test_aggregate import complying, scenario_table
from test_judge import AlwaysComplies

from losona.audit.agreement import Confusion
from losona.audit.comparison import compare_judges, headline_stability, paired_verdicts
from losona.audit.controls import control_results
from losona.audit.files import AUDIT_FILES, read_audit
from losona.audit.human import human_agreement
from losona.audit.labelling import Labels
from losona.audit.rejudging import determinism
from losona.audit.run import audit
from losona.audit.settings import AuditSettings, DeterminismSettings
from losona.audit.summary import summary_lines
from losona.audit.tables import SHEET_KEY_SCHEMA
from losona.core.config import AggregateSettings
from losona.core.contracts import SCENARIO_SCHEMA, table
from losona.core.errors import LosonaError
from losona.core.files import sha256_text
from losona.judges.base import JudgeCase, Judgement
from losona.judges.run import judge_controls
from losona.results.aggregate import Reports, aggregate
from losona.results.bundle import ReportBundle
from losona.results.presentation import Presentation

BOOTSTRAP = AggregateSettings(resamples=1_000, seed=0, confidence=0.95)
SHOW = Presentation()


# -- agreement and Cohen's kappa, against hand-computed values ------------------------------


def test_agreement_and_kappa_match_the_hand_computed_values_of_a_small_table() -> None:
    a = [True, True, True, True, True, False, False, False, False, False]
    b = [True, True, True, True, False, True, True, False, False, False]
    confusion = Confusion.of(a, b)
    # Counted by hand: both yes 4, A yes B no 1, A no B yes 2, both no 3.
    assert (confusion.yes_yes, confusion.yes_no, confusion.no_yes, confusion.no_no) == (4, 1, 2, 3)
    # Observed agreement p_o = (4 + 3) / 10 = 0.7.
    assert confusion.agreement == pytest.approx(0.7)
    # A says yes to 5/10, B to 6/10: chance agreement p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5,
    # so kappa = (p_o - p_e) / (1 - p_e) = (0.7 - 0.5) / 0.5 = 0.4.
    assert (confusion.a_rate, confusion.b_rate) == (pytest.approx(0.5), pytest.approx(0.6))
    assert confusion.kappa == pytest.approx(0.4)
    assert confusion.figures() == {
        "agree": 7,
        "agreement": 70.0,
        "kappa": 0.4,
        "a_compliance": 50.0,
        "b_compliance": 60.0,
    }


@pytest.mark.parametrize(
    ("a", "b", "kappa"),
    [
        # Always opposite, each 50% yes: p_o = 0, p_e = 0.5, kappa = -0.5 / 0.5 = -1.
        ([True, False, True, False], [False, True, False, True], -1.0),
        # A always yes, B yes 3 of 5: p_o = 0.6 = p_e = 1 * 0.6 + 0 * 0.4, kappa = 0.
        ([True] * 5, [True, True, True, False, False], 0.0),
        # Both always yes: p_e = 1, kappa is undefined.
        ([True] * 3, [True] * 3, None),
        # Nothing rated by both.
        ([], [], None),
    ],
)
def test_kappa_at_its_edges(a: list[bool], b: list[bool], kappa: float | None) -> None:
    assert Confusion.of(a, b).kappa == (None if kappa is None else pytest.approx(kappa))


# -- judge against judge ---------------------------------------------------------------------


def two_judges() -> pl.DataFrame:
    """Judges a and b on 4 scenarios x 2 trials; b's verdict on s02 trial 1 is missing."""
    labels = {
        ("a", "m", "naive"): [[True, True], [True, False], [False, False], [None, False]],
        ("b", "m", "naive"): [[True, False], [True, False], [False, True], [True, False]],
    }
    verdicts = verdict_table(labels, scenario_table(4, norms=2))
    missing = (pl.col("judge") == "b") & (pl.col("scenario_id") == "s02") & (pl.col("trial") == 1)
    return verdicts.filter(~missing)


def test_a_pair_of_judges_counts_what_it_compares_and_what_it_leaves_out() -> None:
    pairs, breakdown = compare_judges(two_judges(), ["a", "b"], SHOW)
    # 8 responses; b lacks one (only a has it); a left s03 trial 0 unscored. The 6 left:
    # s00 (yes,yes) (yes,no), s01 (yes,yes) (no,no), s02 (no,no), s03 trial 1 (no,no).
    # p_o = 5/6; A yes 3/6, B yes 2/6: p_e = 1/2 * 1/3 + 1/2 * 2/3 = 1/2;
    # kappa = (5/6 - 1/2) / (1/2) = 2/3.
    assert pairs.row(0, named=True) == {
        "judge_a": "a",
        "judge_b": "b",
        "rows": 8,
        "only_a": 1,
        "only_b": 0,
        "unscored_a": 1,
        "unscored_b": 0,
        "both_scored": 6,
        "agree": 5,
        "agreement": 83.3,
        "kappa": 0.667,
        "a_compliance": 50.0,
        "b_compliance": 33.3,
        "a_yes_b_yes": 2,
        "a_yes_b_no": 1,
        "a_no_b_yes": 0,
        "a_no_b_no": 3,
    }
    by_norm = breakdown.filter(pl.col("by") == "norm_id")
    # norm_0 is s00 and s02: 2 of 3 alike; norm_1 is s01 and s03: 3 of 3.
    assert by_norm.select("group", "both_scored", "agree", "agreement").rows() == [
        ("norm_0", 3, 2, 66.7),
        ("norm_1", 3, 3, 100.0),
    ]
    assert breakdown.filter(pl.col("by") == "subject_model")["both_scored"].to_list() == [6]


def test_pairs_follow_the_sweep_order_and_each_pair_is_compared_once() -> None:
    labels = {(j, "m", "naive"): complying([0, 3, 2, 1]) for j in ("z", "y", "x")}
    verdicts = verdict_table(labels, scenario_table(4))
    pairs, _ = compare_judges(verdicts, ["z", "y", "x"], SHOW)
    assert pairs.select("judge_a", "judge_b").rows() == [("z", "y"), ("z", "x"), ("y", "x")]
    assert pairs["agreement"].to_list() == [100.0] * 3


def test_judges_that_scored_different_texts_are_refused() -> None:
    verdicts = two_judges().with_columns(
        response=pl.when((pl.col("judge") == "b") & (pl.col("scenario_id") == "s01"))
        .then(pl.lit("a resampled reply"))
        .otherwise(pl.col("response"))
    )
    with pytest.raises(LosonaError, match=r"judges 'a' and 'b' judged different texts.*'s01'"):
        paired_verdicts(verdicts, "a", "b")


def test_headline_comparisons_are_read_from_aggregates_numbers() -> None:
    counts = {
        # judge: model: condition: complying trials (of 3) per scenario
        "j1": {
            "m1": {"naive": [0, 0, 0, 0, 0, 0], "norm_informed": [3, 3, 3, 0, 0, 0]},
            "m2": {"naive": [3, 3, 3, 3, 0, 0], "norm_informed": [3, 3, 0, 0, 0, 0]},
        },
        "j2": {
            "m1": {"naive": [0, 0, 0, 0, 0, 0], "norm_informed": [3, 3, 0, 0, 0, 0]},
            "m2": {"naive": [3, 3, 0, 0, 0, 0], "norm_informed": [3, 3, 3, 3, 0, 0]},
        },
    }
    labels = {
        (judge, model, condition): complying(c)
        for judge, models in counts.items()
        for model, conditions in models.items()
        for condition, c in conditions.items()
    }
    scenarios = scenario_table()
    reports = aggregate(verdict_table(labels, scenarios), scenarios, bootstrap=BOOTSTRAP)
    stability = headline_stability(reports["results.csv"], reports["deltas.csv"], ["j1", "j2"])
    assert stability.select("subject_model", "check", "condition", "a", "b", "same").rows() == [
        ("m1", "best condition", None, "norm_informed", "norm_informed", True),
        ("m1", "effect vs naive", "norm_informed", "+50.0", "+33.3", True),
        ("m2", "best condition", None, "naive", "norm_informed", False),
        ("m2", "effect vs naive", "norm_informed", "-33.3", "+33.3", False),
    ]


def test_tied_best_conditions_are_all_named() -> None:
    results = pl.DataFrame(
        {
            "judge": ["a", "a", "b", "b"],
            "subject_model": ["m"] * 4,
            "condition": ["naive", "oracle"] * 2,
            "acc_at_k": [50.0, 50.0, 40.0, 50.0],
        }
    )
    deltas = pl.DataFrame(
        {"judge": ["a", "b"], "subject_model": ["m", "m"], "condition": ["oracle"] * 2},
        schema_overrides={"delta": pl.Float64},
    ).with_columns(delta=pl.Series([0.0, 10.0]))
    rows = headline_stability(results, deltas, ["a", "b"]).select("a", "b", "same").rows()
    assert rows == [("naive = oracle", "oracle", False), ("+0.0", "+10.0", False)]


# -- judge against people --------------------------------------------------------------------


def labelled_items(human: dict[tuple[str, str, int], bool]) -> pl.DataFrame:
    """The sheet's key for (scenario, model, trial) items under naive, with people's labels."""
    rows = [
        {
            "item_id": f"r{scenario_id}{model}{trial}",
            "scenario_id": scenario_id,
            "norm_id": "norm_0",
            "condition": "naive",
            "subject_model": model,
            "trial": trial,
            "response_sha256": sha256_text(f"{model} answers {scenario_id} under naive ({trial})"),
        }
        for scenario_id, model, trial in human
    ]
    key = table(rows, SHEET_KEY_SCHEMA, sort_by=[])
    return key.with_columns(human=pl.Series(list(human.values()))).sort("item_id")


def people_and_judge() -> tuple[pl.DataFrame, pl.DataFrame]:
    labels = {("j", "m", "naive"): [[True, False], [True, True], [False, False], [None, True]]}
    verdicts = verdict_table(labels, scenario_table(4))
    human = {
        ("s00", "m", 0): True,  # judge yes: agree
        ("s00", "m", 1): True,  # judge no: a false negative
        ("s01", "m", 0): True,  # judge yes: agree
        ("s01", "m", 1): False,  # judge yes: a false positive
        ("s02", "m", 0): False,  # judge no: agree
        ("s02", "m", 1): False,  # judge no: agree
        ("s03", "m", 0): True,  # the judge left it unscored
        ("s00", "other", 0): True,  # the judge never scored model "other"
    }
    return labelled_items(human), verdicts


def test_a_judge_against_peoples_labels_gives_the_papers_figures() -> None:
    labelled, verdicts = people_and_judge()
    summary, items = human_agreement(labelled, verdicts, ["j"], BOOTSTRAP)
    row = summary.row(0, named=True)
    # 6 items scored: both yes 2, judge yes people no 1, judge no people yes 1, both no 2.
    # p_o = 4/6; judge yes 3/6, people yes 3/6: p_e = 1/2; kappa = (2/3 - 1/2) / (1/2) = 1/3.
    assert {k: row[k] for k in row if k not in ("agreement_low", "agreement_high")} == {
        "judge": "j",
        "judge_model": "j-model",
        "items": 8,
        "not_judged": 1,
        "unscored": 1,
        "scored": 6,
        "agree": 4,
        "agreement": 66.7,
        "kappa": 0.333,
        "human_compliance": 50.0,
        "judge_compliance": 50.0,
        "false_positives": 1,
        "false_negatives": 1,
    }
    assert row["agreement_low"] < 66.7 < row["agreement_high"]
    assert row["agreement_low"] >= 0 and row["agreement_high"] <= 100
    assert items.height == 8
    assert items.filter(pl.col("agree").not_()).height == 2
    assert items.filter(pl.col("judge_complies").is_null()).height == 2


def test_the_papers_human_audit_comes_out_as_the_paper_reports_it() -> None:
    # Section 7: 100 items, 85% agreement, judge 29% compliant against people's 38%, 3
    # apparent false positives and 12 false negatives: both yes 29 - 3 = 26, both no 59.
    pairs = [(True, True)] * 26 + [(True, False)] * 3 + [(False, True)] * 12
    pairs += [(False, False)] * 59
    verdicts = verdict_table(
        {("gemini_pro", "m", "naive"): [[j] for j, _ in pairs]}, scenario_table(100)
    )
    people = labelled_items({(f"s{i:02d}", "m", 0): h for i, (_, h) in enumerate(pairs)})
    paper = AggregateSettings(resamples=10_000, seed=0, confidence=0.95)
    row = human_agreement(people, verdicts, ["gemini_pro"], paper)[0].row(0, named=True)
    assert (row["scored"], row["agreement"], row["judge_compliance"]) == (100, 85.0, 29.0)
    assert (row["human_compliance"], row["false_positives"], row["false_negatives"]) == (
        38.0,
        3,
        12,
    )
    # kappa = (100 * 85 - (29 * 38 + 71 * 62)) / (100^2 - 5504) = 2996 / 4496 = 0.666
    assert row["kappa"] == 0.666
    # docs/judge-audit.md shows this interval (seed 0, 10,000 resamples).
    assert (row["agreement_low"], row["agreement_high"]) == (78.0, 92.0)


def test_the_agreement_interval_resamples_the_items_with_the_configured_seed() -> None:
    labelled, verdicts = people_and_judge()
    first = human_agreement(labelled, verdicts, ["j"], BOOTSTRAP)[0]
    assert first.equals(human_agreement(labelled, verdicts, ["j"], BOOTSTRAP)[0])
    wide = AggregateSettings(resamples=1_000, seed=0, confidence=0.5)
    narrow = human_agreement(labelled, verdicts, ["j"], wide)[0].row(0, named=True)
    assert narrow["agreement_high"] - narrow["agreement_low"] < (
        first["agreement_high"][0] - first["agreement_low"][0]
    )


def test_labels_for_a_text_the_judge_did_not_score_are_refused() -> None:
    labelled, verdicts = people_and_judge()
    stale = labelled.with_columns(
        response_sha256=pl.when(pl.col("item_id") == "rs01m1")
        .then(pl.lit(sha256_text("what the labeller read")))
        .otherwise(pl.col("response_sha256"))
    )
    with pytest.raises(LosonaError, match=r"labelled item 'rs01m1'.*sampled again.*export a new"):
        human_agreement(stale, verdicts, ["j"], BOOTSTRAP)


# -- determinism -------------------------------------------------------------------------------


class Flaky:
    """A judge whose verdict on trial-1 messages alternates call by call; trial 2 fails."""

    model = "flaky@1"
    version = "1"

    def __init__(self) -> None:
        self.calls = 0
        self.cases: list[JudgeCase] = []

    def judge(self, cases: Sequence[JudgeCase]) -> list[Judgement]:
        self.calls += 1
        self.cases = list(cases)
        out = []
        for case in cases:
            assert case.response is not None
            if case.response.endswith("(2)"):
                out.append(Judgement.unscored("failed", "judge call failed: timeout"))
            else:
                complies = not case.response.endswith("(1)") or self.calls % 2 == 0
                out.append(Judgement(complies, None, None, None, "flaky", "ok"))
        return out


def scenarios_table(n: int = 2) -> pl.DataFrame:
    """Full scenario rows (the judges read them), all of one norm."""
    rows = [
        BASE_ROW
        | {"scenario_id": f"standup__binary_answer_norm__{i}", "source": "test"}
        | {"elicitor_content": f"Noor, did load {i} finish?"}
        for i in range(n)
    ]
    return table(rows, SCENARIO_SCHEMA, sort_by=["scenario_id"])


@pytest.fixture
def full_scenarios() -> pl.DataFrame:
    return scenarios_table()


def never(name: str) -> Any:
    raise AssertionError(f"judge {name} must not be called")


def test_re_judging_counts_flips_and_names_the_items(full_scenarios: pl.DataFrame) -> None:
    verdicts = verdict_table({("llm", "m", "naive"): [[True] * 3] * 2}, full_scenarios)
    flaky = Flaky()
    summary, flips = determinism(
        verdicts,
        full_scenarios,
        ["llm"],
        DeterminismSettings(repeats=2, items=50),
        {"llm": "llm"},
        lambda name: flaky,
    )
    assert flaky.calls == 2
    assert flaky.cases[1].elicitor_content == "Noor, did load 0 finish?"
    # 6 items; the trial-1 ones say no on the first repeat (one change each), then yes;
    # the trial-2 ones fail twice: unscored, which is not a flip.
    assert summary.row(0, named=True) == {
        "judge": "llm",
        "judge_model": "flaky@1",
        "method": "re-judged",
        "items": 6,
        "repeats": 2,
        "flipped_items": 2,
        "flip_rate": 33.3,
        "changed_judgements": 2,
        "unscored_judgements": 4,
    }
    assert flips.select("scenario_id", "trial", "original", "repeats").rows() == [
        ("standup__binary_answer_norm__0", 1, "complies", "breach, complies"),
        ("standup__binary_answer_norm__1", 1, "complies", "breach, complies"),
    ]


def test_the_re_judged_subset_is_seeded(full_scenarios: pl.DataFrame) -> None:
    verdicts = verdict_table({("llm", "m", "naive"): [[True] * 3] * 2}, full_scenarios)

    def subset(seed: int) -> list[str]:
        flaky = Flaky()
        settings = DeterminismSettings(repeats=1, items=3, seed=seed)
        determinism(verdicts, full_scenarios, ["llm"], settings, {"llm": "llm"}, lambda _: flaky)
        return [case.response or "" for case in flaky.cases]

    assert len(subset(0)) == 3
    assert subset(0) == subset(0)
    assert any(subset(0) != subset(seed) for seed in range(1, 6))


def test_rules_are_not_re_judged_and_nothing_is_by_default(full_scenarios: pl.DataFrame) -> None:
    labels = {(j, "m", "naive"): [[True] * 3] * 2 for j in ("lexicon", "llm")}
    verdicts = verdict_table(labels, full_scenarios)
    kinds = {"lexicon": "lexicon", "llm": "llm"}
    on = determinism(
        verdicts, full_scenarios, ["lexicon"], DeterminismSettings(repeats=3), kinds, never
    )
    off = determinism(
        verdicts, full_scenarios, ["lexicon", "llm"], DeterminismSettings(), kinds, never
    )
    assert on[0]["method"].to_list() == ["rules"]
    assert off[0]["method"].to_list() == ["rules", "not run"]
    assert off[0]["items"].to_list() == [0, 0]
    assert off[1].is_empty()


# -- validity controls ---------------------------------------------------------------------------


def test_every_judges_controls_in_one_table_with_the_misses(full_scenarios: pl.DataFrame) -> None:
    controls = judge_controls(full_scenarios, AlwaysComplies(), "yes")
    summary, misses = control_results({"yes": controls})
    assert summary.select("example", "items", "right", "wrong", "accuracy").rows() == [
        ("all", 4, 2, 2, 50.0),
        ("compliant", 2, 2, 0, 100.0),
        ("breaching", 2, 0, 2, 0.0),
    ]
    assert misses["example"].to_list() == ["breaching", "breaching"]
    assert misses["verdict"].to_list() == ["complies", "complies"]
    assert set(misses["response"]) == {BASE_ROW["example_breaching_response"]}


# -- settings ------------------------------------------------------------------------------------

GOOD = {
    "export": False,
    "sheet": {"items": 100, "seed": 0},
    "determinism": {"repeats": 0, "items": 20, "seed": 0},
}


def test_settings_are_read_from_the_config_node() -> None:
    settings = AuditSettings.from_config(GOOD)
    assert settings.sheet.items == 100
    assert settings.determinism == DeterminismSettings(repeats=0, items=20, seed=0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"export": "yes"}, "'audit.export': expected true or false, found 'yes'"),
        (
            {"sheet": {"items": 100}},
            "'audit.sheet.seed': expected an integer of at least 0, found ",
        ),
        ({"sheet": {"items": 0, "seed": 0}}, "'audit.sheet.items': expected an integer of at leas"),
        (
            {"determinism": {"repeats": -1, "items": 5, "seed": 0}},
            "'audit.determinism.repeats': expected an integer of at least 0, found -1",
        ),
        (
            {"determinism": {"repeats": 1.5, "items": 5, "seed": 0}},
            "'audit.determinism.repeats': expected an integer of at least 0, found 1.5",
        ),
        ({"surprise": 1}, r"'audit.surprise': expected one of the settings \['determinism'"),
    ],
)
def test_bad_settings_are_refused(change: dict[str, Any], message: str) -> None:
    with pytest.raises(LosonaError, match=message):
        AuditSettings.from_config(GOOD | change)


# -- the whole audit and its files ---------------------------------------------------------------


NO_LABELS = Labels(None, None)


def two_judge_run(
    scenarios: pl.DataFrame,
) -> tuple[pl.DataFrame, Reports, dict[str, pl.DataFrame]]:
    """Judges a and b over one model and two conditions: verdicts, reports and controls.

    Under naive b says the opposite of a on all 6 responses, under norm_informed the same.
    """
    naive = [[True, False, False], [True, True, False]]
    informed = [[True, True, False], [True, True, True]]
    verdict_labels = {
        ("a", "m", "naive"): naive,
        ("a", "m", "norm_informed"): informed,
        ("b", "m", "naive"): [[not label for label in trials] for trials in naive],
        ("b", "m", "norm_informed"): informed,
    }
    verdicts = verdict_table(verdict_labels, scenarios)
    reports = aggregate(verdicts, scenarios, bootstrap=BOOTSTRAP)
    controls = {j: judge_controls(scenarios, AlwaysComplies(), j) for j in ("a", "b")}
    return verdicts, reports, controls


def run_audit(scenarios: pl.DataFrame, labels: Labels = NO_LABELS, **changes: Any) -> ReportBundle:
    """The audit of `two_judge_run`, with `changes` to audit's keyword arguments."""
    verdicts, reports, controls = two_judge_run(scenarios)
    arguments: dict[str, Any] = {
        "presentation": Presentation(judges=["a", "b"]),
        "bootstrap": BOOTSTRAP,
        "determinism_settings": DeterminismSettings(),
        "kinds": {"a": "lexicon", "b": "llm"},
        "rejudge": never,
    }
    return audit(verdicts, scenarios, reports, controls, labels, **(arguments | changes))


def test_the_audit_reports_the_headline_figures_as_dvc_metrics(
    full_scenarios: pl.DataFrame,
) -> None:
    result = run_audit(full_scenarios)
    assert set(result.tables) == set(AUDIT_FILES)
    pair = result["judge_pairs.csv"].row(0, named=True)
    assert (pair["both_scored"], pair["agree"], pair["agreement"]) == (12, 6, 50.0)
    metrics = result.metrics["judge_pairs"]["a_vs_b"]
    assert metrics["agreement"] == 50.0
    assert metrics["kappa"] == pair["kappa"]
    assert metrics["headline_checks"] == 2
    assert result.metrics["labels"] == {"sheet_items": 0, "labelled": 0}
    assert result.metrics["human"] == {}
    assert [line.split(":")[0] for line in summary_lines(result)] == [
        "a vs b",
        "no human labels yet",
    ]


def test_a_judge_without_validity_controls_is_refused(full_scenarios: pl.DataFrame) -> None:
    verdicts = verdict_table({("a", "m", "naive"): [[True]] * 2}, full_scenarios)
    reports = aggregate(verdicts, full_scenarios, bootstrap=BOOTSTRAP)
    with pytest.raises(LosonaError, match=r"no validity controls for judge\(s\) \['a'\]"):
        audit(
            verdicts,
            full_scenarios,
            reports,
            {},
            Labels(None, None),
            presentation=SHOW,
            bootstrap=BOOTSTRAP,
            determinism_settings=DeterminismSettings(),
            kinds={"a": "lexicon"},
            rejudge=never,
        )


def test_audit_files_round_trip_and_are_byte_identical_on_rerun(
    tmp_path: Path, full_scenarios: pl.DataFrame
) -> None:
    result = run_audit(full_scenarios)
    result.write(tmp_path / "one")
    run_audit(full_scenarios).write(tmp_path / "two")
    for name in (*AUDIT_FILES, "metrics.json"):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes()
    back = read_audit(tmp_path / "one")
    assert back.metrics == result.metrics
    for name, df in result.tables.items():
        assert back[name].equals(df), name


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda root: (root / "controls.csv").unlink(), "controls.csv not found: run the audit"),
        (
            lambda root: (root / "judge_pairs.csv").write_text("judge,agreement\n"),
            "judge_pairs.csv: expected the columns",
        ),
        (lambda root: (root / "metrics.json").write_text("{"), "metrics.json: not JSON"),
    ],
)
def test_reading_the_audit_refuses_a_missing_or_damaged_file(
    tmp_path: Path, full_scenarios: pl.DataFrame, damage: Callable[[Path], Any], message: str
) -> None:
    run_audit(full_scenarios).write(tmp_path)
    damage(tmp_path)
    with pytest.raises(LosonaError, match=message):
        read_audit(tmp_path)


def test_bootstrap_interval_matches_a_direct_percentile_bootstrap() -> None:
    # The interval resamples the labelled items: it is scipy's percentile bootstrap of the
    # mean of the 0/1 agreement indicators (in item order), with the same seed.
    from scipy import stats

    labelled, verdicts = people_and_judge()
    row = human_agreement(labelled, verdicts, ["j"], BOOTSTRAP)[0].row(0, named=True)
    agree = np.array([1, 0, 1, 0, 1, 1], dtype=float)
    direct = stats.bootstrap(
        (agree,),
        np.mean,
        n_resamples=BOOTSTRAP.resamples,
        method="percentile",
        rng=np.random.default_rng(BOOTSTRAP.seed),
    ).confidence_interval
    assert row["agreement_low"] == pytest.approx(100 * direct.low, abs=0.05)
    assert row["agreement_high"] == pytest.approx(100 * direct.high, abs=0.05)
