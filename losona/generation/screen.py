"""screen: each baseline answers each valid candidate's no-demonstration control K times,
the judge scores them, and enough baselines failing to adapt keep the candidate
(`screen.keep`, docs/generation.md; paper Sections 3 and 5.4).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from losona.core.contracts import VERDICT_SCHEMA, Scenario, table
from losona.core.formatting import percent
from losona.generation.candidates import followup_check
from losona.generation.settings import KEEP_RULES, KeepRule
from losona.generation.tables import CANDIDATE_SCHEMA, GENERATION_CELL_SCHEMA
from losona.judges.base import Judge, JudgeCase
from losona.judges.run import verdict_columns
from losona.models import CallOptions, ModelSpec, Request, complete_all
from losona.prompts.render import subject_messages
from losona.results.metrics import majority_threshold, scenario_outcomes
from losona.scenarios.view import without_demonstrations

# The `condition` of every screening verdict: the naive prompt on the control.
SCREEN_CONDITION = "naive_no_demos"


@dataclass(frozen=True)
class Screening:
    """What screen writes: the candidate table with outcomes, and every screening verdict."""

    candidates: pl.DataFrame  # CANDIDATE_SCHEMA
    verdicts: pl.DataFrame  # VERDICT_SCHEMA, one row per candidate x baseline x trial


def candidate_scenario(row: dict[str, Any]) -> Scenario:
    """The candidate's scenario, from its row of the candidate table."""
    return Scenario.from_row(json.loads(row["scenario"]))


def _decision(
    outcomes: dict[str, dict[str, Any]], baselines: Sequence[str], keep: KeepRule, trials: int
) -> tuple[str, list[str]]:
    """accepted | screened_out | undetermined, and why, from each baseline's outcome."""
    need = len(baselines) if keep == "all" else len(baselines) // 2 + 1
    passed = {name: outcomes[name]["passed"] for name in baselines}
    breaching = sum(1 for p in passed.values() if p is False)
    open_ = sum(1 for p in passed.values() if p is None)
    threshold = majority_threshold(trials)
    if breaching >= need:
        return "accepted", []
    if breaching + open_ < need:
        return "screened_out", [
            f"screen.{name}: expected a breach without demonstrations (fewer than {threshold} "
            f"of {trials} answers complying; keep: {keep}), found "
            f"{outcomes[name]['complying']} of {trials} complying"
            for name, p in passed.items()
            if p is True
        ]
    return "undetermined", [
        f"screen.{name}: expected every answer scored by the judge, found "
        f"{trials - outcomes[name]['scored']} of {trials} unscored, which leaves its "
        "outcome open"
        for name, p in passed.items()
        if p is None
    ]


def screening_verdicts(
    controls: Sequence[Scenario],
    baselines: Sequence[ModelSpec],
    judge: Judge,
    judge_name: str,
    *,
    trials: int,
    options: CallOptions,
    run_log_dir: Path | None = None,
) -> pl.DataFrame:
    """Every baseline's K answers to every control, judged: a verdict table. Each baseline's
    calls get a progress bar and a run log (`<run_log_dir>/screen_<baseline>.log.json`)."""
    asked = [(control, trial) for control in controls for trial in range(trials)]
    requests = [Request(subject_messages(control, "naive"), trial=t) for control, t in asked]
    cases, keys = [], []
    for spec in baselines if controls else []:  # nothing valid: no call at all
        log = run_log_dir / f"screen_{spec.name}.log.json" if run_log_dir else None
        calls = replace(options, run_log=log, progress=f"screen {spec.name}")
        completions = complete_all(spec, requests, calls, to=f"the baseline '{spec.name}'")
        for (control, trial), completion in zip(asked, completions, strict=True):
            answer = completion.text or ""
            cases.append(JudgeCase.for_response(control, answer))
            keys.append(
                {
                    "scenario_id": control.scenario_id,
                    "event_type": control.event_type,
                    "norm_id": control.norm_id,
                    "condition": SCREEN_CONDITION,
                    "subject_model": spec.name,
                    "trial": trial,
                    "response": answer,
                }
            )
    judgements = judge.judge(cases) if cases else []
    fields = verdict_columns(judge, judge_name, judgements).to_dicts()
    rows = [key | verdict for key, verdict in zip(keys, fields, strict=True)]
    return table(rows, VERDICT_SCHEMA, sort_by=["scenario_id", "subject_model", "trial"])


def screen_candidates(
    candidates: pl.DataFrame,
    baselines: Sequence[ModelSpec],
    judge: Judge,
    judge_name: str,
    *,
    trials: int,
    keep: KeepRule,
    options: CallOptions,
    run_log_dir: Path | None = None,
) -> Screening:
    """Screen every valid candidate; invalid ones pass through unchanged."""
    candidates = recheck_followups(candidates)
    valid = candidates.filter(pl.col("status") == "valid").sort("candidate_id")
    controls = [without_demonstrations(candidate_scenario(r)) for r in valid.iter_rows(named=True)]
    verdicts = screening_verdicts(
        controls,
        baselines,
        judge,
        judge_name,
        trials=trials,
        options=options,
        run_log_dir=run_log_dir,
    )
    outcomes: dict[str, dict[str, dict[str, Any]]] = {}
    for outcome in scenario_outcomes(verdicts).iter_rows(named=True):
        outcomes.setdefault(outcome["scenario_id"], {})[outcome["subject_model"]] = outcome
    names = [spec.name for spec in baselines]
    screened = []
    for row in candidates.iter_rows(named=True):
        if row["status"] == "valid":
            status, reasons = _decision(outcomes[row["candidate_id"]], names, keep, trials)
            row = row | {"status": status, "reasons": reasons}
        screened.append(row)
    return Screening(
        candidates=table(screened, CANDIDATE_SCHEMA, sort_by=["candidate_id"]), verdicts=verdicts
    )


def recheck_followups(candidates: pl.DataFrame) -> pl.DataFrame:
    """Valid candidates whose follow-up material fails the validator fetch runs, made invalid
    (again here, so that no table written before the generator asked for them goes on)."""
    rows = []
    for row in candidates.iter_rows(named=True):
        if row["status"] == "valid":
            reasons = followup_check(json.loads(row["scenario"]))
            if reasons:
                row = row | {"status": "invalid", "reasons": [*row["reasons"], *reasons]}
        rows.append(row)
    return table(rows, CANDIDATE_SCHEMA, sort_by=["candidate_id"])


def cell_report(candidates: pl.DataFrame) -> pl.DataFrame:
    """Per (event, norm) cell: generated, rejected by validation or by screening, accepted."""

    def count(status: str) -> pl.Expr:
        return (pl.col("status") == status).sum()

    return (
        candidates.group_by("event_type", "norm_id")
        .agg(
            generated=pl.len(),
            rejected_validation=count("invalid"),
            rejected_screening=count("screened_out"),
            undetermined=count("undetermined"),
            accepted=count("accepted"),
        )
        .cast(GENERATION_CELL_SCHEMA)
        .sort("event_type", "norm_id")
    )


def totals(cells: pl.DataFrame) -> dict[str, Any]:
    """The cell report summed, with each outcome's share of the generated candidates."""
    counts = {name: int(cells[name].sum()) for name in list(GENERATION_CELL_SCHEMA)[2:]}
    shares = {f"{name}_percent": percent(n, counts["generated"]) for name, n in counts.items()}
    return counts | {k: v for k, v in shares.items() if k != "generated_percent"}


def format_cell_report(cells: pl.DataFrame) -> str:
    """The cell report as a text table with a total line, for the terminal."""
    columns = list(GENERATION_CELL_SCHEMA)
    header = ["event", "norm", "generated", "invalid", "screened out", "undetermined", "accepted"]
    body = [[str(v) for v in row] for row in cells.select(columns).iter_rows()]
    summed = totals(cells)
    body.append(["total", f"{cells.height} cells", *(str(summed[c]) for c in columns[2:])])
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]

    def line(cells_: list[str]) -> str:
        left = [cells_[i].ljust(widths[i]) for i in range(2)]
        right = [cells_[i].rjust(widths[i]) for i in range(2, len(cells_))]
        return "  ".join(left + right).rstrip()

    rule = "  ".join("-" * w for w in widths)
    lines = [line(header), rule, *(line(r) for r in body[:-1]), rule, line(body[-1])]
    n = summed["generated"]
    if n:
        lines.append(
            f"of {n} candidates: {summed['rejected_validation_percent']}% rejected by "
            f"validation, {summed['rejected_screening_percent']}% by screening, "
            f"{summed['undetermined_percent']}% undetermined, {summed['accepted_percent']}% "
            "accepted"
        )
    return "\n".join(lines)


def screen_summary(
    screened: pl.DataFrame,
    baselines: Sequence[ModelSpec],
    judge: Judge,
    judge_name: str,
    *,
    trials: int,
    keep: KeepRule,
) -> dict[str, Any]:
    """How the screen was run and what it found (reports/generation/screen.json)."""
    return {
        "control": "each candidate without its demonstration turns, same elicitor",
        "condition": "naive",
        "baselines": [{"config": s.name, "model": s.model} for s in baselines],
        "trials": trials,
        "keep": keep,
        "keep_rule": KEEP_RULES[keep],
        "adapts_by_default": (
            f"at least {majority_threshold(trials)} of {trials} answers comply (accuracy-at-K)"
        ),
        "judge": {"config": judge_name, "model": judge.model, "version": judge.version},
        "totals": totals(cell_report(screened)),
    }
