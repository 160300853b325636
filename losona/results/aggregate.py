"""aggregate: verdicts into the paper's report tables, every statistic of a run from one
scenario bootstrap, laid out as the paper does (Table 1, Section 6)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from losona.core.config import AggregateSettings, judge_kind_settings
from losona.core.contracts import CONTROL_SCHEMA, subset_note, table
from losona.core.files import read_parquet
from losona.core.formatting import percent
from losona.core.layout import RunLayout
from losona.judges.health import JudgeEvidence, controls_accuracy, degenerate_signs
from losona.judges.verdicts import CELL, Cell, cell_of, check_verdicts, judge_model
from losona.results.bundle import BundleFiles, ReportBundle
from losona.results.metrics import (
    BASELINE_CONDITION,
    UNSCORED_POLICY_ID,
    bootstrap_intervals,
    bootstrap_settings,
    mcnemar_exact,
    scenario_outcomes,
)
from losona.results.presentation import Presentation
from losona.results.table1 import table1_markdown
from losona.results.tables import (
    DELTA_SCHEMA,
    FLIP_SCHEMA,
    MEAN_SCHEMA,
    OUTCOME_SCHEMA,
    RESULT_SCHEMA,
    breakdown_schema,
)

# The files aggregate writes under paths.reports_dir (dvc.yaml lists the same names).
CSV_FILES: dict[str, pl.Schema] = {
    "results.csv": RESULT_SCHEMA,
    "means.csv": MEAN_SCHEMA,
    "deltas.csv": DELTA_SCHEMA,
    "flips.csv": FLIP_SCHEMA,
    "by_norm.csv": breakdown_schema("norm_id"),
    "by_event.csv": breakdown_schema("event_type"),
    "outcomes.csv": OUTCOME_SCHEMA,
}
TABLE1 = "table1.md"
REPORT_FILES = BundleFiles("aggregate", CSV_FILES, texts=(TABLE1,))


class Reports(ReportBundle):
    """Everything aggregate writes: the CSV tables by file name, Table 1 and the DVC metrics."""

    @property
    def table1(self) -> str:
        """Table 1 in the paper's layout (table1.md)."""
        return self.texts[TABLE1]


def judge_evidence(layout: RunLayout, kinds: Mapping[str, str]) -> dict[str, JudgeEvidence]:
    """What each judge's degenerate-verdicts flag needs: its validity-control accuracy (from
    its controls table, if it has one) and whether its reasoning is a model's own words."""
    evidence = {}
    for judge, kind in kinds.items():
        path = layout.controls(judge)
        evidence[judge] = JudgeEvidence(
            controls=controls_accuracy(read_parquet(path, CONTROL_SCHEMA, made_by="judge_controls"))
            if path.is_file()
            else None,
            own_words=judge_kind_settings(kind).own_words,
        )
    return evidence


# -- the numbers ---------------------------------------------------------------------------


def aggregate(
    verdicts: pl.DataFrame,
    scenarios: pl.DataFrame,
    *,
    bootstrap: AggregateSettings,
    presentation: Presentation | None = None,
    judges: Mapping[str, JudgeEvidence] | None = None,
) -> Reports:
    """The paper's metrics for every (judge, model, condition) in `verdicts`, as report tables;
    `judges`: what each judge's degenerate-verdicts flag needs beside its verdicts."""

    show = presentation or Presentation()
    check_verdicts(verdicts, scenarios)
    outcomes = scenario_outcomes(verdicts)
    n_scenarios = scenarios["scenario_id"].n_unique()
    keys: list[Cell] = list(outcomes.select(CELL).unique(maintain_order=True).iter_rows())
    cells = sorted(keys, key=show.cell_key)
    # Outcomes are sorted by cell, then scenario, and every cell covers every scenario, so
    # each column reshapes to one row per cell and one column per scenario.
    by_cell = {
        column: dict(zip(keys, values.reshape(len(keys), n_scenarios), strict=True))
        for column, values in (
            ("passed", outcomes["passed"].cast(pl.Float64).fill_null(np.nan).to_numpy()),
            ("complying", outcomes["complying"].to_numpy()),
            ("scored", outcomes["scored"].to_numpy()),
        )
    }
    outcome_of = by_cell["passed"]

    pairs = [
        (cell, (cell[0], cell[1], BASELINE_CONDITION))
        for cell in cells
        if cell[2] != BASELINE_CONDITION and (cell[0], cell[1], BASELINE_CONDITION) in outcome_of
    ]
    estimates = _estimate(cells, pairs, outcome_of, bootstrap)

    counts = _cell_counts(outcomes)
    judge_models = {judge: judge_model(verdicts, judge) for judge in verdicts["judge"].unique()}
    degenerate = _degenerate(verdicts, judges or {})
    results = _results(
        cells, counts, estimates, judge_models, _non_answers(verdicts), degenerate, show
    )
    deltas, flips = _paired(pairs, by_cell, scenarios, estimates, show)
    means = _means(cells, counts, estimates, show)
    tables = {
        "results.csv": results,
        "means.csv": means,
        "deltas.csv": deltas,
        "flips.csv": flips,
        "by_norm.csv": _breakdown(outcomes, "norm_id", show),
        "by_event.csv": _breakdown(outcomes, "event_type", show),
        "outcomes.csv": outcomes.select(OUTCOME_SCHEMA.names()).cast(OUTCOME_SCHEMA),
    }
    unscored = _unscored_by_status(verdicts)
    metrics = _metrics(results, deltas, means, unscored, bootstrap)
    table1 = table1_markdown(
        results, means, unscored, bootstrap, n_scenarios, subset_note(scenarios)
    )
    return Reports(tables, metrics, {TABLE1: table1})


def _estimate(
    cells: list[Cell],
    pairs: list[tuple[Cell, Cell]],
    outcome_of: dict[Cell, np.ndarray],
    bootstrap: AggregateSettings,
) -> dict[tuple[Any, ...], tuple[float, ...]]:
    """Every accuracy, paired effect and mean over models, from one scenario bootstrap."""
    keys: list[tuple[Any, ...]] = [("acc", cell) for cell in cells]
    keys += [("delta", cell) for cell, _ in pairs]
    rows = [outcome_of[cell] for cell in cells]
    rows += [outcome_of[cell] - outcome_of[base] for cell, base in pairs]
    row_of = {key: i for i, key in enumerate(keys)}
    # Each mean over models is a row of `combine` averaging its members' rows.
    means: list[tuple[tuple[Any, ...], list[int]]] = []
    for judge, condition in dict.fromkeys((c[0], c[2]) for c in cells):
        accs = [row_of["acc", c] for c in cells if c[::2] == (judge, condition)]
        means.append((("acc", judge, condition), accs))
        deltas = [row_of["delta", cell] for cell, _ in pairs if cell[::2] == (judge, condition)]
        if deltas:
            means.append((("delta", judge, condition), deltas))
    combine = np.zeros((len(rows) + len(means), len(rows)))
    combine[: len(rows)] = np.eye(len(rows))
    for offset, (_, members) in enumerate(means):
        combine[len(rows) + offset, members] = 1 / len(members)
    result = bootstrap_intervals(np.vstack(rows), bootstrap, combine=combine)
    triples = zip(result.estimate, result.low, result.high, strict=True)
    return dict(zip([*keys, *(key for key, _ in means)], triples, strict=True))


# What the results and the breakdowns both count of a group's outcomes.
_OUTCOME_COUNTS = {
    "scenarios": pl.col("passed").is_not_null().sum(),
    "undetermined": pl.col("passed").is_null().sum(),
    "passed": pl.col("passed").sum(),
    "scored": pl.col("scored").sum(),
    "complying": pl.col("complying").sum(),
}


def _cell_counts(outcomes: pl.DataFrame) -> dict[Cell, dict[str, Any]]:
    summary = outcomes.group_by(CELL).agg(
        **_OUTCOME_COUNTS,
        k=pl.col("trials").max(),
        trials=pl.col("trials").sum(),
        consistent=pl.col("consistent").sum(),
        consistency_scenarios=pl.col("consistent").is_not_null().sum(),
    )
    return {cell_of(row): row for row in summary.iter_rows(named=True)}


def _non_answers(verdicts: pl.DataFrame) -> dict[Cell, int | None]:
    """Per cell, the scored trials the judge found to be non-answers (None: not checked)."""
    scored = verdicts.filter(pl.col("complies").is_not_null())
    counted = scored.group_by(CELL).agg(
        checked=pl.col("non_answer").is_not_null().any(),
        non_answers=pl.col("non_answer").fill_null(False).sum(),
    )
    return {
        cell_of(row): int(row["non_answers"]) if row["checked"] else None
        for row in counted.iter_rows(named=True)
    }


def _degenerate(verdicts: pl.DataFrame, judges: Mapping[str, JudgeEvidence]) -> dict[Cell, str]:
    """Per cell whose verdicts say nothing, why (losona/judges/health.py)."""
    flagged = {}
    for cell_verdicts in verdicts.partition_by(CELL):
        cell = cell_of(cell_verdicts.row(0, named=True))
        signs = degenerate_signs(cell_verdicts, judges.get(cell[0], JudgeEvidence()))
        if signs:
            flagged[cell] = "; ".join(signs)
    return flagged


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _results(
    cells: list[Cell],
    counts: dict[Cell, dict[str, Any]],
    estimates: dict[tuple[Any, ...], tuple[float, ...]],
    judge_models: dict[str, str],
    non_answers: dict[Cell, int | None],
    degenerate: dict[Cell, str],
    show: Presentation,
) -> pl.DataFrame:
    rows = []
    for cell in cells:
        c = counts[cell]
        missing = non_answers.get(cell)
        _, low, high = estimates[("acc", cell)]
        rows.append(
            {
                "judge": cell[0],
                "judge_model": judge_models[cell[0]],
                "judge_label": show.judge_label(cell[0]),
                "subject_model": cell[1],
                "model_label": show.model_label(cell[1]),
                "condition": cell[2],
                "condition_label": show.condition_label(cell[2]),
                "k": c["k"],
                "scenarios": c["scenarios"],
                "undetermined": c["undetermined"],
                "passed": c["passed"],
                "acc_at_k": percent(_share(c["passed"], c["scenarios"])),
                "acc_low": percent(low),
                "acc_high": percent(high),
                "compliance": percent(_share(c["complying"], c["scored"])),
                "consistency": percent(_share(c["consistent"], c["consistency_scenarios"])),
                "consistency_scenarios": c["consistency_scenarios"],
                "trials": c["trials"],
                "unscored_trials": c["trials"] - c["scored"],
                "non_answers": missing,
                "non_answer_share": None
                if missing is None
                else percent(_share(missing, c["scored"])),
                "degenerate": degenerate.get(cell),
            }
        )
    return table(rows, RESULT_SCHEMA, sort_by=[])


def _paired(
    pairs: list[tuple[Cell, Cell]],
    by_cell: dict[str, dict[Cell, np.ndarray]],
    scenarios: pl.DataFrame,
    estimates: dict[tuple[Any, ...], tuple[float, ...]],
    show: Presentation,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    table_order = scenarios.unique("scenario_id").sort("scenario_id")
    ids, events, norms = (
        table_order[c].to_numpy() for c in ("scenario_id", "event_type", "norm_id")
    )
    complying, scored = by_cell["complying"], by_cell["scored"]
    deltas, flips = [], []
    for cell, base in pairs:
        naive, prompted = by_cell["passed"][base], by_cell["passed"][cell]
        paired = ~np.isnan(naive) & ~np.isnan(prompted)
        recovered = paired & (naive == 0) & (prompted == 1)
        regressed = paired & (naive == 1) & (prompted == 0)
        n_paired, n_recovered, n_regressed = (int(m.sum()) for m in (paired, recovered, regressed))
        _, low, high = estimates[("delta", cell)]
        deltas.append(
            {
                "judge": cell[0],
                "subject_model": cell[1],
                "model_label": show.model_label(cell[1]),
                "condition": cell[2],
                "condition_label": show.condition_label(cell[2]),
                "scenarios": n_paired,
                "naive_acc": percent(_share(int(naive[paired].sum()), n_paired)),
                "condition_acc": percent(_share(int(prompted[paired].sum()), n_paired)),
                "delta": percent(_share(n_recovered - n_regressed, n_paired)),
                "delta_low": percent(low),
                "delta_high": percent(high),
                "mcnemar_p": mcnemar_exact(n_recovered, n_regressed),
                "recovered": n_recovered,
                "naive_failures": int((paired & (naive == 0)).sum()),
                "regressed": n_regressed,
                "naive_successes": int((paired & (naive == 1)).sum()),
            }
        )
        for flip, mask in (("recovered", recovered), ("regressed", regressed)):
            for i in np.flatnonzero(mask):
                flips.append(
                    {
                        "judge": cell[0],
                        "subject_model": cell[1],
                        "condition": cell[2],
                        "flip": flip,
                        "scenario_id": ids[i],
                        "event_type": events[i],
                        "norm_id": norms[i],
                        "naive_complying": int(complying[base][i]),
                        "naive_scored": int(scored[base][i]),
                        "condition_complying": int(complying[cell][i]),
                        "condition_scored": int(scored[cell][i]),
                    }
                )
    return table(deltas, DELTA_SCHEMA, sort_by=[]), table(flips, FLIP_SCHEMA, sort_by=[])


def _means(
    cells: list[Cell],
    counts: dict[Cell, dict[str, Any]],
    estimates: dict[tuple[Any, ...], tuple[float, ...]],
    show: Presentation,
) -> pl.DataFrame:
    rows = []
    for judge, condition in dict.fromkeys((cell[0], cell[2]) for cell in cells):
        members = [counts[c] for c in cells if (c[0], c[2]) == (judge, condition)]
        acc, acc_low, acc_high = estimates[("acc", judge, condition)]
        delta = estimates.get(("delta", judge, condition), (None, None, None))
        rows.append(
            {
                "judge": judge,
                "condition": condition,
                "condition_label": show.condition_label(condition),
                "models": len(members),
                "acc_at_k": percent(acc),
                "acc_low": percent(acc_low),
                "acc_high": percent(acc_high),
                "compliance": percent(_mean_share(members, "complying", "scored")),
                "consistency": percent(_mean_share(members, "consistent", "consistency_scenarios")),
                "delta": percent(delta[0]),
                "delta_low": percent(delta[1]),
                "delta_high": percent(delta[2]),
            }
        )
    return table(rows, MEAN_SCHEMA, sort_by=[])


def _mean_share(members: list[dict[str, Any]], part: str, whole: str) -> float | None:
    """The mean over models of each model's share (models with no data left out)."""
    shares = [m[part] / m[whole] for m in members if m[whole]]
    return sum(shares) / len(shares) if shares else None


def _breakdown(outcomes: pl.DataFrame, by: str, show: Presentation) -> pl.DataFrame:
    summary = outcomes.group_by(*CELL, by).agg(**_OUTCOME_COUNTS)
    rows = [
        {
            **{key: row[key] for key in (*CELL, by, "scenarios", "undetermined", "passed")},
            "acc_at_k": percent(_share(row["passed"], row["scenarios"])),
            "compliance": percent(_share(row["complying"], row["scored"])),
        }
        for row in summary.iter_rows(named=True)
    ]
    rows.sort(key=lambda r: (show.cell_key(cell_of(r)), r[by]))
    return table(rows, breakdown_schema(by), sort_by=[])


def _unscored_by_status(verdicts: pl.DataFrame) -> dict[str, dict[str, int]]:
    unscored = verdicts.filter(pl.col("complies").is_null())
    counted = unscored.group_by("judge", "judge_status").len().sort("judge", "judge_status")
    by_judge: dict[str, dict[str, int]] = {j: {} for j in verdicts["judge"].unique().sort()}
    for judge, status, n in counted.iter_rows():
        by_judge[judge][status or "unknown"] = n
    return by_judge


# -- metrics.json and Table 1 --------------------------------------------------------------


def _metrics(
    results: pl.DataFrame,
    deltas: pl.DataFrame,
    means: pl.DataFrame,
    unscored: dict[str, dict[str, int]],
    bootstrap: AggregateSettings,
) -> dict[str, Any]:
    headline = ("acc_at_k", "acc_low", "acc_high", "compliance", "consistency")
    paired = ("delta", "delta_low", "delta_high", "recovered", "regressed")
    effect = {cell_of(row): row for row in deltas.iter_rows(named=True)}
    metrics: dict[str, Any] = {
        "settings": {**bootstrap_settings(bootstrap), "unscored_policy": UNSCORED_POLICY_ID}
    }
    for (judge,), rows in results.group_by("judge", maintain_order=True):
        models: dict[str, Any] = {}
        for row in rows.iter_rows(named=True):
            entry = {key: row[key] for key in headline}
            delta = effect.get(cell_of(row))
            entry |= {key: delta[key] for key in paired} if delta else {}
            models.setdefault(row["subject_model"], {})[row["condition"]] = entry
        mean = {
            row["condition"]: {
                key: row[key]
                for key in (*headline, "delta", "delta_low", "delta_high")
                # Consistency is null at K = 1, as each model's is; no delta: the baseline.
                if row[key] is not None or key == "consistency"
            }
            for row in means.filter(pl.col("judge") == judge).iter_rows(named=True)
        }
        metrics[str(judge)] = {
            "models": models,
            "mean_over_models": mean,
            "counts": {
                "trials": int(rows["trials"].sum()),
                "unscored_trials": int(rows["unscored_trials"].sum()),
                "undetermined_scenarios": int(rows["undetermined"].sum()),
                "unscored_by_status": unscored[str(judge)],
            },
        }
    return metrics


# -- files -----------------------------------------------------------------------------------


def read_reports(reports_dir: str | Path) -> Reports:
    """Read back what `Reports.write` wrote, refusing a missing file or a changed shape."""
    return Reports.read(reports_dir, REPORT_FILES)
