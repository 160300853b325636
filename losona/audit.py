"""audit: how far a run's verdicts can be trusted (paper Section 7), checked on every run.

- Judge against judge: for every pair of judges that scored the same responses, their
  agreement, Cohen's kappa, the confusion table, each one's compliance rate, agreement by
  subject model, condition and norm, and whether the headline comparisons (each model's
  best condition, the sign of each paired effect against naive) come out the same.
- Judge against people: each judge against the labels people gave a blinded sample of
  responses (losona/labels.py): agreement with a bootstrap interval, both compliance
  rates, apparent false positives and false negatives, kappa.
- Determinism: a seeded subset re-judged N times with the call cache bypassed, and how
  often a verdict flips. Opt-in, since it pays for the judge's calls again.
- Validity controls: every judge's control results (the judge_controls stage) in one table.

"Complies" is the positive label throughout. Taking B as the reference, A's apparent false
positives are the responses A marks compliant and B breaching; its apparent false
negatives the reverse. Unscored verdicts are counted and left out, never read as a label.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from losona.aggregate import Bootstrap, Presentation, Reports
from losona.config import AuditSettings as AuditSettings
from losona.config import DeterminismSettings as DeterminismSettings
from losona.config import SheetSettings as SheetSettings
from losona.contracts import (
    CONTROL_MISS_SCHEMA,
    CONTROL_SUMMARY_SCHEMA,
    DETERMINISM_FLIP_SCHEMA,
    DETERMINISM_SCHEMA,
    HUMAN_AGREEMENT_SCHEMA,
    HUMAN_ITEM_SCHEMA,
    JUDGE_PAIR_SCHEMA,
    PAIR_BREAKDOWN_SCHEMA,
    STABILITY_SCHEMA,
    scenarios_from_table,
    table,
)
from losona.errors import LosonaError
from losona.io import (
    read_csv,
    read_json_object,
    require_outputs,
    sha256_text,
    write_json,
    write_text,
)
from losona.judges.base import Judge, JudgeCase, Judgement
from losona.judges.run import control_summary
from losona.labels import Labels
from losona.metrics import bootstrap_means, pct

# One judged response: the same key in two judges' verdicts is the same response.
RESPONSE_KEY = ["scenario_id", "subject_model", "condition", "trial"]
BREAKDOWNS = ("subject_model", "condition", "norm_id")
DETERMINISM_COUNTS = (
    "items",
    "repeats",
    "flipped_items",
    "changed_judgements",
    "unscored_judgements",
)
BEST_CONDITION = "best condition"
EFFECT = "effect vs naive"

# The files audit writes under paths.audit_dir (dvc.yaml lists the same names).
AUDIT_FILES: dict[str, pl.Schema] = {
    "judge_pairs.csv": JUDGE_PAIR_SCHEMA,
    "judge_pair_breakdown.csv": PAIR_BREAKDOWN_SCHEMA,
    "headline_stability.csv": STABILITY_SCHEMA,
    "human_agreement.csv": HUMAN_AGREEMENT_SCHEMA,
    "human_items.csv": HUMAN_ITEM_SCHEMA,
    "determinism.csv": DETERMINISM_SCHEMA,
    "determinism_flips.csv": DETERMINISM_FLIP_SCHEMA,
    "controls.csv": CONTROL_SUMMARY_SCHEMA,
    "control_misses.csv": CONTROL_MISS_SCHEMA,
}
METRICS = "metrics.json"


# -- settings ------------------------------------------------------------------------------

# The `audit:` node (AuditSettings and its two parts) is checked with every config group in
# losona/config.py.


# -- two raters on the same items ------------------------------------------------------------


@dataclass(frozen=True)
class Confusion:
    """Two raters' labels on the same items: A is the rater under test, B the reference."""

    yes_yes: int
    yes_no: int  # A says complies, B says breach: A's apparent false positives
    no_yes: int  # A says breach, B says complies: A's apparent false negatives
    no_no: int

    @classmethod
    def of(cls, a: Iterable[bool], b: Iterable[bool]) -> Confusion:
        """Count the label pairs of two equally long sequences."""
        counts = Counter(zip(a, b, strict=True))
        return cls(
            counts[True, True], counts[True, False], counts[False, True], counts[False, False]
        )

    @property
    def n(self) -> int:
        """Items rated by both."""
        return self.yes_yes + self.yes_no + self.no_yes + self.no_no

    @property
    def agree(self) -> int:
        """Items both rated alike."""
        return self.yes_yes + self.no_no

    @property
    def agreement(self) -> float | None:
        """Share of items rated alike (None with no items)."""
        return self.agree / self.n if self.n else None

    @property
    def a_rate(self) -> float | None:
        """Share of items A marks compliant."""
        return (self.yes_yes + self.yes_no) / self.n if self.n else None

    @property
    def b_rate(self) -> float | None:
        """Share of items B marks compliant."""
        return (self.yes_yes + self.no_yes) / self.n if self.n else None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa, (p_o - p_e) / (1 - p_e); None when chance agreement p_e is 1."""
        n = self.n
        # In counts, exactly: n^2 p_e = (A's yes)(B's yes) + (A's no)(B's no).
        chance = (self.yes_yes + self.yes_no) * (self.yes_yes + self.no_yes) + (
            self.no_yes + self.no_no
        ) * (self.yes_no + self.no_no)
        if n == 0 or chance == n * n:
            return None
        return (n * self.agree - chance) / (n * n - chance)

    def figures(self) -> dict[str, Any]:
        """Agreement, kappa and both compliance rates as reports write them."""
        return {
            "agree": self.agree,
            "agreement": pct(self.agreement),
            "kappa": _round(self.kappa),
            "a_compliance": pct(self.a_rate),
            "b_compliance": pct(self.b_rate),
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


# -- judge against judge ---------------------------------------------------------------------


def judge_names(verdicts: pl.DataFrame, presentation: Presentation) -> list[str]:
    """The judges in the verdicts, in the sweep's order (others after, alphabetically)."""
    names = verdicts["judge"].unique().to_list()
    return sorted(names, key=lambda j: presentation.cell_key((j, "", ""))[0])


def paired_verdicts(verdicts: pl.DataFrame, a: str, b: str) -> pl.DataFrame:
    """Every response either judge has a verdict for: `a` and `b` its labels, `in_a`, `in_b`."""

    def side(judge: str, name: str) -> pl.DataFrame:
        return verdicts.filter(pl.col("judge") == judge).select(
            *RESPONSE_KEY,
            pl.col("norm_id").alias(f"norm_{name}"),
            pl.col("response").alias(f"response_{name}"),
            pl.col("complies").alias(name),
            pl.lit(True).alias(f"in_{name}"),
        )

    rows = side(a, "a").join(side(b, "b"), on=RESPONSE_KEY, how="full", coalesce=True)
    rows = rows.with_columns(
        pl.coalesce("norm_a", "norm_b").alias("norm_id"),
        pl.col("in_a").fill_null(False),
        pl.col("in_b").fill_null(False),
    ).sort(RESPONSE_KEY)
    differing = rows.filter(
        pl.col("in_a") & pl.col("in_b") & pl.col("response_a").ne_missing(pl.col("response_b"))
    )
    if not differing.is_empty():
        row = differing.row(0, named=True)
        raise LosonaError(
            f"judges '{a}' and '{b}' judged different texts for the same response "
            f"(model '{row['subject_model']}', condition '{row['condition']}', scenario "
            f"'{row['scenario_id']}', trial {row['trial']}): one judge's verdicts are older "
            "than the responses; rerun judge (dvc repro)"
        )
    return rows.drop("norm_a", "norm_b", "response_a", "response_b")


def compare_judges(
    verdicts: pl.DataFrame, judges: Sequence[str], presentation: Presentation
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """judge_pairs.csv and judge_pair_breakdown.csv: every pair of judges, overall and by group."""
    pairs, breakdown = [], []
    for a, b in itertools.combinations(judges, 2):
        rows = paired_verdicts(verdicts, a, b)
        both = rows.filter(pl.col("in_a") & pl.col("in_b"))
        scored = both.filter(pl.col("a").is_not_null() & pl.col("b").is_not_null())
        confusion = Confusion.of(scored["a"], scored["b"])
        pairs.append(
            {
                "judge_a": a,
                "judge_b": b,
                "rows": rows.height,
                "only_a": rows.filter(~pl.col("in_b")).height,
                "only_b": rows.filter(~pl.col("in_a")).height,
                "unscored_a": both["a"].null_count(),
                "unscored_b": both["b"].null_count(),
                "both_scored": confusion.n,
                **confusion.figures(),
                "a_yes_b_yes": confusion.yes_yes,
                "a_yes_b_no": confusion.yes_no,
                "a_no_b_yes": confusion.no_yes,
                "a_no_b_no": confusion.no_no,
            }
        )
        for by in BREAKDOWNS:
            for group in _ordered_groups(scored[by].unique().to_list(), by, presentation):
                part = scored.filter(pl.col(by) == group)
                confusion = Confusion.of(part["a"], part["b"])
                breakdown.append(
                    {
                        "judge_a": a,
                        "judge_b": b,
                        "by": by,
                        "group": group,
                        "both_scored": confusion.n,
                        **confusion.figures(),
                    }
                )
    return (
        table(pairs, JUDGE_PAIR_SCHEMA, sort_by=[]),
        table(breakdown, PAIR_BREAKDOWN_SCHEMA, sort_by=[]),
    )


def _ordered_groups(groups: list[str], by: str, presentation: Presentation) -> list[str]:
    if by == "subject_model":
        return sorted(groups, key=lambda m: presentation.cell_key(("", m, ""))[1])
    if by == "condition":
        return sorted(groups, key=lambda c: presentation.cell_key(("", "", c))[2])
    return sorted(groups)


def headline_stability(
    results: pl.DataFrame, deltas: pl.DataFrame, judges: Sequence[str]
) -> pl.DataFrame:
    """headline_stability.csv: each model's best condition and each effect's sign, judge by judge.

    Both come from aggregate's tables (accuracy-at-K and paired effects against naive), so
    they are the very numbers each judge's report shows.
    """
    rows = []
    for a, b in itertools.combinations(judges, 2):
        models = [
            m
            for m in dict.fromkeys(results.filter(pl.col("judge") == a)["subject_model"])
            if m in set(results.filter(pl.col("judge") == b)["subject_model"])
        ]
        for model in models:
            best_a, best_b = (_best_conditions(results, judge, model) for judge in (a, b))
            rows.append(
                _check(a, b, model, BEST_CONDITION, None, " = ".join(best_a), " = ".join(best_b))
                | {"same": set(best_a) == set(best_b) if best_a and best_b else None}
            )
            effect_a, effect_b = (_effects(deltas, judge, model) for judge in (a, b))
            for condition, delta_a in effect_a.items():
                if condition not in effect_b:
                    continue
                delta_b = effect_b[condition]
                same = (
                    None
                    if delta_a is None or delta_b is None
                    else bool(np.sign(delta_a) == np.sign(delta_b))
                )
                rows.append(
                    _check(a, b, model, EFFECT, condition, _signed(delta_a), _signed(delta_b))
                    | {"same": same}
                )
    return table(rows, STABILITY_SCHEMA, sort_by=[])


def _check(
    a: str, b: str, model: str, check: str, condition: str | None, on_a: str, on_b: str
) -> dict[str, Any]:
    return {
        "judge_a": a,
        "judge_b": b,
        "subject_model": model,
        "check": check,
        "condition": condition,
        "a": on_a or "n/a",
        "b": on_b or "n/a",
    }


def _best_conditions(results: pl.DataFrame, judge: str, model: str) -> list[str]:
    """The conditions with the highest accuracy-at-K (several when tied)."""
    rows = results.filter(
        (pl.col("judge") == judge)
        & (pl.col("subject_model") == model)
        & pl.col("acc_at_k").is_not_null()
    )
    if rows.is_empty():
        return []
    best = rows["acc_at_k"].max()
    return rows.filter(pl.col("acc_at_k") == best)["condition"].to_list()


def _effects(deltas: pl.DataFrame, judge: str, model: str) -> dict[str, float | None]:
    rows = deltas.filter((pl.col("judge") == judge) & (pl.col("subject_model") == model))
    return dict(rows.select("condition", "delta").iter_rows())


def _signed(value: float | None) -> str:
    return "" if value is None else f"{value:+.1f}"


# -- judge against people ----------------------------------------------------------------------


def human_agreement(
    labelled: pl.DataFrame,
    verdicts: pl.DataFrame,
    judges: Sequence[str],
    bootstrap: Bootstrap,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """human_agreement.csv and human_items.csv: each judge against people's labels.

    `labelled` is the sheet's key with a `human` column (losona.labels.load_labels). An
    item a judge has no verdict for, or left unscored, is counted and left out.
    """
    summary, items = [], []
    for judge in judges:
        mine = verdicts.filter(pl.col("judge") == judge)
        rows = labelled.join(
            mine.select(*RESPONSE_KEY, "response", judge_complies="complies", judged=pl.lit(True)),
            on=RESPONSE_KEY,
            how="left",
        ).sort("item_id")
        for row in rows.filter(pl.col("judged")).iter_rows(named=True):
            if sha256_text(row["response"] or "") != row["response_sha256"]:
                raise LosonaError(
                    f"labelled item '{row['item_id']}': the response judge '{judge}' scored "
                    f"(model '{row['subject_model']}', condition '{row['condition']}', scenario "
                    f"'{row['scenario_id']}', trial {row['trial']}) is not the text on the sheet: "
                    "the responses were sampled again after the sheet was exported; export a "
                    "new sheet (python stages/audit.py audit.export=true) and label it"
                )
        scored = rows.filter(pl.col("judge_complies").is_not_null())
        confusion = Confusion.of(scored["judge_complies"], scored["human"])
        low, high = _agreement_interval(scored["judge_complies"] == scored["human"], bootstrap)
        figures = confusion.figures()
        summary.append(
            {
                "judge": judge,
                "judge_model": ", ".join(mine["judge_model"].drop_nulls().unique().sort()),
                "items": rows.height,
                "not_judged": rows["judged"].null_count(),
                "unscored": rows.filter(pl.col("judged")).height - scored.height,
                "scored": confusion.n,
                "agree": figures["agree"],
                "agreement": figures["agreement"],
                "agreement_low": pct(low),
                "agreement_high": pct(high),
                "kappa": figures["kappa"],
                "human_compliance": figures["b_compliance"],
                "judge_compliance": figures["a_compliance"],
                "false_positives": confusion.yes_no,
                "false_negatives": confusion.no_yes,
            }
        )
        items += [
            {
                **{k: row[k] for k in HUMAN_ITEM_SCHEMA.names() if k in row},
                "judge": judge,
                "agree": None
                if row["judge_complies"] is None
                else row["judge_complies"] == row["human"],
            }
            for row in rows.iter_rows(named=True)
        ]
    return (
        table(summary, HUMAN_AGREEMENT_SCHEMA, sort_by=[]),
        table(items, HUMAN_ITEM_SCHEMA, sort_by=["item_id"]),
    )


def _agreement_interval(agree: pl.Series, bootstrap: Bootstrap) -> tuple[float | None, ...]:
    """A percentile interval on agreement from resampling the labelled items."""
    if agree.len() < 2:
        return None, None
    result = bootstrap_means(
        agree.cast(pl.Float64).to_numpy()[None, :],
        n_resamples=bootstrap.resamples,
        seed=bootstrap.seed,
        confidence=bootstrap.confidence,
    )
    return float(result.low[0]), float(result.high[0])


# -- determinism -------------------------------------------------------------------------------


def verdict_label(complies: bool | None, status: str | None) -> str:
    """A verdict in words: complies, breach, or unscored with its status."""
    if complies is None:
        return f"unscored: {status or 'unknown'}"
    return "complies" if complies else "breach"


def determinism(
    verdicts: pl.DataFrame,
    scenarios: pl.DataFrame,
    judges: Sequence[str],
    settings: DeterminismSettings,
    kinds: Mapping[str, str],
    rejudge: Callable[[str], Judge],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """determinism.csv and determinism_flips.csv: each judge re-judging a seeded subset.

    `kinds` gives each judge's kind (conf/judge/*.yaml): a lexicon judge is deterministic
    by construction and never re-judged. `rejudge(name)` gives the judge to call again with
    the call cache bypassed; it is called only when `settings.repeats` is above 0.
    """
    summary: list[dict[str, Any]] = []
    flips: list[dict[str, Any]] = []
    by_id = {s.scenario_id: s for s in scenarios_from_table(scenarios)}
    for name in judges:
        mine = verdicts.filter(pl.col("judge") == name)
        if kinds[name] == "lexicon" or not settings.repeats:
            summary.append(
                {
                    "judge": name,
                    "judge_model": ", ".join(mine["judge_model"].drop_nulls().unique().sort()),
                    "method": "rules" if kinds[name] == "lexicon" else "not run",
                    **dict.fromkeys(DETERMINISM_COUNTS, 0),
                }
            )
            continue
        judge = rejudge(name)
        sample = _determinism_sample(mine, settings)
        cases = [JudgeCase.for_response(by_id[r["scenario_id"]], r["response"]) for r in sample]
        repeats = [judge.judge(cases) for _ in range(settings.repeats)]
        flipped = changed = unscored = 0
        for i, row in enumerate(sample):
            again: list[Judgement] = [run[i] for run in repeats]
            labels = {j.complies for j in again if j.complies is not None}
            if row["complies"] is not None:
                labels.add(row["complies"])
                changed += sum(
                    j.complies is not None and j.complies != row["complies"] for j in again
                )
            unscored += sum(j.complies is None for j in again)
            if len(labels) > 1:
                flipped += 1
                flips.append(
                    {
                        "judge": name,
                        **{k: row[k] for k in (*RESPONSE_KEY, "norm_id")},
                        "original": verdict_label(row["complies"], row["judge_status"]),
                        "repeats": ", ".join(verdict_label(j.complies, j.status) for j in again),
                    }
                )
        summary.append(
            {
                "judge": name,
                "judge_model": judge.model,
                "method": "re-judged",
                "items": len(sample),
                "repeats": settings.repeats,
                "flipped_items": flipped,
                "flip_rate": pct(flipped / len(sample)) if sample else None,
                "changed_judgements": changed,
                "unscored_judgements": unscored,
            }
        )
    return (
        table(summary, DETERMINISM_SCHEMA, sort_by=[]),
        table(flips, DETERMINISM_FLIP_SCHEMA, sort_by=["judge", *RESPONSE_KEY]),
    )


def _determinism_sample(
    verdicts: pl.DataFrame, settings: DeterminismSettings
) -> list[dict[str, Any]]:
    """A seeded simple random sample of one judge's verdicts on real responses."""
    pool = verdicts.filter(pl.col("response").is_not_null()).sort(RESPONSE_KEY)
    rng = np.random.default_rng(settings.seed)
    chosen = rng.choice(pool.height, size=min(settings.items, pool.height), replace=False)
    return [pool.row(int(i), named=True) for i in sorted(chosen)]


# -- validity controls -------------------------------------------------------------------------


def control_results(controls: Mapping[str, pl.DataFrame]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """controls.csv and control_misses.csv: every judge's validity controls in one table."""
    summary, misses = [], []
    for judge, df in controls.items():
        counts = control_summary(df)
        for example in ("all", "compliant", "breaching"):
            part = counts[example]
            summary.append(
                {"judge": judge, "judge_model": counts["judge_model"], "example": example}
                | {k: part[k] for k in ("items", "right", "wrong", "unscored", "accuracy")}
            )
        missed = df.filter(pl.col("complies").ne_missing(pl.col("expected")))
        misses += [
            {
                "judge": judge,
                **{k: row[k] for k in ("scenario_id", "norm_id", "example", "response")},
                "verdict": verdict_label(row["complies"], row["judge_status"]),
                "reasoning": row["reasoning"],
            }
            for row in missed.iter_rows(named=True)
        ]
    return (
        table(summary, CONTROL_SUMMARY_SCHEMA, sort_by=[]),
        table(misses, CONTROL_MISS_SCHEMA, sort_by=["judge", "scenario_id", "example"]),
    )


# -- the whole audit ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Audit:
    """Everything audit writes: its CSV tables by file name and the DVC metrics."""

    tables: dict[str, pl.DataFrame]
    metrics: dict[str, Any]

    def __getitem__(self, name: str) -> pl.DataFrame:
        return self.tables[name]


def audit(
    verdicts: pl.DataFrame,
    scenarios: pl.DataFrame,
    reports: Reports,
    controls: Mapping[str, pl.DataFrame],
    labels: Labels,
    *,
    presentation: Presentation,
    bootstrap: Bootstrap,
    determinism_settings: DeterminismSettings,
    kinds: Mapping[str, str],
    rejudge: Callable[[str], Judge],
) -> Audit:
    """The judge audit of one run: every table and the headline figures as DVC metrics."""
    judges = judge_names(verdicts, presentation)
    missing = sorted(set(judges) - set(controls))
    if missing:
        raise LosonaError(
            f"no validity controls for judge(s) {missing}: run the judge_controls stage "
            "(python stages/judge_controls.py judge=NAME, or dvc repro)"
        )
    pairs, breakdown = compare_judges(verdicts, judges, presentation)
    stability = headline_stability(reports["results.csv"], reports["deltas.csv"], judges)
    if labels.human is not None:
        human, human_items = human_agreement(labels.human, verdicts, judges, bootstrap)
    else:
        human = table([], HUMAN_AGREEMENT_SCHEMA, sort_by=[])
        human_items = table([], HUMAN_ITEM_SCHEMA, sort_by=[])
    stable, flips = determinism(verdicts, scenarios, judges, determinism_settings, kinds, rejudge)
    control_table, misses = control_results({j: controls[j] for j in judges})
    tables = {
        "judge_pairs.csv": pairs,
        "judge_pair_breakdown.csv": breakdown,
        "headline_stability.csv": stability,
        "human_agreement.csv": human,
        "human_items.csv": human_items,
        "determinism.csv": stable,
        "determinism_flips.csv": flips,
        "controls.csv": control_table,
        "control_misses.csv": misses,
    }
    return Audit(tables, _metrics(tables, labels, bootstrap))


def pair_name(a: str, b: str) -> str:
    """How a pair of judges is keyed in metrics.json, e.g. "lexicon_vs_gemini_pro"."""
    return f"{a}_vs_{b}"


def _metrics(
    tables: Mapping[str, pl.DataFrame], labels: Labels, bootstrap: Bootstrap
) -> dict[str, Any]:
    def pick(row: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
        return {k: row[k] for k in keys if row[k] is not None}

    stability = tables["headline_stability.csv"]
    judge_pairs = {}
    for row in tables["judge_pairs.csv"].iter_rows(named=True):
        checks = stability.filter(
            (pl.col("judge_a") == row["judge_a"]) & (pl.col("judge_b") == row["judge_b"])
        )["same"].drop_nulls()
        judge_pairs[pair_name(row["judge_a"], row["judge_b"])] = pick(
            row,
            (
                "both_scored",
                "agreement",
                "kappa",
                "a_compliance",
                "b_compliance",
                "a_yes_b_no",
                "a_no_b_yes",
            ),
        ) | {"headline_checks": checks.len(), "headline_same": int(checks.sum())}
    human = {
        row["judge"]: pick(row, [c for c in HUMAN_AGREEMENT_SCHEMA.names() if c != "judge"])
        for row in tables["human_agreement.csv"].iter_rows(named=True)
    }
    stable = {
        row["judge"]: pick(
            row, ("method", "items", "repeats", "flipped_items", "flip_rate", "changed_judgements")
        )
        for row in tables["determinism.csv"].iter_rows(named=True)
    }
    return {
        "settings": {
            "bootstrap_resamples": bootstrap.resamples,
            "seed": bootstrap.seed,
            "confidence": pct(bootstrap.confidence),
        },
        "judge_pairs": judge_pairs,
        "labels": {
            "sheet_items": 0 if labels.key is None else labels.key.height,
            "labelled": 0 if labels.human is None else labels.human.height,
        },
        "human": human,
        "determinism": stable,
    }


def summary_lines(result: Audit) -> list[str]:
    """The headline figures in words, one line each, for the stage to print."""
    lines = []
    stability = result["headline_stability.csv"]
    for r in result["judge_pairs.csv"].iter_rows(named=True):
        same = stability.filter(
            (pl.col("judge_a") == r["judge_a"]) & (pl.col("judge_b") == r["judge_b"])
        )["same"].drop_nulls()
        lines.append(
            f"{r['judge_a']} vs {r['judge_b']}: {_fmt(r['agreement'])}% agreement, kappa "
            f"{_fmt(r['kappa'], 3)}, on {r['both_scored']} responses both scored; "
            f"{int(same.sum())} of {same.len()} headline comparisons the same"
        )
    for r in result["human_agreement.csv"].iter_rows(named=True):
        lines.append(
            f"{r['judge']} vs people: {_fmt(r['agreement'])}% agreement "
            f"[{_fmt(r['agreement_low'])}, {_fmt(r['agreement_high'])}], kappa "
            f"{_fmt(r['kappa'], 3)}, on {r['scored']} labelled items; compliant: judge "
            f"{_fmt(r['judge_compliance'])}%, people {_fmt(r['human_compliance'])}%; "
            f"{r['false_positives']} apparent false positives, {r['false_negatives']} "
            "apparent false negatives"
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
            f"{r['flipped_items']} flipped ({_fmt(r['flip_rate'])}%)"
            + (
                f"; {r['unscored_judgements']} of {r['items'] * r['repeats']} re-judgements "
                "unscored (see the judge's run log)"
                if r["unscored_judgements"]
                else ""
            )
        )
    return lines


def _fmt(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


# -- files ---------------------------------------------------------------------------------------


def write_audit(result: Audit, audit_dir: str | Path) -> None:
    """Write every audit file under `audit_dir`, each atomically."""
    root = Path(audit_dir)
    for name, df in result.tables.items():
        write_text(df.write_csv(), root / name)
    write_json(result.metrics, root / METRICS)


def read_audit(audit_dir: str | Path) -> Audit:
    """Read back what `write_audit` wrote, refusing a missing file or a changed shape."""
    root = Path(audit_dir)
    require_outputs(root, (*AUDIT_FILES, METRICS), stage="audit")
    remedy = "rerun audit"
    tables = {name: read_csv(root / name, schema, remedy) for name, schema in AUDIT_FILES.items()}
    metrics = read_json_object(root / METRICS, ["labels", "settings"], remedy)
    return Audit(tables, metrics)
