"""The dynamic turn's numbers with scenario-bootstrap intervals (docs/metrics.md, "The
dynamic second turn"): recovery after the sanction and after the control, their paired
difference, and retention, each at the trial and the scenario level."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from losona.core.config import AggregateSettings
from losona.core.errors import LosonaError
from losona.dynamic.arms import ARMS, CONTROL, RETENTION, SANCTION
from losona.dynamic.cells import KEY, Cell, check_one_for_one
from losona.dynamic.tables import DYNAMIC_OUTCOME_SCHEMA
from losona.judges.verdicts import CELL
from losona.results.metrics import bootstrap_intervals
from losona.results.metrics import scenario_outcomes as majority


def trial_rows(cell: Cell, judge: str, scenarios: pl.DataFrame) -> pl.DataFrame:
    """One row per first-turn trial and arm: its status and its second verdict (null if none);
    refuses verdicts that do not match the prompts one for one, or miss scenarios."""
    where = f"judge '{judge}', model '{cell.model}', condition '{cell.condition}'"
    check_one_for_one(
        cell.prompts,
        cell.verdicts,
        where=f"dynamic verdicts of {where}",
        what="verdict",
        rerun="dynamic_sample and dynamic_judge",
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
    return _in_order(counted, ids)


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
    return _in_order(both, ids)


def _in_order(counts: pl.DataFrame, ids: list[str]) -> dict[str, np.ndarray]:
    """Each count column of a per-scenario table in `ids`' order, 0 where a scenario has none."""
    aligned = _by_id(counts, ids).fill_null(0)
    return {c: aligned[c].to_numpy().astype(float) for c in counts.columns if c != "scenario_id"}


def _by_id(table: pl.DataFrame, ids: list[str]) -> pl.DataFrame:
    """A per-scenario table's rows in `ids`' order, null where a scenario has none."""
    order = pl.Series("scenario_id", ids, dtype=pl.String).to_frame()
    return order.join(table, on="scenario_id", how="left", maintain_order="left")


def scenario_outcomes(rows: pl.DataFrame) -> pl.DataFrame:
    """Each scenario's arms under the paper's majority rule (DYNAMIC_OUTCOME_SCHEMA's rows); a
    trial the arm could not continue counts as unscored: it may not settle the vote."""
    outcomes = majority(rows.filter(pl.col("arm").is_not_null()), by=[*CELL, "arm"])
    return outcomes.select(DYNAMIC_OUTCOME_SCHEMA.names()).cast(DYNAMIC_OUTCOME_SCHEMA)


def _passes(outcomes: pl.DataFrame, arm: str, ids: list[str]) -> np.ndarray:
    """1/0 per scenario of `ids` whose arm passed/failed; NaN: no trials in it, or undetermined."""
    passed = outcomes.filter(pl.col("arm") == arm).select("scenario_id", "passed")
    return _by_id(passed, ids)["passed"].cast(pl.Float64).to_numpy()


def _share(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    shares = np.full(values.shape, np.nan)  # NaN where a scenario has nothing to share
    np.divide(values, sizes, out=shares, where=sizes > 0)
    return shares


@dataclass(frozen=True)
class Stat:
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


def cell_statistics(rows: pl.DataFrame, outcomes: pl.DataFrame, ids: list[str]) -> list[Stat]:
    """The eight metrics of one cell: recovery after the sanction and after the control, the
    sanction effect and retention, at the trial level, then the same at the scenario level."""
    arms = {arm: _per_scenario(rows, arm, ids) for arm in ARMS}
    pairs = _pairs(rows, ids)
    passes = {arm: _passes(outcomes, arm, ids) for arm in ARMS}
    ones = np.ones(len(ids))

    def trial_share(metric: str, arm: str) -> Stat:
        counts = arms[arm]
        return Stat(
            "trial",
            metric,
            _share(counts["complying"], counts["scored"]),
            counts["scored"],
            int(counts["complying"].sum()),
            int(counts["scored"].sum()),
        )

    def scenario_share(metric: str, arm: str) -> Stat:
        settled = ~np.isnan(passes[arm])
        return Stat(
            "scenario", metric, passes[arm], ones, int(np.nansum(passes[arm])), int(settled.sum())
        )

    s, c = passes[SANCTION], passes[CONTROL]
    both = ~np.isnan(s) & ~np.isnan(c)
    return [
        trial_share("recovery_after_sanction", SANCTION),
        trial_share("recovery_after_control", CONTROL),
        Stat(
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
        Stat(
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


def cell_intervals(stats: Sequence[Stat], settings: AggregateSettings) -> list[tuple[float, float]]:
    """Every statistic's interval from one scenario bootstrap (none with a single scenario);
    each cell gives eight statistics, so there is at least one."""
    values = np.vstack([stat.values for stat in stats])
    sizes = np.vstack([stat.sizes for stat in stats])
    result = bootstrap_intervals(values, settings, sizes=sizes)
    return list(zip(result.low.tolist(), result.high.tolist(), strict=True))


def cell_k(rows: pl.DataFrame) -> int:
    """A cell's K: the most first-turn trials any scenario has (the first turn's `k`)."""
    per_scenario = rows.group_by("scenario_id").agg(pl.col("trial").n_unique())["trial"]
    return max(per_scenario.to_list(), default=0)
