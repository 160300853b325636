"""The audit's headline figures in words, for the stage to print."""

from __future__ import annotations

import polars as pl

from losona.audit.comparison import headline_checks
from losona.core.formatting import number, signed
from losona.results.bundle import ReportBundle


def summary_lines(result: ReportBundle) -> list[str]:
    """The headline figures in words, one line each, for the stage to print."""
    lines = []
    stability = result["headline_stability.csv"]
    for r in result["judge_pairs.csv"].iter_rows(named=True):
        checks, same = headline_checks(stability, r["judge_a"], r["judge_b"])
        lines.append(
            f"{r['judge_a']} vs {r['judge_b']}: {number(r['agreement'])}% agreement, kappa "
            f"{number(r['kappa'], 3)}, on {r['both_scored']} responses both scored; "
            f"{same} of {checks} headline comparisons the same"
        )
    for r in result["human_agreement.csv"].iter_rows(named=True):
        lines.append(
            f"{r['judge']} vs people: {number(r['agreement'])}% agreement "
            f"[{number(r['agreement_low'])}, {number(r['agreement_high'])}], kappa "
            f"{number(r['kappa'], 3)}, on {r['scored']} labelled items; compliant: judge "
            f"{number(r['judge_compliance'])}%, people {number(r['human_compliance'])}%; "
            f"{r['false_positives']} apparent false positives, {r['false_negatives']} "
            "apparent false negatives"
        )
    corrected = result["corrected.csv"]
    for r in result["correction.csv"].iter_rows(named=True):
        if not r["identifiable"]:
            lines.append(f"{r['judge']}: compliance corrected for judge error: {r['status']}")
            continue
        mine = corrected.filter(pl.col("judge") == r["judge"])
        lines.append(
            f"{r['judge']}: compliance corrected for judge error (sensitivity "
            f"{number(r['sensitivity'])}%, specificity {number(r['specificity'])}% on "
            f"{r['labelled']} labelled items) in {mine.height} cells (corrected.csv)"
        )
    for r in result["self_preference.csv"].iter_rows(named=True):
        if r["self_preference"] is None:
            continue
        lines.append(
            f"{r['judge']} ({r['family']}): self-preference {signed(r['self_preference'])} "
            f"points [{number(r['self_preference_low'])}, {number(r['self_preference_high'])}] "
            f"for {r['own_family_models']} against {r['other_models']}, beside "
            f"{r['reference_judges']}"
        )
    counts = result.metrics["labels"]
    if not counts["labelled"]:
        exported = (
            f", a {counts['sheet_items']}-item sheet is waiting" if counts["sheet_items"] else ""
        )
        lines.append(f"no human labels yet{exported}")
    for r in (
        result["determinism.csv"].filter(pl.col("method") == "re-judged").iter_rows(named=True)
    ):
        lines.append(
            f"{r['judge']} re-judged {r['items']} items {r['repeats']} times, cache bypassed: "
            f"{r['flipped_items']} flipped ({number(r['flip_rate'])}%)"
            + (
                f"; {r['unscored_judgements']} of {r['items'] * r['repeats']} re-judgements "
                "unscored (see the judge's run log)"
                if r["unscored_judgements"]
                else ""
            )
        )
    return lines
