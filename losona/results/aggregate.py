"""aggregate: verdicts into the paper's report tables, with intervals and paired tests.

The metrics themselves are in losona/results/metrics.py and the checks on the verdicts in
losona/judges/verdicts.py; this module computes every statistic of a run from one scenario
bootstrap and lays the numbers out as the paper does (Table 1, Section 6).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import polars as pl

from losona.config import Bootstrap as Bootstrap  # the `aggregate:` node's schema
from losona.config import option, option_file
from losona.contracts import (
    CONTROL_SCHEMA,
    DELTA_SCHEMA,
    FLIP_SCHEMA,
    MEAN_SCHEMA,
    OUTCOME_SCHEMA,
    RESULT_SCHEMA,
    breakdown_schema,
    subset_note,
    table,
)
from losona.files import (
    read_csv,
    read_json_object,
    read_parquet,
    read_text,
    require_outputs,
    write_json,
    write_text,
)
from losona.formatting import display_label, number
from losona.judges.health import JudgeEvidence, controls_accuracy, degenerate_signs
from losona.judges.verdicts import CELL, Cell, cell_of, check_verdicts
from losona.results.metrics import (
    BASELINE_CONDITION,
    UNSCORED_POLICY,
    UNSCORED_POLICY_ID,
    VOTE_RULE,
    bootstrap_means,
    majority_threshold,
    mcnemar_exact,
    pct,
    scenario_outcomes,
)

T = TypeVar("T", bound=Hashable)

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
METRICS = "metrics.json"


@dataclass(frozen=True)
class Presentation:
    """How reports order and name things: the sweep's order, then display labels."""

    judges: Sequence[str] = ()
    models: Sequence[str] = ()
    conditions: Sequence[str] = (BASELINE_CONDITION,)
    model_labels: Mapping[str, str] = field(default_factory=dict)
    condition_labels: Mapping[str, str] = field(default_factory=dict)
    judge_labels: Mapping[str, str] = field(default_factory=dict)

    def cell_key(self, cell: Cell) -> tuple[Any, ...]:
        """Sort key: the sweep's order first; names it does not list follow alphabetically."""
        judge, model, condition = cell
        return (
            _rank(self.judges, judge),
            _rank(self.models, model),
            _rank(self.conditions, condition),
        )

    def model_label(self, name: str) -> str:
        """A model's display name, e.g. "Gemini 3.1 Pro"."""
        return self.model_labels.get(name, name)

    def condition_label(self, name: str) -> str:
        """A condition's display name, e.g. "Norm-informed"."""
        return self.condition_labels.get(name, name)

    def judge_label(self, name: str) -> str:
        """A judge's display name, e.g. "Gemini 3.1 Pro Preview (paper judge)"."""
        return self.judge_labels.get(name, name)


def presentation_for(verdicts: pl.DataFrame, sweep: Mapping[str, Sequence[str]]) -> Presentation:
    """The sweep's order (params.yaml) and the labels of conf/model/, condition/ and judge/."""
    return Presentation(
        judges=sweep["judges"],
        models=sweep["models"],
        conditions=sweep["conditions"],
        model_labels=config_labels("model", verdicts["subject_model"].unique().sort()),
        condition_labels=config_labels("condition", verdicts["condition"].unique().sort()),
        judge_labels=config_labels("judge", verdicts["judge"].unique().sort()),
    )


def outside_sweep(verdicts: pl.DataFrame, sweep: Mapping[str, Sequence[str]]) -> list[str]:
    """Judges, models and conditions in the verdicts that the sweep does not list, by kind.

    The sweep's panels (conf/panels.yaml) are judges it lists.
    """
    unlisted = []
    for column, key in zip(CELL, ("judges", "models", "conditions"), strict=True):
        listed = [*sweep[key], *sweep.get("panels", ())] if key == "judges" else sweep[key]
        names = [n for n in verdicts[column].unique().sort() if n not in listed]
        if names:
            unlisted.append(f"{column} {', '.join(names)} (not in sweep.{key})")
    return unlisted


def _rank(order: Sequence[str], name: str) -> tuple[int, str]:
    return (order.index(name), "") if name in order else (len(order), name)


@dataclass(frozen=True)
class Reports:
    """Everything aggregate writes: the CSV tables by file name, Table 1 and the DVC metrics."""

    tables: dict[str, pl.DataFrame]
    table1: str
    metrics: dict[str, Any]

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.tables[name]

    @property
    def confidence(self) -> str:
        """The intervals' confidence level as written in reports, e.g. "95%"."""
        return f"{self.metrics['settings']['confidence']:g}%"


def judge_evidence(controls_dir: str | Path, kinds: Mapping[str, str]) -> dict[str, JudgeEvidence]:
    """What each judge's degenerate-verdicts flag needs: its validity-control accuracy (from
    its controls table, if it has one) and whether its reasoning is a model's own words."""
    evidence = {}
    for judge, kind in kinds.items():
        path = Path(controls_dir) / f"{judge}.parquet"
        controls = (
            read_parquet(path, CONTROL_SCHEMA, made_by="judge_controls") if path.is_file() else None
        )
        evidence[judge] = JudgeEvidence(
            controls=None if controls is None else controls_accuracy(controls),
            own_words=kind == "llm",
        )
    return evidence


def judge_kinds(names: Iterable[str]) -> dict[str, str]:
    """Each judge's kind from `conf/judge/<name>.yaml` ("llm" for one without a config)."""
    return {
        name: option("judge", name).kind if option_file("judge", name).is_file() else "llm"
        for name in names
    }


def config_labels(group: str, names: Iterable[str]) -> dict[str, str]:
    """Display labels from `conf/<group>/<name>.yaml`'s `label`, a test double's marked.

    A name without a config file (verdicts that outlived theirs), or without a label,
    keeps its name.
    """
    labels = {}
    for name in names:
        if not option_file(group, name).is_file():
            labels[name] = name
            continue
        checked = option(group, name)
        label = checked.label or name
        labels[name] = display_label(label, bool(getattr(checked, "test_double", False)))
    return labels


# -- the numbers ---------------------------------------------------------------------------


def aggregate(
    verdicts: pl.DataFrame,
    scenarios: pl.DataFrame,
    *,
    bootstrap: Bootstrap,
    presentation: Presentation | None = None,
    judges: Mapping[str, JudgeEvidence] | None = None,
) -> Reports:
    """The paper's metrics for every (judge, model, condition) in `verdicts`, as report tables.

    `judges` tells, per judge, what its degenerate-verdicts flag needs beside its verdicts
    (losona/judges/health.py); for a judge left out, nothing beyond its verdicts is known.
    """
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
    judge_models = _judge_models(verdicts)
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
    table1 = _table1(results, means, unscored, bootstrap, n_scenarios, subset_note(scenarios))
    return Reports(tables, table1, metrics)


def _estimate(
    cells: list[Cell],
    pairs: list[tuple[Cell, Cell]],
    outcome_of: dict[Cell, np.ndarray],
    bootstrap: Bootstrap,
) -> dict[tuple[Any, ...], tuple[float, ...]]:
    """Every accuracy, paired effect and mean over models, from one scenario bootstrap."""
    stats = _Statistics()
    for cell in cells:
        stats.add(("acc", cell), outcome_of[cell])
    for cell, base in pairs:
        stats.add(("delta", cell), outcome_of[cell] - outcome_of[base])
    for judge, condition in _unique((c[0], c[2]) for c in cells):
        stats.mean(
            ("acc", judge, condition), [("acc", c) for c in cells if c[::2] == (judge, condition)]
        )
        members = [("delta", cell) for cell, _ in pairs if cell[::2] == (judge, condition)]
        if members:
            stats.mean(("delta", judge, condition), members)
    return stats.estimate(bootstrap)


class _Statistics:
    """Means over scenarios to bootstrap together, and means of those over models."""

    def __init__(self) -> None:
        self.rows: list[np.ndarray] = []
        self.position: dict[tuple[Any, ...], int] = {}
        self.combined: list[tuple[tuple[Any, ...], list[int]]] = []

    def add(self, key: tuple[Any, ...], values: np.ndarray) -> None:
        self.position[key] = len(self.rows)
        self.rows.append(values)

    def mean(self, key: tuple[Any, ...], members: list[tuple[Any, ...]]) -> None:
        self.combined.append((key, [self.position[m] for m in members]))

    def estimate(self, settings: Bootstrap) -> dict[tuple[Any, ...], tuple[float, ...]]:
        n_rows = len(self.rows)
        combine = np.zeros((n_rows + len(self.combined), n_rows))
        combine[:n_rows] = np.eye(n_rows)
        for offset, (_, members) in enumerate(self.combined):
            combine[n_rows + offset, members] = 1 / len(members)
        keys = [*self.position, *(key for key, _ in self.combined)]
        values = np.vstack(self.rows)
        if values.shape[1] < 2:
            # One scenario cannot be resampled: report the estimate with no interval.
            point = combine @ np.nanmean(values, axis=1)
            return {k: (e, np.nan, np.nan) for k, e in zip(keys, point, strict=True)}
        result = bootstrap_means(
            values,
            combine,
            n_resamples=settings.resamples,
            seed=settings.seed,
            confidence=settings.confidence,
        )
        triples = zip(result.estimate, result.low, result.high, strict=True)
        return dict(zip(keys, triples, strict=True))


def _unique(items: Iterable[T]) -> list[T]:
    return list(dict.fromkeys(items))


def _cell_counts(outcomes: pl.DataFrame) -> dict[Cell, dict[str, Any]]:
    summary = outcomes.group_by(CELL).agg(
        k=pl.col("trials").max(),
        scenarios=pl.col("passed").is_not_null().sum(),
        undetermined=pl.col("passed").is_null().sum(),
        passed=pl.col("passed").sum(),
        trials=pl.col("trials").sum(),
        scored=pl.col("scored").sum(),
        complying=pl.col("complying").sum(),
        consistent=pl.col("consistent").sum(),
        consistency_scenarios=pl.col("consistent").is_not_null().sum(),
    )
    return {cell_of(row): row for row in summary.iter_rows(named=True)}


def _judge_models(verdicts: pl.DataFrame) -> dict[str, str]:
    named = verdicts.group_by("judge").agg(pl.col("judge_model").drop_nulls().unique().sort())
    return {judge: ", ".join(models) for judge, models in named.iter_rows()}


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
                "acc_at_k": pct(_share(c["passed"], c["scenarios"])),
                "acc_low": pct(low),
                "acc_high": pct(high),
                "compliance": pct(_share(c["complying"], c["scored"])),
                "consistency": pct(_share(c["consistent"], c["consistency_scenarios"])),
                "consistency_scenarios": c["consistency_scenarios"],
                "trials": c["trials"],
                "unscored_trials": c["trials"] - c["scored"],
                "non_answers": missing,
                "non_answer_share": None if missing is None else pct(_share(missing, c["scored"])),
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
        n_paired = int(paired.sum())
        _, low, high = estimates[("delta", cell)]
        deltas.append(
            {
                "judge": cell[0],
                "subject_model": cell[1],
                "model_label": show.model_label(cell[1]),
                "condition": cell[2],
                "condition_label": show.condition_label(cell[2]),
                "scenarios": n_paired,
                "naive_acc": pct(_share(int(naive[paired].sum()), n_paired)),
                "condition_acc": pct(_share(int(prompted[paired].sum()), n_paired)),
                "delta": pct(_share(int(recovered.sum()) - int(regressed.sum()), n_paired)),
                "delta_low": pct(low),
                "delta_high": pct(high),
                "mcnemar_p": mcnemar_exact(int(recovered.sum()), int(regressed.sum())),
                "recovered": int(recovered.sum()),
                "naive_failures": int((paired & (naive == 0)).sum()),
                "regressed": int(regressed.sum()),
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
    for judge, condition in _unique((cell[0], cell[2]) for cell in cells):
        members = [counts[c] for c in cells if (c[0], c[2]) == (judge, condition)]
        acc, acc_low, acc_high = estimates[("acc", judge, condition)]
        delta = estimates.get(("delta", judge, condition), (None, None, None))
        rows.append(
            {
                "judge": judge,
                "condition": condition,
                "condition_label": show.condition_label(condition),
                "models": len(members),
                "acc_at_k": pct(acc),
                "acc_low": pct(acc_low),
                "acc_high": pct(acc_high),
                "compliance": pct(_mean_share(members, "complying", "scored")),
                "consistency": pct(_mean_share(members, "consistent", "consistency_scenarios")),
                "delta": pct(delta[0]),
                "delta_low": pct(delta[1]),
                "delta_high": pct(delta[2]),
            }
        )
    return table(rows, MEAN_SCHEMA, sort_by=[])


def _mean_share(members: list[dict[str, Any]], part: str, whole: str) -> float | None:
    """The mean over models of each model's share (models with no data left out)."""
    shares = [m[part] / m[whole] for m in members if m[whole]]
    return sum(shares) / len(shares) if shares else None


def _breakdown(outcomes: pl.DataFrame, by: str, show: Presentation) -> pl.DataFrame:
    summary = outcomes.group_by(*CELL, by).agg(
        scenarios=pl.col("passed").is_not_null().sum(),
        undetermined=pl.col("passed").is_null().sum(),
        passed=pl.col("passed").sum(),
        scored=pl.col("scored").sum(),
        complying=pl.col("complying").sum(),
    )
    rows = [
        {
            **{key: row[key] for key in (*CELL, by, "scenarios", "undetermined", "passed")},
            "acc_at_k": pct(_share(row["passed"], row["scenarios"])),
            "compliance": pct(_share(row["complying"], row["scored"])),
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
    bootstrap: Bootstrap,
) -> dict[str, Any]:
    headline = ("acc_at_k", "acc_low", "acc_high", "compliance", "consistency")
    paired = ("delta", "delta_low", "delta_high", "recovered", "regressed")
    effect = {
        (r["judge"], r["subject_model"], r["condition"]): r for r in deltas.iter_rows(named=True)
    }
    metrics: dict[str, Any] = {
        "settings": {
            "bootstrap_resamples": bootstrap.resamples,
            "seed": bootstrap.seed,
            "confidence": pct(bootstrap.confidence),
            "unscored_policy": UNSCORED_POLICY_ID,
        }
    }
    for judge, rows in results.group_by("judge", maintain_order=True):
        models: dict[str, Any] = {}
        for row in rows.iter_rows(named=True):
            entry = {key: row[key] for key in headline}
            delta = effect.get((row["judge"], row["subject_model"], row["condition"]))
            entry |= {key: delta[key] for key in paired} if delta else {}
            models.setdefault(row["subject_model"], {})[row["condition"]] = entry
        mean = {
            row["condition"]: {
                key: row[key]
                for key in (*headline, "delta", "delta_low", "delta_high")
                if row[key] is not None
            }
            for row in means.filter(pl.col("judge") == judge[0]).iter_rows(named=True)
        }
        metrics[str(judge[0])] = {
            "models": models,
            "mean_over_models": mean,
            "counts": {
                "trials": int(rows["trials"].sum()),
                "unscored_trials": int(rows["unscored_trials"].sum()),
                "undetermined_scenarios": int(rows["undetermined"].sum()),
                "unscored_by_status": unscored[str(judge[0])],
            },
        }
    return metrics


def _ci(row: Mapping[str, Any]) -> str:
    interval = (
        "" if row["acc_low"] is None else f" [{number(row['acc_low'])}, {number(row['acc_high'])}]"
    )
    return f"{number(row['acc_at_k'])}{interval}"


def _vote_rule(ks: list[int]) -> str:
    if len(ks) > 1:
        return f"{VOTE_RULE} (K = {', '.join(map(str, ks))})"
    return (
        f"a scenario passes when at least {majority_threshold(ks[0])} of its {ks[0]} trials comply"
    )


def _mean_table(means: pl.DataFrame, k: str, confidence: str) -> list[str]:
    lines = [
        "",
        "Mean over models:",
        "",
        f"| Prompt | Models | Acc@{k} ({confidence} CI) "
        f"| Paired effect vs naive ({confidence} CI) |",
        "|---|---|---|---|",
    ]
    for row in means.iter_rows(named=True):
        effect = (
            "(baseline)"
            if row["delta"] is None
            else f"{row['delta']:+.1f} [{number(row['delta_low'])}, {number(row['delta_high'])}]"
        )
        lines.append(f"| {row['condition_label']} | {row['models']} | {_ci(row)} | {effect} |")
    return lines


def _table1(
    results: pl.DataFrame,
    means: pl.DataFrame,
    unscored: dict[str, dict[str, int]],
    bootstrap: Bootstrap,
    n_scenarios: int,
    subset: str | None,
) -> str:
    """Table 1 in the paper's layout, one table per judge, with what it rests on below.

    A run on a subset of the dataset says so under the title, before any figure.
    """
    confidence = f"{pct(bootstrap.confidence):g}%"
    parts = ["# LoSoNA results (the paper's Table 1)\n"]
    if subset is not None:
        parts.append(f"> **Subset:** {subset_warning(subset)}\n")
    for (judge,), rows in results.group_by("judge", maintain_order=True):
        ks = sorted(set(rows["k"].to_list()))
        k = str(ks[0]) if len(ks) == 1 else "K"
        heading = judge_heading(str(judge), rows["judge_label"][0], rows["judge_model"][0])
        parts += [
            f"## Judge: {heading}\n",
            f"| Model | Prompt | Acc@{k} ({confidence} CI) | Compliance | Consistency |",
            "|---|---|---|---|---|",
        ]
        for row in rows.iter_rows(named=True):
            parts.append(
                f"| {row['model_label']} | {row['condition_label']} | {_ci(row)} "
                f"| {number(row['compliance'])} | {number(row['consistency'])} |"
            )
        if rows["subject_model"].n_unique() > 1:  # one model is its own mean
            parts += _mean_table(means.filter(pl.col("judge") == judge), k, confidence)
        trials, missing = int(rows["trials"].sum()), int(rows["unscored_trials"].sum())
        statuses = ", ".join(f"{n} {s}" for s, n in unscored[judge].items()) or "none"
        undetermined = [
            f"{r['model_label']} / {r['condition_label']}: {r['undetermined']}"
            for r in rows.iter_rows(named=True)
            if r["undetermined"]
        ]
        parts += [
            "",
            f"Acc@{k}: accuracy-at-K over {n_scenarios} scenarios; {_vote_rule(ks)}. "
            f"Intervals: {confidence} percentile intervals "
            f"from {bootstrap.resamples:,} scenario-bootstrap resamples, seed {bootstrap.seed}. "
            "Compliance: mean of the trial labels. Consistency: share of scenarios whose "
            "trial labels all agree. All figures in percent.",
            "",
            f"Unscored trials: {missing} of {trials} ({statuses}). "
            f"Undetermined scenarios: {'; '.join(undetermined) or 'none'}. "
            f"Policy: {UNSCORED_POLICY}.",
            "",
            _non_answer_note(rows),
            "",
            *_degenerate_note(str(judge), rows),
        ]
    return "\n".join(parts)


def _degenerate_note(judge: str, rows: pl.DataFrame) -> list[str]:
    """Table 1's warning, by name, about a judge whose verdicts in some cells say nothing."""
    flagged = [
        f"{r['model_label']} / {r['condition_label']}: {r['degenerate']}"
        for r in rows.iter_rows(named=True)
        if r["degenerate"] is not None
    ]
    if not flagged:
        return []
    return [
        f"**Degenerate verdicts: judge {judge}.** Its numbers in these cells measure the "
        f"judge, not the model; check its validity controls before reading them: "
        + "; ".join(flagged)
        + ".",
        "",
    ]


def judge_heading(judge: str, label: str, judge_model: str) -> str:
    """How a table names its judge: the label, then the config name and model string."""
    return f"{judge} ({judge_model})" if label == judge else f"{label} ({judge}, {judge_model})"


def subset_warning(subset: str) -> str:
    """What Table 1 and the HTML report say, after "Subset:", of a run on part of its dataset."""
    return (
        f"this run covers {subset}, not the whole dataset; its figures are not comparable "
        "with a full run's."
    )


def _non_answer_note(rows: pl.DataFrame) -> str:
    """Table 1's note on non-answers: a diagnostic for reading a low score, not a metric."""
    if rows["non_answers"].null_count() == rows.height:
        return "Non-answers: this judge does not check uptake, so they are not counted."
    shares = "; ".join(
        f"{r['model_label']} / {r['condition_label']}: {number(r['non_answer_share'])}"
        for r in rows.iter_rows(named=True)
    )
    return (
        "Non-answers (scored trials that take up no elicitor: empty, filler, off-topic, an "
        "echo, another language, talk to the judge or other members' lines; judged breaches, "
        "and counted in Compliance as such; a diagnostic, in no metric): " + shares + "."
    )


# -- files -----------------------------------------------------------------------------------


def write_reports(reports: Reports, reports_dir: str | Path) -> None:
    """Write every report file under `reports_dir`, each atomically."""
    root = Path(reports_dir)
    for name, df in reports.tables.items():
        write_text(df.write_csv(), root / name)
    write_text(reports.table1, root / TABLE1)
    write_json(reports.metrics, root / METRICS)


def read_reports(reports_dir: str | Path) -> Reports:
    """Read back what `write_reports` wrote, refusing a missing file or a changed shape."""
    root = Path(reports_dir)
    require_outputs(root, (*CSV_FILES, TABLE1, METRICS), stage="aggregate")
    remedy = "rerun aggregate"
    tables = {name: read_csv(root / name, schema, remedy) for name, schema in CSV_FILES.items()}
    metrics = read_json_object(root / METRICS, ["settings"], remedy)
    return Reports(tables, read_text(root / TABLE1, remedy), metrics)
