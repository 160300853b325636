"""dynamic_aggregate: the second turn's metrics, with scenario-bootstrap intervals.

Per first-turn judge, model and condition (docs/metrics.md, "The dynamic second turn"):

- recovery after the sanction: the share of first-turn breaches whose second reply
  complies after the sanction (arm `sanction`);
- recovery after the control: the same after the neutral continuation (arm `control`);
- the sanction effect: their paired difference over the breaches whose two second replies
  were both scored, in points, with an exact McNemar test on the pairs that differ;
- retention: the share of compliant first replies that comply again after the neutral
  continuation (arm `retention`).

Each is given at the trial level (a share of trials, pooled over scenarios) and at the
scenario level with the paper's majority rule: a scenario's arm passes when at least
ceil(n/2) of its n trials in that arm comply, n being how many of its first-turn trials
went into the arm; unscored second replies follow the paper's policy (losona/results/metrics.py).
Intervals resample scenarios, never calls, all from one bootstrap per judge with the
`aggregate:` settings; trial-level shares weigh each scenario by its trials.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from losona.core.config import AggregateSettings
from losona.core.contracts import table
from losona.core.errors import LosonaError
from losona.core.files import display_path, read_parquet
from losona.core.formatting import percent
from losona.core.layout import RunLayout
from losona.dynamic.arms import ARMS, CONTROL, FIRST_TURN_UNSCORED, OK, RETENTION, SANCTION
from losona.dynamic.group import GROUP_TEMPLATE_VERSION, group_template_sha256
from losona.dynamic.tables import (
    DYNAMIC_ARM_SCHEMA,
    DYNAMIC_EXAMPLE_SCHEMA,
    DYNAMIC_OUTCOME_SCHEMA,
    DYNAMIC_PROMPT_SCHEMA,
    DYNAMIC_RESULT_SCHEMA,
    DYNAMIC_VERDICT_SCHEMA,
)
from losona.prompts.subject import SUBJECT_TEMPLATE_VERSION
from losona.results.bundle import BundleFiles, ReportBundle
from losona.results.metrics import (
    UNSCORED_POLICY_ID,
    bootstrap_intervals,
    bootstrap_settings,
    mcnemar_exact,
)
from losona.results.metrics import scenario_outcomes as majority
from losona.results.presentation import Presentation, config_labels

# The files dynamic_aggregate writes under paths.dynamic_reports_dir/<judge>/ (dvc.yaml
# lists the same names), and the figure's stem.
CSV_FILES: dict[str, pl.Schema] = {
    "results.csv": DYNAMIC_RESULT_SCHEMA,
    "arms.csv": DYNAMIC_ARM_SCHEMA,
    "outcomes.csv": DYNAMIC_OUTCOME_SCHEMA,
    "examples.csv": DYNAMIC_EXAMPLE_SCHEMA,
}
DYNAMIC_FILES = BundleFiles("dynamic_aggregate", CSV_FILES)
FIGURE = "recovery"
CELL = ["judge", "subject_model", "condition"]
KEY = ["scenario_id", "trial", "arm"]
EXAMPLES_PER_CELL = 3  # breaches continued both ways, shown per model x condition


@dataclass(frozen=True)
class Cell:
    """One model x condition's second turn: every first-turn trial's rows, and the verdicts."""

    model: str
    condition: str
    prompts: pl.DataFrame  # DYNAMIC_PROMPT_SCHEMA
    verdicts: pl.DataFrame  # DYNAMIC_VERDICT_SCHEMA


def load_cells(
    layout: RunLayout, judge: str, models: Sequence[str], conditions: Sequence[str]
) -> list[Cell]:
    """Every cell's prompt and verdict tables, each checked against its place."""
    cells = []
    for model in models:
        for condition in conditions:
            tables = []
            for path, schema, made_by in (
                (
                    layout.dynamic_prompts(judge, model, condition),
                    DYNAMIC_PROMPT_SCHEMA,
                    "dynamic_render",
                ),
                (
                    layout.dynamic_verdicts(judge, model, condition),
                    DYNAMIC_VERDICT_SCHEMA,
                    "dynamic_judge",
                ),
            ):
                df = read_parquet(path, schema, made_by=made_by)
                for column, expected in (("subject_model", model), ("condition", condition)):
                    found = sorted(df[column].unique().to_list(), key=str)
                    if df.height and found != [expected]:
                        raise LosonaError(
                            f"{display_path(path)}: column '{column}' holds {found}, but the "
                            f"file's place says '{expected}'; rerun {made_by}"
                        )
                tables.append(df)
            cells.append(Cell(model, condition, tables[0], tables[1]))
    return cells


# -- the numbers ---------------------------------------------------------------------------


def trial_rows(cell: Cell, judge: str, scenarios: pl.DataFrame) -> pl.DataFrame:
    """One row per first-turn trial and arm: its status and its second verdict (null if none).

    Refuses a cell whose verdicts do not match its rendered prompts one for one, or that
    misses scenarios of the table.
    """
    where = f"judge '{judge}', model '{cell.model}', condition '{cell.condition}'"
    rendered = cell.prompts.filter(pl.col("status") == OK).select(KEY)
    judged = cell.verdicts.select(KEY)
    for extra, kind in (
        (judged.join(rendered, on=KEY, how="anti"), "a verdict without a prompt"),
        (rendered.join(judged, on=KEY, how="anti"), "a prompt without a verdict"),
    ):
        if not extra.is_empty():
            row = extra.sort(KEY).row(0, named=True)
            raise LosonaError(
                f"dynamic verdicts of {where}: scenario '{row['scenario_id']}', trial "
                f"{row['trial']}, arm '{row['arm']}' has {kind}; rerun dynamic_sample and "
                "dynamic_judge"
            )
    missing = sorted(set(scenarios["scenario_id"]) - set(cell.prompts["scenario_id"]))
    if missing:
        raise LosonaError(
            f"dynamic prompts of {where} miss {len(missing)} scenarios of the table "
            f"('{missing[0]}', ...); rerun dynamic_render after judge"
        )
    events = scenarios.select("scenario_id", "event_type", "norm_id")
    return (
        cell.prompts.select(*KEY, "status")
        .join(cell.verdicts.select(*KEY, "complies"), on=KEY, how="left", nulls_equal=True)
        .join(events, on="scenario_id", how="left")
        .with_columns(
            judge=pl.lit(judge), subject_model=pl.lit(cell.model), condition=pl.lit(cell.condition)
        )
    )


def _per_scenario(rows: pl.DataFrame, arm: str, ids: list[str]) -> dict[str, np.ndarray]:
    """An arm's counts per scenario of `ids`: trials, scored, complying (arrays in id order)."""
    counted = (
        rows.filter(pl.col("arm") == arm)
        .group_by("scenario_id")
        .agg(
            trials=pl.len(),
            scored=pl.col("complies").is_not_null().sum(),
            complying=pl.col("complies").sum(),
        )
    )
    found = {r["scenario_id"]: r for r in counted.iter_rows(named=True)}
    return {
        column: np.array([found[i][column] if i in found else 0 for i in ids], dtype=float)
        for column in ("trials", "scored", "complying")
    }


def _pairs(rows: pl.DataFrame, ids: list[str]) -> dict[str, np.ndarray]:
    """Per scenario, the breaches whose two second replies were both scored, and how they differ."""
    scored = rows.filter(pl.col("complies").is_not_null()).select(
        "scenario_id", "trial", "arm", "complies"
    )
    both = (
        scored.filter(pl.col("arm") == SANCTION)
        .join(
            scored.filter(pl.col("arm") == CONTROL), on=["scenario_id", "trial"], suffix="_control"
        )
        .group_by("scenario_id")
        .agg(
            pairs=pl.len(),
            helped=(pl.col("complies") & ~pl.col("complies_control")).sum(),
            hurt=(~pl.col("complies") & pl.col("complies_control")).sum(),
        )
    )
    found = {r["scenario_id"]: r for r in both.iter_rows(named=True)}
    return {
        column: np.array([found[i][column] if i in found else 0 for i in ids], dtype=float)
        for column in ("pairs", "helped", "hurt")
    }


def scenario_outcomes(rows: pl.DataFrame) -> pl.DataFrame:
    """Each scenario's arms under the paper's majority rule (DYNAMIC_OUTCOME_SCHEMA's rows).

    A trial the arm could not continue counts as unscored: it may not settle the vote.
    """
    in_arms = rows.filter(pl.col("arm").is_not_null())
    outcomes = majority(in_arms, by=[*CELL, "arm"])
    return outcomes.select(DYNAMIC_OUTCOME_SCHEMA.names()).cast(DYNAMIC_OUTCOME_SCHEMA)


def _passes(outcomes: pl.DataFrame, arm: str, ids: list[str]) -> np.ndarray:
    """1/0 per scenario of `ids` whose arm passed/failed; NaN: no trials in it, or undetermined."""
    passed = {
        r["scenario_id"]: r["passed"]
        for r in outcomes.filter(pl.col("arm") == arm).iter_rows(named=True)
    }
    return np.array(
        [np.nan if passed.get(i) is None else float(passed[i]) for i in ids], dtype=float
    )


def _share(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sizes > 0, values / np.where(sizes > 0, sizes, 1), np.nan)


@dataclass(frozen=True)
class _Stat:
    """One metric of one cell: its per-scenario values and sizes, and its exact counts."""

    level: str
    metric: str
    values: np.ndarray
    sizes: np.ndarray
    count: int
    out_of: int
    helped: int | None = None
    hurt: int | None = None

    @property
    def estimate(self) -> float | None:
        if not self.out_of:
            return None
        if self.helped is None or self.hurt is None:
            return self.count / self.out_of
        return (self.helped - self.hurt) / self.out_of


def cell_statistics(rows: pl.DataFrame, outcomes: pl.DataFrame, ids: list[str]) -> list[_Stat]:
    """The eight metrics of one cell: recovery after the sanction and after the control, the
    sanction effect and retention, at the trial level, then the same at the scenario level."""
    arms = {arm: _per_scenario(rows, arm, ids) for arm in ARMS}
    pairs = _pairs(rows, ids)
    passes = {arm: _passes(outcomes, arm, ids) for arm in ARMS}
    ones = np.ones(len(ids))

    def trial_share(metric: str, arm: str) -> _Stat:
        counts = arms[arm]
        return _Stat(
            "trial",
            metric,
            _share(counts["complying"], counts["scored"]),
            counts["scored"],
            int(counts["complying"].sum()),
            int(counts["scored"].sum()),
        )

    def scenario_share(metric: str, arm: str) -> _Stat:
        settled = ~np.isnan(passes[arm])
        return _Stat(
            "scenario", metric, passes[arm], ones, int(np.nansum(passes[arm])), int(settled.sum())
        )

    s, c = passes[SANCTION], passes[CONTROL]
    both = ~np.isnan(s) & ~np.isnan(c)
    return [
        trial_share("recovery_after_sanction", SANCTION),
        trial_share("recovery_after_control", CONTROL),
        _Stat(
            "trial",
            "sanction_effect",
            _share(pairs["helped"] - pairs["hurt"], pairs["pairs"]),
            pairs["pairs"],
            int(pairs["pairs"].sum()),
            int(pairs["pairs"].sum()),
            int(pairs["helped"].sum()),
            int(pairs["hurt"].sum()),
        ),
        trial_share("retention", RETENTION),
        scenario_share("recovery_after_sanction", SANCTION),
        scenario_share("recovery_after_control", CONTROL),
        _Stat(
            "scenario",
            "sanction_effect",
            np.where(both, s - c, np.nan),
            ones,
            int(both.sum()),
            int(both.sum()),
            int((both & (s == 1) & (c == 0)).sum()),
            int((both & (s == 0) & (c == 1)).sum()),
        ),
        scenario_share("retention", RETENTION),
    ]


def aggregate_dynamic(
    cells: Sequence[Cell],
    scenarios: pl.DataFrame,
    *,
    judge: str,
    bootstrap: AggregateSettings,
    presentation: Presentation | None = None,
) -> ReportBundle:
    """One judge's dynamic tables and metrics from its cells' prompt and verdict tables."""
    show = presentation or Presentation()
    if not cells:
        raise LosonaError(
            f"dynamic_aggregate: no cells for judge '{judge}' (dynamic.models x conditions)"
        )
    ids = sorted(scenarios["scenario_id"].unique().to_list())
    per_cell = []
    for cell in cells:
        rows = trial_rows(cell, judge, scenarios)
        outcomes = scenario_outcomes(rows)
        per_cell.append((cell, rows, outcomes, cell_statistics(rows, outcomes, ids)))
    estimates = _bootstrap([stat for *_, stats in per_cell for stat in stats], bootstrap)
    judge_model = _judge_model(cells)
    results, arms, outcome_tables, examples = [], [], [], []
    position = 0
    for cell, rows, outcomes, stats in per_cell:
        k = _k(rows)
        for stat in stats:
            low, high = estimates[position]
            position += 1
            effect = stat.helped is not None
            results.append(
                {
                    "judge": judge,
                    "judge_model": judge_model,
                    "judge_label": show.judge_label(judge),
                    "subject_model": cell.model,
                    "model_label": show.model_label(cell.model),
                    "condition": cell.condition,
                    "condition_label": show.condition_label(cell.condition),
                    "k": k,
                    "scenarios": len(ids),
                    "level": stat.level,
                    "metric": stat.metric,
                    "estimate": percent(stat.estimate),
                    "low": percent(low),
                    "high": percent(high),
                    "count": stat.count,
                    "out_of": stat.out_of,
                    "helped": stat.helped,
                    "hurt": stat.hurt,
                    "mcnemar_p": mcnemar_exact(stat.helped or 0, stat.hurt or 0)
                    if effect
                    else None,
                }
            )
        arms += _arm_counts(rows, judge, cell)
        outcome_tables.append(outcomes)
        examples += _examples(cell, judge, scenarios)
    tables = {
        "results.csv": table(results, DYNAMIC_RESULT_SCHEMA, sort_by=[]),
        "arms.csv": table(arms, DYNAMIC_ARM_SCHEMA, sort_by=[]),
        "outcomes.csv": pl.concat(outcome_tables).sort([*CELL, "scenario_id", "arm"])
        if outcome_tables
        else pl.DataFrame(schema=DYNAMIC_OUTCOME_SCHEMA),
        "examples.csv": table(examples, DYNAMIC_EXAMPLE_SCHEMA, sort_by=[]),
    }
    return ReportBundle(tables, _metrics(tables, cells, judge, judge_model, bootstrap))


def _bootstrap(stats: Sequence[_Stat], settings: AggregateSettings) -> list[tuple[float, float]]:
    """Every statistic's interval from one scenario bootstrap (none with a single scenario);
    each cell gives eight statistics, so there is at least one."""
    values = np.vstack([stat.values for stat in stats])
    sizes = np.vstack([stat.sizes for stat in stats])
    result = bootstrap_intervals(values, settings, sizes=sizes)
    return list(zip(result.low.tolist(), result.high.tolist(), strict=True))


def _k(rows: pl.DataFrame) -> int:
    """A cell's K: the most first-turn trials any scenario has (the first turn's `k`)."""
    per_scenario = rows.group_by("scenario_id").agg(pl.col("trial").n_unique())["trial"]
    return max(per_scenario.to_list(), default=0)


def _judge_model(cells: Sequence[Cell]) -> str:
    models = sorted({m for cell in cells for m in cell.verdicts["judge_model"].drop_nulls()})
    return ", ".join(models)


def _arm_counts(rows: pl.DataFrame, judge: str, cell: Cell) -> list[dict[str, Any]]:
    counted = []
    for arm in (*ARMS, FIRST_TURN_UNSCORED):
        part = (
            rows.filter(pl.col("arm").is_null())
            if arm == FIRST_TURN_UNSCORED
            else rows.filter(pl.col("arm") == arm)
        )
        continued = part.filter(pl.col("status") == OK).height
        counted.append(
            {
                "judge": judge,
                "subject_model": cell.model,
                "condition": cell.condition,
                "arm": arm,
                "trials": part.height,
                "continued": continued,
                "left_out": part.height - continued,
                "scored": part["complies"].is_not_null().sum(),
                "complying": part["complies"].sum(),
            }
        )
    return counted


def _examples(cell: Cell, judge: str, scenarios: pl.DataFrame) -> list[dict[str, Any]]:
    """A few breaches continued both ways, the sanction's successes first (for reading)."""
    by_id = {row["scenario_id"]: row for row in scenarios.iter_rows(named=True)}
    judged = cell.prompts.join(
        cell.verdicts.select(*KEY, "response", "complies"), on=KEY, how="inner"
    )
    arms = {
        (row["scenario_id"], row["trial"], row["arm"]): row for row in judged.iter_rows(named=True)
    }
    pairs = []
    for (sid, trial, arm), s in sorted(arms.items()):
        c = arms.get((sid, trial, CONTROL))
        if arm != SANCTION or c is None:
            continue
        rank = (
            0 if s["complies"] and not c["complies"] else 1 if s["complies"] != c["complies"] else 2
        )
        pairs.append((rank, sid, trial, s, c))
    shown = []
    for _, sid, trial, s, c in sorted(pairs, key=lambda p: p[:3])[:EXAMPLES_PER_CELL]:
        scenario = by_id[sid]
        shown.append(
            {
                "judge": judge,
                "subject_model": cell.model,
                "condition": cell.condition,
                "scenario_id": sid,
                "trial": trial,
                "subject": scenario["subject"],
                "first_elicitor": f"{scenario['elicitor_actor']}: {scenario['elicitor_content']}",
                "first_response": s["first_response"],
                "sanction": _lines(s["followup"]),
                "control": _lines(c["followup"]),
                "second_elicitor": f"{s['elicitor_actor']}: {s['elicitor_content']}",
                "sanction_response": s["response"],
                "sanction_complies": s["complies"],
                "control_response": c["response"],
                "control_complies": c["complies"],
            }
        )
    return shown


def _lines(messages: Sequence[Mapping[str, str]]) -> str:
    return "\n".join(f"{m['actor']}: {m['content']}" for m in messages)


def _metrics(
    tables: Mapping[str, pl.DataFrame],
    cells: Sequence[Cell],
    judge: str,
    judge_model: str,
    bootstrap: AggregateSettings,
) -> dict[str, Any]:
    """The DVC metrics: the settings the numbers rest on, then every estimate by cell."""
    prompts = pl.concat([cell.prompts for cell in cells])
    verdicts = pl.concat([cell.verdicts for cell in cells])
    metrics: dict[str, Any] = {
        "settings": {
            "judge": judge,
            "judge_model": judge_model,
            "judge_version": ", ".join(sorted(set(verdicts["judge_version"].drop_nulls()))),
            "followup_sources": sorted(set(prompts["followup_source"].drop_nulls())),
            "elicitor_sources": sorted(set(prompts["elicitor_source"].drop_nulls())),
            "templates": {
                "subject": SUBJECT_TEMPLATE_VERSION,
                "group": {"version": GROUP_TEMPLATE_VERSION, "sha256": group_template_sha256()},
            },
            **bootstrap_settings(bootstrap),
            "unscored_policy": UNSCORED_POLICY_ID,
        },
        "models": {},
    }
    for row in tables["results.csv"].iter_rows(named=True):
        entry = {"estimate": row["estimate"], "low": row["low"], "high": row["high"]}
        cell = (
            metrics["models"].setdefault(row["subject_model"], {}).setdefault(row["condition"], {})
        )
        cell.setdefault(row["level"], {})[row["metric"]] = entry
    for row in tables["arms.csv"].iter_rows(named=True):
        cell = metrics["models"][row["subject_model"]][row["condition"]]
        cell.setdefault("trials", {})[row["arm"]] = row["trials"]
    return metrics


def presentation_of(
    models: Sequence[str], conditions: Sequence[str], judges: Sequence[str]
) -> Presentation:
    """The settings' order and the labels of conf/model/, conf/condition/ and conf/judge/."""
    return Presentation(
        judges=judges,
        models=models,
        conditions=conditions,
        model_labels=config_labels("model", models),
        condition_labels=config_labels("condition", conditions),
        judge_labels=config_labels("judge", judges),
    )


# -- files -----------------------------------------------------------------------------------


def read_dynamic_reports(root: str | Path) -> ReportBundle:
    """One judge's reports as dynamic_aggregate wrote them, refusing a missing file or a
    changed shape."""
    return ReportBundle.read(root, DYNAMIC_FILES)
