"""dynamic_aggregate: one judge's second-turn tables (results, arms, outcomes, examples) and
DVC metrics, from each cell's numbers (statistics.py), and the files they are written as."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from losona.core.config import AggregateSettings
from losona.core.contracts import table
from losona.core.errors import LosonaError
from losona.core.formatting import percent
from losona.dynamic.arms import ARMS, CONTROL, FIRST_TURN_UNSCORED, OK, SANCTION
from losona.dynamic.cells import KEY, Cell
from losona.dynamic.group import GROUP_TEMPLATE_VERSION, group_template_sha256
from losona.dynamic.statistics import (
    cell_intervals,
    cell_k,
    cell_statistics,
    scenario_outcomes,
    trial_rows,
)
from losona.dynamic.tables import (
    DYNAMIC_ARM_SCHEMA,
    DYNAMIC_EXAMPLE_SCHEMA,
    DYNAMIC_OUTCOME_SCHEMA,
    DYNAMIC_RESULT_SCHEMA,
)
from losona.judges.verdicts import CELL
from losona.prompts.subject import SUBJECT_TEMPLATE_VERSION
from losona.results.bundle import BundleFiles, ReportBundle
from losona.results.metrics import UNSCORED_POLICY_ID, bootstrap_settings, mcnemar_exact
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
EXAMPLES_PER_CELL = 3  # breaches continued both ways, shown per model x condition


def aggregate_dynamic(
    cells: Sequence[Cell],
    scenarios: pl.DataFrame,
    *,
    judge: str,
    bootstrap: AggregateSettings,
    presentation: Presentation,
) -> ReportBundle:
    """One judge's dynamic tables and metrics from its cells' prompt and verdict tables."""
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
    estimates = iter(cell_intervals([s for *_, stats in per_cell for s in stats], bootstrap))
    judge_model = ", ".join(
        sorted({m for cell in cells for m in cell.verdicts["judge_model"].drop_nulls()})
    )
    results, arms, outcome_tables, examples = [], [], [], []
    for cell, rows, outcomes, stats in per_cell:
        k = cell_k(rows)
        for stat in stats:
            low, high = next(estimates)
            results.append(
                {
                    "judge": judge,
                    "judge_model": judge_model,
                    "judge_label": presentation.judge_label(judge),
                    "subject_model": cell.model,
                    "model_label": presentation.model_label(cell.model),
                    "condition": cell.condition,
                    "condition_label": presentation.condition_label(cell.condition),
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
                    "mcnemar_p": None
                    if stat.helped is None
                    else mcnemar_exact(stat.helped, stat.hurt or 0),
                }
            )
        arms += _arm_counts(rows, judge, cell)
        outcome_tables.append(outcomes)
        examples += _examples(cell, judge, scenarios)
    tables = {
        "results.csv": table(results, DYNAMIC_RESULT_SCHEMA, sort_by=[]),
        "arms.csv": table(arms, DYNAMIC_ARM_SCHEMA, sort_by=[]),
        "outcomes.csv": pl.concat(outcome_tables).sort([*CELL, "scenario_id", "arm"]),
        "examples.csv": table(examples, DYNAMIC_EXAMPLE_SCHEMA, sort_by=[]),
    }
    return ReportBundle(tables, _metrics(tables, cells, judge, judge_model, bootstrap))


def _arm_counts(rows: pl.DataFrame, judge: str, cell: Cell) -> list[dict[str, Any]]:
    counted = []
    for arm in (*ARMS, FIRST_TURN_UNSCORED):
        in_arm = pl.col("arm").is_null() if arm == FIRST_TURN_UNSCORED else pl.col("arm") == arm
        part = rows.filter(in_arm)
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
    for (sid, trial, arm), s in arms.items():
        c = arms.get((sid, trial, CONTROL))
        if arm != SANCTION or c is None:
            continue
        helped = s["complies"] and not c["complies"]
        pairs.append(
            (0 if helped else 1 if s["complies"] != c["complies"] else 2, sid, trial, s, c)
        )
    return [
        {
            "judge": judge,
            "subject_model": cell.model,
            "condition": cell.condition,
            "scenario_id": sid,
            "trial": trial,
            "subject": by_id[sid]["subject"],
            "first_elicitor": f"{by_id[sid]['elicitor_actor']}: {by_id[sid]['elicitor_content']}",
            "first_response": s["first_response"],
            "sanction": _lines(s["followup"]),
            "control": _lines(c["followup"]),
            "second_elicitor": f"{s['elicitor_actor']}: {s['elicitor_content']}",
            "sanction_response": s["response"],
            "sanction_complies": s["complies"],
            "control_response": c["response"],
            "control_complies": c["complies"],
        }
        for _, sid, trial, s, c in sorted(pairs, key=lambda p: p[:3])[:EXAMPLES_PER_CELL]
    ]


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
