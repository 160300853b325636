"""Compliance corrected for each judge's error measured against people's labels.

    p = (p_obs + spec - 1) / (sens + spec - 1)        (Rogan and Gladen, 1978)

clipped to [0, 1]; not identifiable without a labelled compliant and breaching item, or
where sens + spec - 1 <= 0. Intervals resample scenarios and labelled items together, and
effects are in compliance points, not accuracy-at-K (docs/metrics.md has the definitions).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from losona.audit.agreement import Confusion
from losona.audit.human import labelled_verdicts
from losona.audit.tables import CORRECTED_DELTA_SCHEMA, CORRECTED_SCHEMA, CORRECTION_SCHEMA
from losona.core.config import AggregateSettings
from losona.core.contracts import table
from losona.core.formatting import percent
from losona.judges.verdicts import judge_model
from losona.results.metrics import BASELINE_CONDITION, scenario_outcomes
from losona.results.presentation import Presentation
from losona.results.resampling import bootstrap_distribution, percentile_interval


def rogan_gladen(observed: Any, sensitivity: Any, specificity: Any) -> Any:
    """True compliance from observed compliance and the judge's error rates, clipped to [0, 1],
    on numbers or numpy arrays; NaN where sens + spec - 1 <= 0 (not identifiable)."""
    youden = np.asarray(sensitivity + specificity - 1.0, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        raw = (observed + specificity - 1.0) / youden
    return np.where(youden > 0, np.clip(raw, 0.0, 1.0), np.nan)


def judge_error(
    labelled: pl.DataFrame, verdicts: pl.DataFrame, judge: str
) -> tuple[np.ndarray, np.ndarray]:
    """The labelled items the judge scored: people's labels and the judge's, side by side, each
    a bool array (True: complies)."""
    rows = labelled_verdicts(labelled, verdicts, judge)
    scored = rows.filter(pl.col("judge_complies").is_not_null())
    return scored["human"].to_numpy().astype(bool), scored["judge_complies"].to_numpy().astype(bool)


def corrected_compliance(
    labelled: pl.DataFrame,
    verdicts: pl.DataFrame,
    judges: Sequence[str],
    presentation: Presentation,
    bootstrap: AggregateSettings,
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """correction.csv, corrected.csv and corrected_deltas.csv for every judge of the run, from
    `labelled`, the sheet's key with people's labels; a judge whose correction is not
    identifiable has a correction.csv row that says why, and no corrected figures."""
    basis, corrected, deltas = [], [], []
    outcomes = scenario_outcomes(verdicts)
    for judge in judges:
        human, judged = judge_error(labelled, verdicts, judge)
        confusion = Confusion.of(judged.tolist(), human.tolist())  # people are the reference
        row = _basis_row(judge, judge_model(verdicts, judge), confusion, bootstrap.confidence)
        basis.append(row)
        if row["identifiable"]:
            mine = outcomes.filter(pl.col("judge") == judge)
            rows, paired = _corrected_rows(judge, mine, human, judged, presentation, bootstrap)
            corrected += rows
            deltas += paired
    return (
        table(basis, CORRECTION_SCHEMA, sort_by=[]),
        table(corrected, CORRECTED_SCHEMA, sort_by=[]),
        table(deltas, CORRECTED_DELTA_SCHEMA, sort_by=[]),
    )


def _basis_row(judge: str, model: str, c: Confusion, confidence: float) -> dict[str, Any]:
    people_yes, people_no = c.yes_yes + c.no_yes, c.yes_no + c.no_no
    sens, sens_low, sens_high = _rate(c.yes_yes, people_yes, confidence)
    spec, spec_low, spec_high = _rate(c.no_no, people_no, confidence)
    youden = None if sens is None or spec is None else round(sens + spec - 1, 3)
    reason = _not_identifiable(c.n, sens, spec)
    return {
        "judge": judge,
        "judge_model": model,
        "labelled": c.n,
        "people_compliant": people_yes,
        "people_breaching": people_no,
        "true_positives": c.yes_yes,
        "false_negatives": c.no_yes,
        "false_positives": c.yes_no,
        "true_negatives": c.no_no,
        "sensitivity": percent(sens),
        "sensitivity_low": percent(sens_low),
        "sensitivity_high": percent(sens_high),
        "specificity": percent(spec),
        "specificity_low": percent(spec_low),
        "specificity_high": percent(spec_high),
        "youden": youden,
        "identifiable": reason is None,
        "status": reason or "corrected",
    }


def _not_identifiable(labelled: int, sens: float | None, spec: float | None) -> str | None:
    """Why the correction cannot be made from these labels; None when it can."""
    if labelled == 0:
        return "not identifiable: the judge scored none of the labelled items"
    if sens is None:
        return (
            f"not identifiable: people marked none of the {labelled} labelled items compliant, "
            "so the judge's sensitivity is unknown"
        )
    if spec is None:
        return (
            f"not identifiable: people marked none of the {labelled} labelled items breaching, "
            "so the judge's specificity is unknown"
        )
    if sens + spec - 1 <= 0:
        return (
            f"not identifiable: sensitivity {percent(sens)}% + specificity {percent(spec)}% "
            "- 100 is not above 0: the judge's verdicts say nothing about compliance"
        )
    return None


def _rate(part: int, whole: int, confidence: float) -> tuple[float | None, ...]:
    """A share with its exact (Clopper-Pearson) interval; Nones when there is no whole."""
    if not whole:
        return None, None, None
    from scipy import stats  # seconds to import: only a process that corrects pays for it

    ci = stats.binomtest(part, whole).proportion_ci(confidence_level=confidence, method="exact")
    return part / whole, float(ci.low), float(ci.high)


def _corrected_rows(
    judge: str,
    outcomes: pl.DataFrame,
    human: np.ndarray,
    judged: np.ndarray,
    presentation: Presentation,
    bootstrap: AggregateSettings,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One judge's corrected compliance per cell and corrected effects against naive."""
    cells = sorted(
        outcomes.select("subject_model", "condition").unique().iter_rows(),
        key=lambda cell: presentation.cell_key((judge, *cell)),
    )
    scenario_ids = sorted(outcomes["scenario_id"].unique().to_list())
    complying, scored = trials_per_scenario(
        outcomes, ("subject_model", "condition"), cells, scenario_ids
    )
    pairs = [
        (i, cells.index((model, BASELINE_CONDITION)))
        for i, (model, condition) in enumerate(cells)
        if condition != BASELINE_CONDITION and (model, BASELINE_CONDITION) in cells
    ]
    prompted, naive = [i for i, _ in pairs], [j for _, j in pairs]
    comply_item = human.astype(float)  # people: complies
    judged_yes = judged.astype(float)

    def statistic(scenario_counts: np.ndarray, item_counts: np.ndarray) -> np.ndarray:
        # Both arrays: resamples x units. Returns statistics x resamples.
        true_pos = item_counts @ (comply_item * judged_yes)
        positives = item_counts @ comply_item
        true_neg = item_counts @ ((1 - comply_item) * (1 - judged_yes))
        negatives = item_counts @ (1 - comply_item)
        with np.errstate(invalid="ignore", divide="ignore"):
            observed = (scenario_counts @ complying.T) / (scenario_counts @ scored.T)
            sens, spec = true_pos / positives, true_neg / negatives
        # A resample with no positive or no negative item has NaN rates: undefined too.
        fixed = rogan_gladen(observed, sens[:, None], spec[:, None])
        effects = [
            observed[:, prompted] - observed[:, naive],
            fixed[:, prompted] - fixed[:, naive],
        ]
        return np.hstack([observed, fixed, *effects]).T

    everything = np.ones((1, len(scenario_ids)))
    items = np.ones((1, human.size))
    point = statistic(everything, items)[:, 0]
    distribution = bootstrap_distribution(statistic, (len(scenario_ids), human.size), bootstrap)
    n_cells, n_pairs = len(cells), len(pairs)
    layout = np.cumsum([0, n_cells, n_cells, n_pairs, n_pairs])
    if distribution is None:
        low = high = np.full(point.shape, np.nan)
        unidentified = np.zeros(point.shape, dtype=int)
    else:
        # An undefined corrected figure widens its interval to the whole range.
        undefined = (None, (0.0, 1.0), None, (-1.0, 1.0))
        bounds = [
            percentile_interval(distribution[a:b], bootstrap.confidence, when_undefined)
            for (a, b), when_undefined in zip(itertools.pairwise(layout), undefined, strict=True)
        ]
        low, high = (np.concatenate(ends) for ends in zip(*bounds, strict=True))
        unidentified = np.isnan(distribution).sum(axis=-1)

    def figures(column: str, k: int) -> dict[str, float | None]:
        """`column`, `column`_low and `column`_high: the k-th statistic and its interval."""
        values = (percent(float(v[k])) for v in (point, low, high))
        return dict(zip((column, f"{column}_low", f"{column}_high"), values, strict=True))

    rows = [
        {
            **_names(judge, cell, presentation),
            "scenarios": len(scenario_ids),
            "scored_trials": int(scored[i].sum()),
            **figures("compliance", layout[0] + i),
            **figures("corrected", layout[1] + i),
            "unidentified_resamples": int(unidentified[layout[1] + i]),
        }
        for i, cell in enumerate(cells)
    ]
    paired = [
        {
            **_names(judge, cells[i], presentation),
            "scenarios": len(scenario_ids),
            **figures("compliance_delta", layout[2] + k),
            **figures("corrected_delta", layout[3] + k),
            "unidentified_resamples": int(unidentified[layout[3] + k]),
        }
        for k, (i, _) in enumerate(pairs)
    ]
    return rows, paired


def trials_per_scenario(
    counts: pl.DataFrame,
    by: tuple[str, str],
    keys: Sequence[tuple[str, str]],
    scenario_ids: Sequence[str],
) -> tuple[np.ndarray, np.ndarray]:
    """Complying and scored trials as two keys x scenarios matrices, from `counts` (one row
    per `by` values and scenario); 0 where it has no row."""
    columns = counts.select(*by, "scenario_id", "complying", "scored")
    found = {(a, b, s): (c, n) for a, b, s, c, n in columns.iter_rows()}
    complying, scored = (
        np.array([[found.get((*key, s), (0, 0))[i] for s in scenario_ids] for key in keys], float)
        for i in (0, 1)
    )
    return complying, scored


def _names(judge: str, cell: tuple[str, str], presentation: Presentation) -> dict[str, str]:
    model, condition = cell
    return {
        "judge": judge,
        "subject_model": model,
        "model_label": presentation.model_label(model),
        "condition": condition,
        "condition_label": presentation.condition_label(condition),
    }
