"""aggregate: the paper's numbers from verdicts, the unscored-trial policy, refusing bad runs."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import run_stage, verdict_table

from losona.core.config import AggregateSettings
from losona.core.contracts import SCENARIO_SCHEMA, table
from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.judges.verdicts import load_verdicts
from losona.results.aggregate import Reports, aggregate, read_reports
from losona.results.presentation import Presentation, config_labels, outside_sweep

BOOTSTRAP = AggregateSettings(resamples=10_000, seed=0, confidence=0.95)
PAPER_CONDITIONS = ["naive", "elicitor_only", "style_adaptation", "norm_informed"]
CONDITION_LABELS = {
    "naive": "Naive",
    "elicitor_only": "Elicitor-only",
    "style_adaptation": "Style adaptation",
    "norm_informed": "Norm-informed",
}

Cell = tuple[str, str, str]


def scenario_table(n: int = 6, norms: int = 3) -> pl.DataFrame:
    """The scenario columns aggregate reads: ids, events, norms and source (a whole set)."""
    return pl.DataFrame(
        {
            "scenario_id": [f"s{i:02d}" for i in range(n)],
            "event_type": [f"event_{i % 2}" for i in range(n)],
            "norm_id": [f"norm_{i % norms}" for i in range(n)],
            "source": ["test"] * n,
        }
    )


def complying(counts: Iterable[int], k: int = 3) -> list[list[bool | None]]:
    """Trial labels with the given number of complying trials per scenario."""
    return [[trial < c for trial in range(k)] for c in counts]


# -- faithfulness to the paper -------------------------------------------------------------

# Appendix A, Table 1: model -> condition -> (Acc@3, its 95% CI, compliance, consistency).
PAPER_TABLE_1: dict[str, dict[str, tuple[float, tuple[float, float], float, float]]] = {
    "GPT-5.5": {
        "naive": (34.2, (18.4, 50.0), 32.5, 89.5),
        "elicitor_only": (26.3, (13.2, 42.1), 26.3, 78.9),
        "style_adaptation": (26.3, (13.2, 42.1), 28.9, 81.6),
        "norm_informed": (36.8, (21.1, 52.6), 35.1, 84.2),
    },
    "Claude Opus 4.8": {
        "naive": (36.8, (21.1, 52.6), 36.8, 89.5),
        "elicitor_only": (31.6, (18.4, 47.4), 30.7, 76.3),
        "style_adaptation": (34.2, (18.4, 50.0), 31.6, 86.8),
        "norm_informed": (47.4, (31.6, 63.2), 48.2, 81.6),
    },
    "Claude Fable 5": {
        "naive": (47.4, (31.6, 63.2), 47.4, 78.9),
        "elicitor_only": (44.7, (28.9, 60.5), 44.7, 73.7),
        "style_adaptation": (44.7, (28.9, 60.5), 47.4, 81.6),
        "norm_informed": (81.6, (68.4, 92.1), 80.7, 86.8),
    },
    "Gemini 3.1 Pro": {
        "naive": (36.8, (21.1, 52.6), 37.7, 86.8),
        "elicitor_only": (47.4, (31.6, 63.2), 45.6, 89.5),
        "style_adaptation": (47.4, (31.6, 63.2), 46.5, 97.4),
        "norm_informed": (84.2, (71.1, 94.7), 84.2, 89.5),
    },
    "Qwen2.5-72B": {
        "naive": (23.7, (10.5, 36.8), 26.3, 76.3),
        "elicitor_only": (26.3, (13.2, 39.5), 29.8, 84.2),
        "style_adaptation": (21.1, (7.9, 34.2), 23.7, 86.8),
        "norm_informed": (23.7, (10.5, 36.8), 21.9, 84.2),
    },
    "Llama 3.3-70B": {
        "naive": (28.9, (15.8, 44.7), 24.6, 71.1),
        "elicitor_only": (31.6, (18.4, 47.4), 32.5, 71.1),
        "style_adaptation": (28.9, (15.8, 44.7), 31.6, 81.6),
        "norm_informed": (36.8, (21.1, 52.6), 34.2, 71.1),
    },
    "Mistral Medium 3.1": {
        "naive": (36.8, (21.1, 52.6), 37.7, 76.3),
        "elicitor_only": (31.6, (18.4, 47.4), 33.3, 73.7),
        "style_adaptation": (34.2, (18.4, 50.0), 34.2, 73.7),
        "norm_informed": (26.3, (13.2, 42.1), 28.9, 71.1),
    },
    "Gemma 3-27B": {
        "naive": (21.1, (7.9, 34.2), 22.8, 78.9),
        "elicitor_only": (21.1, (7.9, 34.2), 22.8, 89.5),
        "style_adaptation": (21.1, (7.9, 34.2), 21.9, 81.6),
        "norm_informed": (31.6, (18.4, 47.4), 28.9, 81.6),
    },
}
# Section 6: the mean over models of accuracy-at-3 per condition.
PAPER_MEANS = {
    "naive": 33.2,
    "elicitor_only": 32.6,
    "style_adaptation": 32.2,
    "norm_informed": 46.1,
}
# Section 6 / Figure 4: recovered failures and introduced regressions of norm_informed.
# Only Gemini's pair (18/24, 0/14) agrees with Table 1: for the other seven models the
# x/y that Section 6 prints do not add up to Table 1's rows (Qwen, for one: 2 recovered and
# 7 regressed, yet the same 23.7 under both conditions). Those models keep Section 6's
# number of regressions, with the recoveries Table 1 then implies.
PAPER_FLIPS = {
    "GPT-5.5": (4, 3),
    "Claude Opus 4.8": (7, 3),
    "Claude Fable 5": (13, 0),
    "Gemini 3.1 Pro": (18, 0),
    "Qwen2.5-72B": (7, 7),
    "Llama 3.3-70B": (4, 1),
    "Mistral Medium 3.1": (1, 5),
    "Gemma 3-27B": (5, 1),
}
# Section 6: the paired effect of norm_informed in points, and Gemini's interval.
PAPER_EFFECTS = {
    "Gemini 3.1 Pro": 47.4,
    "Claude Fable 5": 34.2,
    "Claude Opus 4.8": 10.5,
    "Gemma 3-27B": 10.5,
    "Llama 3.3-70B": 7.9,
    "Qwen2.5-72B": 0.0,
    "Mistral Medium 3.1": -10.5,
}
N, K = 38, 3


def trial_counts(acc: float, compliance: float, consistency: float) -> dict[int, int]:
    """How many scenarios have 0, 1, 2 and 3 complying trials, from one row of Table 1.

    With K = 3 a row fixes these four counts: passes are the scenarios with 2 or 3,
    consistent ones have 0 or 3, and the complying trials sum to compliance x 3N.
    """
    passes, consistent = round(acc * N / 100), round(consistency * N / 100)
    complying_trials = round(compliance * N * K / 100)
    three, remainder = divmod(complying_trials - N + consistent - passes, 2)
    counts = {
        3: three,
        2: passes - three,
        0: consistent - three,
        1: N - consistent - passes + three,
    }
    assert remainder == 0 and min(counts.values()) >= 0, "Table 1 row is not realisable"
    return counts


def paper_labels() -> dict[Cell, list[list[bool | None]]]:
    """Trial labels whose scenario outcomes reproduce Table 1 and the flips above."""
    labels: dict[Cell, list[list[bool | None]]] = {}
    for model, rows in PAPER_TABLE_1.items():
        naive_passes = round(rows["naive"][0] * N / 100)
        for condition, (acc, _, compliance, consistency) in rows.items():
            passes = round(acc * N / 100)
            recovered, regressed = (
                PAPER_FLIPS[model]
                if condition == "norm_informed"
                else (max(passes - naive_passes, 0), max(naive_passes - passes, 0))
            )
            assert recovered - regressed == passes - naive_passes
            # Naive passes scenarios 0..naive_passes-1; this condition loses the last
            # `regressed` of those and wins the first `recovered` naive failures.
            passing = set(range(naive_passes - regressed)) | set(
                range(naive_passes, naive_passes + recovered)
            )
            counts = trial_counts(acc, compliance, consistency)
            passing_counts = [3] * counts[3] + [2] * counts[2]
            failing_counts = [0] * counts[0] + [1] * counts[1]
            per_scenario = [
                passing_counts.pop() if i in passing else failing_counts.pop() for i in range(N)
            ]
            labels[("gemini_judge", model, condition)] = complying(per_scenario)
    return labels


@pytest.fixture(scope="module")
def paper_reports() -> Reports:
    scenarios = scenario_table(N, norms=22)
    return aggregate(
        verdict_table(paper_labels(), scenarios),
        scenarios,
        bootstrap=BOOTSTRAP,
        presentation=Presentation(
            models=list(PAPER_TABLE_1),
            conditions=PAPER_CONDITIONS,
            condition_labels=CONDITION_LABELS,
        ),
    )


def test_table_1_is_reproduced_exactly_with_intervals_as_the_papers(
    paper_reports: Reports,
) -> None:
    results = paper_reports["results.csv"]
    assert results.height == 32
    for row in results.iter_rows(named=True):
        model, condition = row["subject_model"], row["condition"]
        acc, (low, high), compliance, consistency = PAPER_TABLE_1[model][condition]
        where = f"{model} / {condition}"
        assert (row["acc_at_k"], row["compliance"], row["consistency"]) == (
            acc,
            compliance,
            consistency,
        ), where
        assert (row["k"], row["scenarios"], row["unscored_trials"]) == (3, 38, 0)
        # Bootstrap intervals move by whole scenarios (2.6 points here), and the paper's
        # own intervals for one estimate differ by one: 26.3 has [13.2, 42.1] three times
        # and [13.2, 39.5] once. So: within two points for Gemini, as the issue asks, and
        # within one scenario for every row.
        tolerance = 2.0 if model == "Gemini 3.1 Pro" else 100 / N + 0.05
        assert abs(row["acc_low"] - low) <= tolerance, where
        assert abs(row["acc_high"] - high) <= tolerance, where


def test_the_mean_over_models_matches_section_6(paper_reports: Reports) -> None:
    means = paper_reports["means.csv"]
    assert dict(means.select("condition", "acc_at_k").iter_rows()) == PAPER_MEANS


def test_gemini_paired_effect_and_flips_match_the_paper(paper_reports: Reports) -> None:
    gemini = (
        paper_reports["deltas.csv"]
        .filter(pl.col("subject_model") == "Gemini 3.1 Pro", pl.col("condition") == "norm_informed")
        .row(0, named=True)
    )
    assert gemini["delta"] == 47.4
    assert abs(gemini["delta_low"] - 31.6) <= 2 and abs(gemini["delta_high"] - 63.2) <= 2
    assert (gemini["recovered"], gemini["naive_failures"]) == (18, 24)
    assert (gemini["regressed"], gemini["naive_successes"]) == (0, 14)
    assert gemini["mcnemar_p"] == pytest.approx(2 * 0.5**18)


def test_section_6_effects_and_the_flip_lists(paper_reports: Reports) -> None:
    deltas = paper_reports["deltas.csv"].filter(pl.col("condition") == "norm_informed")
    effect = dict(deltas.select("subject_model", "delta").iter_rows())
    assert {model: effect[model] for model in PAPER_EFFECTS} == PAPER_EFFECTS
    flips = paper_reports["flips.csv"].filter(pl.col("condition") == "norm_informed")
    for model, (recovered, regressed) in PAPER_FLIPS.items():
        mine = flips.filter(pl.col("subject_model") == model)
        assert mine.filter(pl.col("flip") == "recovered").height == recovered, model
        assert mine.filter(pl.col("flip") == "regressed").height == regressed, model
    regressed_ids = flips.filter(
        pl.col("subject_model") == "Qwen2.5-72B", pl.col("flip") == "regressed"
    )["scenario_id"].to_list()
    assert regressed_ids == [f"s{i:02d}" for i in range(2, 9)]  # naive passes 0..8, loses 2..8


def test_table1_md_has_the_papers_layout_and_names_the_judge(paper_reports: Reports) -> None:
    text = paper_reports.table1
    assert "## Judge: gemini_judge (gemini_judge-model)" in text
    assert "| Model | Prompt | Acc@3 (95% CI) | Compliance | Consistency |" in text
    assert "| Gemini 3.1 Pro | Norm-informed | 84.2 [" in text
    assert "Unscored trials: 0 of 3648" in text
    assert "| Norm-informed | 8 | 46.1 [" in text  # the mean over models, Section 6


# -- the unscored-trial policy ---------------------------------------------------------------


def test_unscored_trials_never_count_as_breaches() -> None:
    scenarios = scenario_table(4)
    labels = {
        ("j", "m", "naive"): [
            [True, True, None],  # settled: passes
            [True, False, None],  # open: left out
            [False, False, None],  # settled: fails
            [None, None, None],  # nothing scored: left out
        ]
    }
    reports = aggregate(verdict_table(labels, scenarios), scenarios, bootstrap=BOOTSTRAP)
    row = reports["results.csv"].row(0, named=True)
    assert (row["scenarios"], row["undetermined"], row["passed"]) == (2, 2, 1)
    assert row["acc_at_k"] == 50.0  # not 25.0, as reading unscored trials as breaches gives
    assert row["compliance"] == 50.0  # 3 of 6 scored trials
    assert (row["unscored_trials"], row["trials"]) == (6, 12)
    assert reports.metrics["j"]["counts"] == {
        "trials": 12,
        "unscored_trials": 6,
        "undetermined_scenarios": 2,
        "unscored_by_status": {"unparseable": 6},
    }
    assert reports.metrics["settings"]["unscored_policy"] == "settled-by-scored-trials"
    assert "Unscored trials: 6 of 12 (6 unparseable)" in reports.table1
    assert "Undetermined scenarios: m / naive: 2" in reports.table1
    assert "Mean over models" not in reports.table1  # one model is its own mean


def test_paired_effects_use_only_scenarios_settled_in_both_conditions() -> None:
    scenarios = scenario_table(4)
    labels = {
        ("j", "m", "naive"): complying([0, 0, 3, 3]),
        ("j", "m", "norm_informed"): [[True] * 3, [True, False, None], [False] * 3, [True] * 3],
    }
    reports = aggregate(verdict_table(labels, scenarios), scenarios, bootstrap=BOOTSTRAP)
    delta = reports["deltas.csv"].row(0, named=True)
    assert delta["scenarios"] == 3
    assert (delta["recovered"], delta["naive_failures"]) == (1, 1)
    assert (delta["regressed"], delta["naive_successes"]) == (1, 2)
    assert delta["delta"] == 0.0


# -- layout ----------------------------------------------------------------------------------


def small_run(models: Sequence[str] = ("b", "a"), judges: Sequence[str] = ("j",)) -> pl.DataFrame:
    scenarios = scenario_table()
    counts = {"naive": [0, 1, 2, 3, 0, 1], "norm_informed": [3, 3, 2, 0, 1, 3]}
    labels = {
        (judge, model, condition): complying(c)
        for judge in judges
        for model in models
        for condition, c in counts.items()
    }
    return verdict_table(labels, scenarios)


def test_rows_follow_the_sweep_order_and_carry_labels() -> None:
    reports = aggregate(
        small_run(models=("b", "a", "c")),
        scenario_table(),
        bootstrap=BOOTSTRAP,
        presentation=Presentation(
            models=["c", "a"],
            conditions=["naive", "norm_informed"],
            model_labels={"a": "Model A"},
            condition_labels=CONDITION_LABELS,
        ),
    )
    results = reports["results.csv"]
    assert results["subject_model"].to_list() == ["c", "c", "a", "a", "b", "b"]
    assert results["model_label"].to_list()[2:4] == ["Model A", "Model A"]
    assert results["condition_label"].to_list()[:2] == ["Naive", "Norm-informed"]
    assert reports["by_norm.csv"]["subject_model"].to_list()[0] == "c"


def test_breakdowns_count_scenarios_per_norm_and_event() -> None:
    reports = aggregate(small_run(models=("a",)), scenario_table(), bootstrap=BOOTSTRAP)
    by_norm = reports["by_norm.csv"].filter(pl.col("condition") == "naive")
    # norm_0 holds s00 (0 of 3) and s03 (3 of 3); norm_2 holds s02 (2 of 3) and s05 (1 of 3).
    assert by_norm.select("norm_id", "scenarios", "passed").rows() == [
        ("norm_0", 2, 1),
        ("norm_1", 2, 0),
        ("norm_2", 2, 1),
    ]
    by_event = reports["by_event.csv"].filter(pl.col("condition") == "naive")
    assert by_event.select("event_type", "scenarios", "passed").rows() == [
        ("event_0", 3, 1),
        ("event_1", 3, 1),
    ]


def test_two_judges_are_reported_side_by_side() -> None:
    reports = aggregate(small_run(judges=("j1", "j2")), scenario_table(), bootstrap=BOOTSTRAP)
    assert set(reports.metrics) == {"settings", "j1", "j2"}
    assert reports.table1.count("## Judge:") == 2
    assert reports["means.csv"]["judge"].to_list() == ["j1", "j1", "j2", "j2"]


def test_a_run_without_naive_has_no_paired_effects() -> None:
    scenarios = scenario_table()
    labels = {("j", "m", "norm_informed"): complying([3, 0, 3, 0, 3, 0])}
    reports = aggregate(verdict_table(labels, scenarios), scenarios, bootstrap=BOOTSTRAP)
    assert reports["deltas.csv"].is_empty() and reports["flips.csv"].is_empty()
    assert reports["results.csv"]["acc_at_k"].to_list() == [50.0]


def test_consistency_at_k_1_is_null_with_a_note_wherever_it_is_written(tmp_path: Path) -> None:
    scenarios = scenario_table()
    labels = {
        ("j", model, condition): complying([1, 0, 1, 1, 0, 1], k=1)
        for model in ("a", "b")
        for condition in ("naive", "norm_informed")
    }
    reports = aggregate(verdict_table(labels, scenarios), scenarios, bootstrap=BOOTSTRAP)
    assert reports["results.csv"]["consistency"].to_list() == [None] * 4
    assert reports["results.csv"]["consistency_scenarios"].to_list() == [0] * 4
    assert reports["means.csv"]["consistency"].to_list() == [None] * 2
    assert reports["outcomes.csv"]["consistent"].null_count() == 24
    judge = reports.metrics["j"]
    assert judge["models"]["a"]["naive"]["consistency"] is None
    assert judge["mean_over_models"]["naive"]["consistency"] is None
    assert "| a | naive | 66.7 [" in reports.table1 and "| 66.7 | n/a |" in reports.table1
    assert (
        "Consistency: share of scenarios whose trial labels all agree (n/a at K = 1: each "
        "scenario has one trial, which always agrees with itself)."
    ) in reports.table1
    assert "a scenario passes when its one trial complies" in reports.table1
    reports.write(tmp_path)
    written = list(csv.DictReader((tmp_path / "results.csv").open(encoding="utf-8")))
    assert {row["consistency"] for row in written} == {""}
    assert (
        json.loads((tmp_path / "metrics.json").read_text())["j"]["models"]["b"]["naive"][
            "consistency"
        ]
        is None
    )


def test_consistency_at_k_3_keeps_its_figure_and_no_k_1_note() -> None:
    reports = aggregate(small_run(), scenario_table(), bootstrap=BOOTSTRAP)
    assert None not in reports["results.csv"]["consistency"].to_list()
    assert "n/a at K = 1" not in reports.table1
    assert "over 6 scenarios; a scenario passes when at least 2 of its 3 trials comply" in (
        reports.table1
    )


SUBSET_SOURCE = "bundled:losona-bundled@1.0; subset of 44: limit 6 stratified by norm, seed 0"


def test_table1_says_that_a_subset_run_is_a_subset_and_a_full_run_says_nothing() -> None:
    full = aggregate(small_run(), scenario_table(), bootstrap=BOOTSTRAP)
    subset = scenario_table().with_columns(source=pl.lit(SUBSET_SOURCE))
    part = aggregate(small_run(), subset, bootstrap=BOOTSTRAP)
    assert "subset" not in full.table1.lower()
    # Under the title, before any figure, and nothing else changes.
    title = "# LoSoNA results (the paper's Table 1)\n"
    warning = (
        "> **Subset:** this run covers 6 of 44 scenarios (limit 6 stratified by norm, "
        "seed 0), not the whole dataset; its figures are not comparable with a full run's.\n"
    )
    assert part.table1.startswith(title + "\n" + warning)
    assert part.table1.replace(warning + "\n", "") == full.table1
    assert part.metrics == full.metrics


def test_reports_round_trip_through_their_files(tmp_path: Path) -> None:
    reports = aggregate(small_run(), scenario_table(), bootstrap=BOOTSTRAP)
    reports.write(tmp_path)
    again = read_reports(tmp_path)
    for name, df in reports.tables.items():
        assert again[name].equals(df), name
    assert again.metrics == reports.metrics and again.table1 == reports.table1


def test_reports_are_byte_identical_on_rerun(tmp_path: Path) -> None:
    for run in ("first", "second"):
        aggregate(small_run(), scenario_table(), bootstrap=BOOTSTRAP).write(tmp_path / run)
    for path in (tmp_path / "first").iterdir():
        assert path.read_bytes() == (tmp_path / "second" / path.name).read_bytes(), path.name


def test_reading_reports_refuses_a_missing_or_reshaped_file(tmp_path: Path) -> None:
    aggregate(small_run(), scenario_table(), bootstrap=BOOTSTRAP).write(tmp_path)
    deltas = tmp_path / "deltas.csv"
    deltas.write_text(deltas.read_text().replace("recovered", "recovered_count", 1))
    with pytest.raises(LosonaError, match=r"deltas\.csv: expected the columns"):
        read_reports(tmp_path)
    deltas.unlink()
    with pytest.raises(LosonaError, match=r"deltas\.csv not found: run the aggregate stage"):
        read_reports(tmp_path)


# -- refusing verdicts that do not form one run -----------------------------------------------

Mutation = Callable[[pl.DataFrame], pl.DataFrame]


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda v: v.filter(
                ~((pl.col("scenario_id") == "s03") & (pl.col("subject_model") == "a"))
            ),
            "model 'a', condition '.*' miss 1 of 6 scenarios \\(s03\\)",
        ),
        (
            lambda v: v.filter(~((pl.col("scenario_id") == "s02") & (pl.col("trial") == 2))),
            "scenario 's02' has 2 trials where others have 3",
        ),
        (
            lambda v: pl.concat([v, v.head(1)]),
            "scenario 's00': trial 0 appears more than once",
        ),
        (
            lambda v: v.with_columns(scenario_id=pl.col("scenario_id").replace("s05", "s99")),
            "name scenario 's99', which is not in the scenario table",
        ),
        (
            lambda v: v.with_columns(norm_id=pl.col("norm_id").replace("norm_1", "norm_9")),
            "event_type/norm_id are event_1/norm_9, the scenario table says event_1/norm_1",
        ),
        (
            lambda v: v.filter(
                ~((pl.col("subject_model") == "b") & (pl.col("condition") == "naive"))
            ),
            "no verdicts for judge 'j', model 'b', condition 'naive'",
        ),
        (
            lambda v: v.with_columns(trial=pl.lit(None, dtype=pl.Int32)),
            "column 'trial' has empty values",
        ),
    ],
)
def test_verdicts_that_do_not_form_one_run_are_refused(mutate: Mutation, message: str) -> None:
    with pytest.raises(LosonaError, match=message):
        aggregate(mutate(small_run()), scenario_table(), bootstrap=BOOTSTRAP)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"resamples": 0, "seed": 0, "confidence": 0.95},
            "conf/config.yaml: 'aggregate.resamples': expected an integer of at least 1, found 0",
        ),
        (
            {"resamples": 10, "seed": 0, "confidence": 95},
            "'aggregate.confidence': expected a number between 0 and 1",
        ),
        (
            {"resamples": 10, "seed": 0, "confidence": float("nan")},
            "'aggregate.confidence': expected a number between 0 and 1 .*, found nan",
        ),
        ({"resamples": 10, "seed": "x", "confidence": 0.9}, "'aggregate.seed': expected an int"),
        ({"resamples": 10, "seed": 0}, "'aggregate.confidence': expected .*, found nothing"),
        (
            {"resamples": 10, "seed": 0, "confidence": 0.9, "method": "bca"},
            r"'aggregate.method': expected one of the settings \['confidence'",
        ),
    ],
)
def test_bad_bootstrap_settings_are_refused(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(LosonaError, match=message):
        AggregateSettings.from_config(settings)


# -- verdict files ---------------------------------------------------------------------------


def write_run(root: Path, run: pl.DataFrame) -> None:
    for (judge, model, condition), part in run.group_by(
        "judge", "subject_model", "condition", maintain_order=True
    ):
        write_parquet(part, root / str(judge) / str(model) / f"{condition}.parquet")


def test_only_files_three_levels_deep_are_verdicts(tmp_path: Path) -> None:
    run = small_run()
    write_run(tmp_path, run)
    write_parquet(pl.DataFrame({"other": [1]}), tmp_path / "j" / "controls.parquet")
    write_parquet(pl.DataFrame({"other": [1]}), tmp_path / "j" / "a" / "x" / "deeper.parquet")
    (tmp_path / "j" / "a" / "notes.txt").write_text("not a verdict file")
    loaded = load_verdicts(tmp_path)
    assert loaded.sort(pl.all()).equals(run.sort(pl.all()))


def test_a_verdict_file_must_hold_what_its_place_says(tmp_path: Path) -> None:
    write_run(tmp_path, small_run())
    (tmp_path / "j" / "a" / "naive.parquet").rename(tmp_path / "j" / "a" / "norm_informed2.parquet")
    with pytest.raises(
        LosonaError, match=r"column 'condition' holds \['naive'\].*'norm_informed2'"
    ):
        load_verdicts(tmp_path)


def test_a_verdict_file_of_another_shape_is_refused(tmp_path: Path) -> None:
    write_parquet(pl.DataFrame({"scenario_id": ["s00"]}), tmp_path / "j" / "a" / "naive.parquet")
    with pytest.raises(LosonaError, match=r"naive\.parquet: expected the columns"):
        load_verdicts(tmp_path)


def test_no_verdicts_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(LosonaError, match="not found: run the judge stage first"):
        load_verdicts(tmp_path / "missing")
    with pytest.raises(LosonaError, match="holds no verdict files"):
        load_verdicts(tmp_path)


# -- config and the stage ----------------------------------------------------------------------


def test_labels_come_from_config_and_fall_back_to_the_name(workdir: Path) -> None:
    assert config_labels("condition", ["norm_informed", "my_condition"]) == {
        "norm_informed": "Norm-informed",
        "my_condition": "my_condition",
    }


def test_verdicts_outside_the_sweep_are_named() -> None:
    sweep = {"judges": ["j"], "models": ["a"], "conditions": ["naive", "norm_informed"]}
    assert outside_sweep(small_run(), sweep) == ["subject_model b (not in sweep.models)"]


def write_inputs(root: Path, scenario_row: Callable[..., dict[str, Any]]) -> None:
    rows = [
        scenario_row(scenario_id=sid, event_type=event, norm_id=norm, source="test")
        for sid, event, norm, _ in scenario_table().iter_rows()
    ]
    write_parquet(table(rows, SCENARIO_SCHEMA, sort_by=["scenario_id"]), root / "scenarios.parquet")
    write_run(root / "verdicts", small_run())


@pytest.mark.slow
def test_the_stage_writes_the_reports_and_dvc_metrics(
    workdir: Path, scenario_row: Callable[..., dict[str, Any]]
) -> None:
    write_inputs(workdir, scenario_row)
    paths = [
        f"paths.scenarios={workdir / 'scenarios.parquet'}",
        f"paths.verdicts_dir={workdir / 'verdicts'}",
        f"paths.reports_dir={workdir / 'reports'}",
        "aggregate.resamples=500",
    ]
    done = run_stage("aggregate", *paths)
    assert done.returncode == 0, done.stderr
    assert "2 models" not in done.stdout and "-> " in done.stdout
    assert "subject_model a, b (not in sweep.models)" in done.stderr
    metrics = json.loads((workdir / "reports" / "metrics.json").read_text())
    assert metrics["settings"]["bootstrap_resamples"] == 500
    assert metrics["j"]["models"]["a"]["norm_informed"]["delta"] == 33.3

    failed = run_stage(
        "aggregate", *paths[:2], f"paths.reports_dir={workdir / 'other'}", "aggregate.confidence=2"
    )
    assert failed.returncode == 2
    assert failed.stderr.startswith(
        "error: the command line (aggregate.confidence=...): 'aggregate.confidence': expected a "
        "number between 0 and 1 (e.g. 0.95), found 2"
    )
    assert not (workdir / "other").exists()


def test_a_panel_with_a_test_double_member_is_marked_as_one(workdir: Path) -> None:
    # The repo's own panels: offline_panel pools the lexicon rules and the scripted judge
    # (a test double), so its verdicts are partly scripted; paper_panel's members are real.
    labels = config_labels("judge", ["offline_panel", "paper_panel"])
    assert labels == {
        "offline_panel": "Lexicon and scripted judge (panel) [TEST DOUBLE]",
        "paper_panel": "Gemini 3.1 Pro and Claude Opus 4.8 (panel)",
    }


def test_judges_are_labelled_and_a_test_double_is_marked_in_the_tables(workdir: Path) -> None:
    # The repo's own configs: the scripted judge's says `test_double: true`.
    labels = config_labels("judge", ["lexicon", "local_openai", "gone"])
    assert labels == {
        "lexicon": "Lexicon rules (offline)",
        "local_openai": "Scripted judge (local test server) [TEST DOUBLE]",
        "gone": "gone",  # verdicts whose config no longer exists keep the name
    }
    reports = aggregate(
        small_run(judges=("lexicon", "local_openai")),
        scenario_table(),
        bootstrap=BOOTSTRAP,
        presentation=Presentation(judge_labels=labels),
    )
    results = reports["results.csv"]
    assert dict(results.select("judge", "judge_label").unique().iter_rows()) == {
        "lexicon": "Lexicon rules (offline)",
        "local_openai": "Scripted judge (local test server) [TEST DOUBLE]",
    }
    assert (
        "## Judge: Scripted judge (local test server) [TEST DOUBLE] "
        "(local_openai, local_openai-model)"
    ) in reports.table1
    assert "## Judge: Lexicon rules (offline) (lexicon, lexicon-model)" in reports.table1
