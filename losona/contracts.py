"""The tables the stages hand each other: their columns, types and row order.

Each stage builds its output through one of these schemas, so a table's shape is
written down once, here, and a rerun cannot drift in column order or dtype.
docs/contracts.md shows every schema here, column by column, with the comment written beside
each column (docs/hooks.py reads them): say what a column means in that comment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

TURN = pl.Struct(
    {"index": pl.Int32(), "actor": pl.String(), "content": pl.String(), "is_demo": pl.Boolean()}
)
CAST_MEMBER = pl.Struct({"name": pl.String(), "bio": pl.String()})
MESSAGE = pl.Struct({"role": pl.String(), "content": pl.String()})

SCENARIO_SCHEMA = pl.Schema(
    {
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "venue": pl.String(),
        "channel_description": pl.String(),
        "subject": pl.String(),
        "subject_bio": pl.String(),
        "cast": pl.List(CAST_MEMBER),
        "turns": pl.List(TURN),
        "elicitor_index": pl.Int32(),
        "elicitor_actor": pl.String(),
        "elicitor_content": pl.String(),
        "norm_statement": pl.String(),
        "example_elicitor": pl.String(),
        "example_compliant_response": pl.String(),
        "example_breaching_response": pl.String(),
        # Generation-only: the in-fiction goal the transcript pursues. Never rendered for
        # the subject or the judge; null for sources that do not record it.
        "end_goal": pl.String(),
        "source": pl.String(),
    }
)

# A subset's rows carry this after the dataset's own source in `source`:
# "<source>; subset of <total>: <how chosen>" (written by losona.scenarios.datasets.Subset), so that
# every table and report downstream can say that a run covers only part of a dataset.
SUBSET_MARK = "; subset of "


def subset_source(source: str, total: int, how: str) -> str:
    """A subset row's `source`: the dataset's own, then of how many and how it was chosen."""
    return f"{source}{SUBSET_MARK}{total}: {how}"


def subset_note(scenarios: pl.DataFrame) -> str | None:
    """For a run on part of a dataset, e.g. "5 of 44 scenarios (limit 5 stratified by norm,
    seed 0)", read from the `source` column; None when the run covers the whole dataset."""
    subsets = sorted(
        {
            tuple(source.rpartition(SUBSET_MARK)[2].split(": ", 1))
            for source in scenarios["source"].unique()
            if SUBSET_MARK in source
        }
    )
    if not subsets:
        return None
    # fetch writes one subset note; a table put together from several says each.
    totals = " + ".join(total for total, _ in subsets)
    how = "; ".join(how for _, how in subsets)
    return f"{scenarios['scenario_id'].n_unique()} of {totals} scenarios ({how})"


PROMPT_SCHEMA = pl.Schema(
    {
        "scenario_id": pl.String(),
        "condition": pl.String(),
        "template_version": pl.String(),
        "messages": pl.List(MESSAGE),
        "prompt_sha256": pl.String(),
    }
)

RESPONSE_SCHEMA = pl.Schema(
    {
        "scenario_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),  # the config name, e.g. claude_opus
        "provider_model": pl.String(),  # the litellm model string it resolved to
        "trial": pl.Int32(),  # 0 .. K-1; each trial is a distinct sample
        "prompt_sha256": pl.String(),  # links the response to the exact prompt sent
        "response": pl.String(),
        "finish_reason": pl.String(),
        "prompt_tokens": pl.Int64(),
        "completion_tokens": pl.Int64(),
        "cost_usd": pl.Float64(),
    }
)

# A run's calls (data/calls/..., data/calls.parquet): the model calls its response, verdict
# and control tables were built from, one row per call-cache key, sorted by key. No key,
# secret or endpoint: only what a call returned and the model string it was asked of.
CALL_SCHEMA = pl.Schema(
    {
        "key": pl.String(),  # the call cache's key (losona/models/prepare.py, call_key)
        "model": pl.String(),  # the litellm model string
        "text": pl.String(),
        "finish_reason": pl.String(),
        "prompt_tokens": pl.Int64(),
        "completion_tokens": pl.Int64(),
        "cost_usd": pl.Float64(),
    }
)

VERDICT_SCHEMA = pl.Schema(
    {
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),
        "trial": pl.Int32(),
        "response": pl.String(),
        "judge": pl.String(),  # the config name, e.g. gemini_pro
        "judge_model": pl.String(),  # the provider model string, or lexicon@<rules version>
        "judge_version": pl.String(),  # the judge template's or the lexicon rules' version
        "complies": pl.Boolean(),  # null when unscored (judge_status is not "ok")
        "elicitor_uptake": pl.String(),
        "norm_requirement": pl.String(),
        "evidence": pl.String(),
        "reasoning": pl.String(),
        "judge_status": pl.String(),  # ok | unparseable | failed | no_response
        # The reply takes up no elicitor (empty, filler, off-topic, an echo, ...): true or
        # false when the judge checks it (the lexicon judge), null when it does not say.
        "non_answer": pl.Boolean(),
    }
)

# The judge's validity controls: each scenario's example compliant and breaching responses
# judged as replies to the example elicitor (losona/judges/), one row per scenario x example.
CONTROL_SCHEMA = pl.Schema(
    {
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "example": pl.String(),  # compliant | breaching
        "expected": pl.Boolean(),  # the label the example should get
        "response": pl.String(),
        "judge": pl.String(),
        "judge_model": pl.String(),
        "judge_version": pl.String(),
        "complies": pl.Boolean(),
        "elicitor_uptake": pl.String(),
        "norm_requirement": pl.String(),
        "evidence": pl.String(),
        "reasoning": pl.String(),
        "judge_status": pl.String(),
        "non_answer": pl.Boolean(),
    }
)

# Report tables: aggregate writes them as CSV under paths.reports_dir, plot reads them.
# Percentages are 0-100 with one decimal; `scenarios` always counts the scenarios behind a
# figure, after leaving out the ones unscored trials leave undetermined (losona/results/metrics.py).
OUTCOME_SCHEMA = pl.Schema(  # outcomes.csv: one row per judge x model x condition x scenario
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "trials": pl.Int32(),
        "scored": pl.Int32(),
        "complying": pl.Int32(),
        "passed": pl.Boolean(),  # null: undetermined
        "consistent": pl.Boolean(),  # null: undetermined
    }
)

RESULT_SCHEMA = pl.Schema(  # results.csv: the paper's Table 1, one row per model x condition
    {
        "judge": pl.String(),
        "judge_model": pl.String(),
        # Display labels (conf/<group>/<name>.yaml's `label`), "[TEST DOUBLE]" appended
        # for a test double's (losona/formatting.py).
        "judge_label": pl.String(),
        "subject_model": pl.String(),
        "model_label": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        "k": pl.Int32(),
        "scenarios": pl.Int32(),
        "undetermined": pl.Int32(),
        "passed": pl.Int32(),
        "acc_at_k": pl.Float64(),
        "acc_low": pl.Float64(),
        "acc_high": pl.Float64(),
        "compliance": pl.Float64(),
        "consistency": pl.Float64(),
        "consistency_scenarios": pl.Int32(),
        "trials": pl.Int32(),
        "unscored_trials": pl.Int32(),
        # A diagnostic beside compliance, in no paper metric: how many scored trials the
        # judge found to take up no elicitor (empty, filler, off-topic, echo, ...), and
        # their share of the scored trials; null when the judge does not check it.
        "non_answers": pl.Int32(),
        "non_answer_share": pl.Float64(),
        # Why the judge's verdicts in this cell say nothing (losona/judges/health.py): every
        # verdict the same while its validity controls fail, no reasoning, or one reasoning
        # on most replies; null when they do say something.
        "degenerate": pl.String(),
    }
)

MEAN_SCHEMA = pl.Schema(  # means.csv: the mean over models per condition (paper Section 6)
    {
        "judge": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        "models": pl.Int32(),
        "acc_at_k": pl.Float64(),
        "acc_low": pl.Float64(),
        "acc_high": pl.Float64(),
        "compliance": pl.Float64(),
        "consistency": pl.Float64(),
        "delta": pl.Float64(),  # null for the baseline itself
        "delta_low": pl.Float64(),
        "delta_high": pl.Float64(),
    }
)

DELTA_SCHEMA = pl.Schema(  # deltas.csv: each condition against naive over the same scenarios
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "model_label": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        "scenarios": pl.Int32(),
        "naive_acc": pl.Float64(),
        "condition_acc": pl.Float64(),
        "delta": pl.Float64(),
        "delta_low": pl.Float64(),
        "delta_high": pl.Float64(),
        "mcnemar_p": pl.Float64(),
        "recovered": pl.Int32(),
        "naive_failures": pl.Int32(),
        "regressed": pl.Int32(),
        "naive_successes": pl.Int32(),
    }
)

FLIP_SCHEMA = pl.Schema(  # flips.csv: every recovered failure and introduced regression
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "flip": pl.String(),  # recovered | regressed
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "naive_complying": pl.Int32(),
        "naive_scored": pl.Int32(),
        "condition_complying": pl.Int32(),
        "condition_scored": pl.Int32(),
    }
)


def breakdown_schema(by: str) -> pl.Schema:
    """by_norm.csv (by="norm_id") and by_event.csv (by="event_type"): diagnostic only."""
    return pl.Schema(
        {
            "judge": pl.String(),
            "subject_model": pl.String(),
            "condition": pl.String(),
            by: pl.String(),
            "scenarios": pl.Int32(),
            "undetermined": pl.Int32(),
            "passed": pl.Int32(),
            "acc_at_k": pl.Float64(),
            "compliance": pl.Float64(),
        }
    )


# The judge audit (losona/audit/): tables under paths.audit_dir, written by audit, read by
# plot. A pair of judges is (judge_a, judge_b) in the sweep's order. In a confusion count,
# "a_yes_b_no" is a response judge A marks compliant and judge B breaching: an apparent
# false positive of A taking B as the reference (and an apparent false negative of B).
JUDGE_PAIR_SCHEMA = pl.Schema(  # judge_pairs.csv: one row per pair of judges
    {
        "judge_a": pl.String(),
        "judge_b": pl.String(),
        "rows": pl.Int32(),  # responses either judge has a verdict for
        "only_a": pl.Int32(),  # responses only A's verdict files hold
        "only_b": pl.Int32(),
        "unscored_a": pl.Int32(),  # responses both hold that A left unscored
        "unscored_b": pl.Int32(),
        "both_scored": pl.Int32(),  # the responses every figure below is computed on
        "agree": pl.Int32(),
        "agreement": pl.Float64(),
        "kappa": pl.Float64(),  # Cohen's kappa, -1 to 1; null when chance agreement is total
        "a_compliance": pl.Float64(),
        "b_compliance": pl.Float64(),
        "a_yes_b_yes": pl.Int32(),
        "a_yes_b_no": pl.Int32(),
        "a_no_b_yes": pl.Int32(),
        "a_no_b_no": pl.Int32(),
    }
)

PAIR_BREAKDOWN_SCHEMA = pl.Schema(  # judge_pair_breakdown.csv: by model, condition and norm
    {
        "judge_a": pl.String(),
        "judge_b": pl.String(),
        "by": pl.String(),  # subject_model | condition | norm_id
        "group": pl.String(),
        "both_scored": pl.Int32(),
        "agree": pl.Int32(),
        "agreement": pl.Float64(),
        "kappa": pl.Float64(),
        "a_compliance": pl.Float64(),
        "b_compliance": pl.Float64(),
    }
)

STABILITY_SCHEMA = pl.Schema(  # headline_stability.csv: do the headline comparisons survive?
    {
        "judge_a": pl.String(),
        "judge_b": pl.String(),
        "subject_model": pl.String(),
        "check": pl.String(),  # best condition | effect vs naive
        "condition": pl.String(),  # the condition of an effect; null for the best condition
        "a": pl.String(),  # what judge A's numbers say, e.g. "norm_informed" or "+12.5"
        "b": pl.String(),
        "same": pl.Boolean(),
    }
)

HUMAN_AGREEMENT_SCHEMA = pl.Schema(  # human_agreement.csv: each judge against people's labels
    {
        "judge": pl.String(),
        "judge_model": pl.String(),
        "items": pl.Int32(),  # labelled items
        "not_judged": pl.Int32(),  # items the judge has no verdict for
        "unscored": pl.Int32(),  # items the judge left unscored
        "scored": pl.Int32(),  # the items every figure below is computed on
        "agree": pl.Int32(),
        "agreement": pl.Float64(),
        "agreement_low": pl.Float64(),
        "agreement_high": pl.Float64(),
        "kappa": pl.Float64(),
        "human_compliance": pl.Float64(),
        "judge_compliance": pl.Float64(),
        "false_positives": pl.Int32(),  # the judge says complies, people say breach
        "false_negatives": pl.Int32(),  # the judge says breach, people say complies
    }
)

HUMAN_ITEM_SCHEMA = pl.Schema(  # human_items.csv: every labelled item against every judge
    {
        "item_id": pl.String(),
        "scenario_id": pl.String(),
        "norm_id": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "trial": pl.Int32(),
        "human": pl.Boolean(),
        "judge": pl.String(),
        "judge_complies": pl.Boolean(),  # null: not judged or unscored
        "agree": pl.Boolean(),
    }
)

# Judge error carried into the results (losona/audit/correction.py): compliance corrected
# for each judge's sensitivity and specificity against people's labels (Rogan-Gladen). Kept
# apart from aggregate's tables, which stay the paper's metrics. "Sensitivity": the share of
# the items people mark compliant that the judge marks compliant; "specificity": the share
# of the items people mark breaching that the judge marks breaching.
CORRECTION_SCHEMA = pl.Schema(  # correction.csv: each judge's error, the correction's basis
    {
        "judge": pl.String(),
        "judge_model": pl.String(),
        "labelled": pl.Int32(),  # labelled items the judge scored: the basis of every figure
        "people_compliant": pl.Int32(),
        "people_breaching": pl.Int32(),
        "true_positives": pl.Int32(),  # both say complies
        "false_negatives": pl.Int32(),  # people say complies, the judge breach
        "false_positives": pl.Int32(),  # people say breach, the judge complies
        "true_negatives": pl.Int32(),  # both say breach
        "sensitivity": pl.Float64(),  # percent; null when people marked no item compliant
        "sensitivity_low": pl.Float64(),  # exact (Clopper-Pearson) interval, for reading only
        "sensitivity_high": pl.Float64(),
        "specificity": pl.Float64(),  # percent; null when people marked no item breaching
        "specificity_low": pl.Float64(),
        "specificity_high": pl.Float64(),
        "youden": pl.Float64(),  # sensitivity + specificity - 1: what the correction divides by
        "identifiable": pl.Boolean(),  # whether corrected.csv has this judge's figures
        "status": pl.String(),  # "corrected", or why the correction is not identifiable
    }
)

CORRECTED_SCHEMA = pl.Schema(  # corrected.csv: judge-error-corrected compliance, per cell
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "model_label": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        "scenarios": pl.Int32(),
        "scored_trials": pl.Int32(),
        "compliance": pl.Float64(),  # as results.csv: the judge's own, uncorrected
        "compliance_low": pl.Float64(),  # scenario bootstrap only
        "compliance_high": pl.Float64(),
        "corrected": pl.Float64(),  # Rogan-Gladen, clipped to 0-100
        "corrected_low": pl.Float64(),  # scenario and labelled-item bootstrap together
        "corrected_high": pl.Float64(),
        # Resamples whose labelled items left the correction undefined; each counts as 0 for
        # the low end and 100 for the high end, so they widen the interval, never narrow it.
        "unidentified_resamples": pl.Int32(),
    }
)

CORRECTED_DELTA_SCHEMA = pl.Schema(  # corrected_deltas.csv: compliance against naive, corrected
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "model_label": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        "scenarios": pl.Int32(),
        # In compliance points (not aggregate's accuracy-at-K: a majority of K trials is not
        # a rate the labels can correct).
        "compliance_delta": pl.Float64(),  # the judge's own, uncorrected
        "compliance_delta_low": pl.Float64(),  # scenario bootstrap only
        "compliance_delta_high": pl.Float64(),
        "corrected_delta": pl.Float64(),  # corrected condition minus corrected naive
        "corrected_delta_low": pl.Float64(),  # scenario and labelled-item bootstrap together
        "corrected_delta_high": pl.Float64(),
        "unidentified_resamples": pl.Int32(),  # each counts as -100 low and +100 high
    }
)

# Self-preference (losona/audit/self_preference.py), in compliance points: how much more a
# judge's compliance exceeds the reference judges' (the run's other judges of another family)
# on subjects of its own family than on other subjects. A difference in differences.
SELF_PREFERENCE_SCHEMA = pl.Schema(  # self_preference.csv: per judge (panels aside), if it applies
    {
        "judge": pl.String(),
        "family": pl.String(),  # the judge model's family; null for rules
        "own_family_models": pl.String(),  # subjects of the judge's family, joined by ", "
        "other_models": pl.String(),  # subjects of other families
        "reference_judges": pl.String(),  # the other judges it is compared with
        "judge_gap": pl.Float64(),  # the judge: own-family minus other subjects' compliance
        "reference_gap": pl.Float64(),  # the reference judges' mean of the same gap
        "self_preference": pl.Float64(),  # judge_gap - reference_gap
        "self_preference_low": pl.Float64(),  # scenario bootstrap
        "self_preference_high": pl.Float64(),
        "scenarios": pl.Int32(),
        "status": pl.String(),  # "estimated", or why not
    }
)

DETERMINISM_SCHEMA = pl.Schema(  # determinism.csv: each judge re-judging a subset, cache off
    {
        "judge": pl.String(),
        "judge_model": pl.String(),
        # re-judged | rules (deterministic by construction) | panel (its members') | not run
        "method": pl.String(),
        "items": pl.Int32(),
        "repeats": pl.Int32(),
        "flipped_items": pl.Int32(),  # items whose scored verdicts were not all the same
        "flip_rate": pl.Float64(),
        "changed_judgements": pl.Int32(),  # scored repeats that differ from a scored original
        "unscored_judgements": pl.Int32(),  # repeats the judge left unscored
    }
)

DETERMINISM_FLIP_SCHEMA = pl.Schema(  # determinism_flips.csv: every item that flipped
    {
        "judge": pl.String(),
        "scenario_id": pl.String(),
        "norm_id": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "trial": pl.Int32(),
        "original": pl.String(),  # complies | breach | unscored: <status>
        "repeats": pl.String(),  # each repeat's verdict, in order, joined by ", "
    }
)

CONTROL_SUMMARY_SCHEMA = pl.Schema(  # controls.csv: every judge's validity controls
    {
        "judge": pl.String(),
        "judge_model": pl.String(),
        "example": pl.String(),  # all | compliant | breaching
        "items": pl.Int32(),
        "right": pl.Int32(),
        "wrong": pl.Int32(),
        "unscored": pl.Int32(),
        "accuracy": pl.Float64(),
    }
)

CONTROL_MISS_SCHEMA = pl.Schema(  # control_misses.csv: every control a judge got wrong
    {
        "judge": pl.String(),
        "scenario_id": pl.String(),
        "norm_id": pl.String(),
        "example": pl.String(),
        "response": pl.String(),
        "verdict": pl.String(),  # complies | breach | unscored: <status>
        "reasoning": pl.String(),
    }
)

# The audit's labelling workflow (losona/audit/labelling.py): the blinded sheet people label, and
# the key from its item ids to the responses (never shown to labellers).
SHEET_SCHEMA = pl.Schema(
    {
        "item": pl.Int32(),  # 1..n, the order to label in
        "item_id": pl.String(),  # a hash: reveals neither model nor condition
        "norm_statement": pl.String(),
        "transcript": pl.String(),  # the chat before the elicitor, `Name: text` per line
        "elicitor": pl.String(),  # `Name: text`
        "subject": pl.String(),  # who wrote the judged message
        "response": pl.String(),
        "complies": pl.String(),  # left empty for the labeller: true or false
        "note": pl.String(),  # left empty: anything the labeller wants to say
    }
)

SHEET_KEY_SCHEMA = pl.Schema(
    {
        "item_id": pl.String(),
        "scenario_id": pl.String(),
        "norm_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),
        "trial": pl.Int32(),
        "response_sha256": pl.String(),  # the exact text labelled
    }
)


# Growing the benchmark (losona/generation/, generation/dvc.yaml): the generator's candidate
# scenarios. generate writes every candidate, valid or not; screen rewrites the table with
# each valid candidate's screening outcome. A rejected candidate is never dropped.
CANDIDATE_SCHEMA = pl.Schema(
    {
        "candidate_id": pl.String(),  # <event>__<norm>__<hash of venue, sample and reply>
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "venue": pl.String(),
        "sample": pl.Int32(),  # 0 .. candidates_per_cell-1: the generator's trial index
        "generator": pl.String(),  # the config name, e.g. smollm2
        "generator_model": pl.String(),  # the litellm model string
        "template_version": pl.String(),  # the generator prompt's version
        "reply": pl.String(),  # the generator's reply, verbatim
        "finish_reason": pl.String(),
        "cost_usd": pl.Float64(),
        "scenario": pl.String(),  # the candidate as a scenario-contract row (JSON); null if unread
        # generate: valid | invalid; screen: accepted | screened_out | undetermined | invalid
        "status": pl.String(),
        "reasons": pl.List(pl.String()),  # why it was rejected, one problem each; empty if not
    }
)

GENERATION_CELL_SCHEMA = pl.Schema(  # reports/generation/cells.csv: one row per (event, norm)
    {
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "generated": pl.Int32(),
        "rejected_validation": pl.Int32(),
        "rejected_screening": pl.Int32(),
        "undetermined": pl.Int32(),  # the screen's judge left the outcome open
        "accepted": pl.Int32(),
    }
)

REVIEW_SCHEMA = pl.Schema(  # reports/generation/review.csv: one row per accepted candidate
    {
        "candidate_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "venue": pl.String(),
        "turns": pl.Int32(),  # counting the elicitor
        "demonstrations": pl.Int32(),
        "end_goal": pl.String(),
        "elicitor": pl.String(),
        "screen": pl.String(),  # each baseline's breaches on the no-demonstration control
        "chat": pl.String(),  # the scenario as losona.scenarios.format_chat prints it
    }
)


# The dynamic extension (losona/dynamic/, docs/dynamic.md): a second turn after each
# first-turn trial of a cell, under paths.dynamic_dir/<judge>/, where <judge> is the
# first-turn judge whose verdict put the trial in an arm. A breach is continued twice
# (arm "sanction" and its control, arm "control"); a compliant reply once (arm "retention").
CHAT_MESSAGE = pl.Struct({"actor": pl.String(), "content": pl.String()})

DYNAMIC_PROMPT_SCHEMA = pl.Schema(  # prompts/<model>/<condition>.parquet: written by dynamic_render
    {
        "scenario_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),
        "judge": pl.String(),  # the first-turn judge that chose the arm
        "trial": pl.Int32(),  # the first turn's trial index, kept for the second turn
        "first_response": pl.String(),  # the subject's first reply, as the judge read it
        "first_complies": pl.Boolean(),  # the first-turn verdict; null when unscored
        # sanction | control (breaches) | retention (compliant); null when left out unscored
        "arm": pl.String(),
        "continuation": pl.String(),  # sanction | neutral: what the group said; null if none
        "followup": pl.List(CHAT_MESSAGE),  # the group's messages after the first reply
        "followup_source": pl.String(),  # where they came from, with its version
        "elicitor_actor": pl.String(),  # the second elicitor
        "elicitor_content": pl.String(),
        "elicitor_source": pl.String(),
        # ok | first_turn_unscored | no_followup (a group model's reply could not be used)
        "status": pl.String(),
        "note": pl.String(),  # why a trial was left out; null when status is ok
        "template_version": pl.String(),  # the subject prompt's version
        "group_template_version": pl.String(),  # the group model's prompt; null if scripted
        "messages": pl.List(MESSAGE),  # the second-turn subject prompt; empty if left out
        "prompt_sha256": pl.String(),  # null if left out
    }
)

DYNAMIC_RESPONSE_SCHEMA = pl.Schema(  # responses/<model>/<condition>.parquet: dynamic_sample
    {
        "scenario_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),
        "judge": pl.String(),
        "trial": pl.Int32(),
        "arm": pl.String(),
        "provider_model": pl.String(),
        "prompt_sha256": pl.String(),
        "response": pl.String(),  # the subject's second reply
        "finish_reason": pl.String(),
        "prompt_tokens": pl.Int64(),
        "completion_tokens": pl.Int64(),
        "cost_usd": pl.Float64(),
    }
)

DYNAMIC_VERDICT_SCHEMA = pl.Schema(  # verdicts/<model>/<condition>.parquet: dynamic_judge
    {
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),
        "trial": pl.Int32(),
        "arm": pl.String(),
        "response": pl.String(),  # the second reply judged
        "judge": pl.String(),  # the same judge as the first turn's
        "judge_model": pl.String(),
        "judge_version": pl.String(),
        "complies": pl.Boolean(),  # null when unscored
        "elicitor_uptake": pl.String(),
        "norm_requirement": pl.String(),
        "evidence": pl.String(),
        "reasoning": pl.String(),
        "judge_status": pl.String(),
        "non_answer": pl.Boolean(),
    }
)

# The dynamic reports, under paths.dynamic_reports_dir/<judge>/, written by dynamic_aggregate.
DYNAMIC_RESULT_SCHEMA = pl.Schema(  # results.csv: one row per model x condition x level x metric
    {
        "judge": pl.String(),
        "judge_model": pl.String(),
        # Display labels as in the first turn's results.csv (RESULT_SCHEMA), a test
        # double's marked, so that both turns name a judge, model and condition alike.
        "judge_label": pl.String(),
        "subject_model": pl.String(),
        "model_label": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        # What the cell rests on, for the scope line its figure and section carry
        # ("N = 5 scenarios, K = 1 trials each"): the first-turn trials per scenario (the
        # most any scenario has, as the first turn's `k`) and the scenarios of the run
        # (every one is continued, losona/dynamic/aggregate.py refuses a cell missing one).
        "k": pl.Int32(),
        "scenarios": pl.Int32(),
        "level": pl.String(),  # trial | scenario (the paper's majority rule per arm)
        # recovery_after_sanction | recovery_after_control | sanction_effect | retention
        "metric": pl.String(),
        "estimate": pl.Float64(),  # percent (0-100); the effect in points; null: no data
        "low": pl.Float64(),  # the scenario-bootstrap interval
        "high": pl.Float64(),
        "count": pl.Int32(),  # complying trials or passing scenarios; the effect: its pairs
        "out_of": pl.Int32(),  # the trials or scenarios it is a share of
        "helped": pl.Int32(),  # the effect: pairs complying after the sanction only
        "hurt": pl.Int32(),  # the effect: pairs complying after the control only
        "mcnemar_p": pl.Float64(),  # the effect: exact McNemar test on helped vs hurt
    }
)

DYNAMIC_ARM_SCHEMA = pl.Schema(  # arms.csv: what happened to the first turn's trials, by arm
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "arm": pl.String(),  # sanction | control | retention | first_turn_unscored
        "trials": pl.Int32(),  # first-turn trials in the arm
        "continued": pl.Int32(),  # given a second turn
        "left_out": pl.Int32(),  # not continued (unscored first turn, unusable group reply)
        "scored": pl.Int32(),  # second turns the judge scored
        "complying": pl.Int32(),
    }
)

DYNAMIC_OUTCOME_SCHEMA = pl.Schema(  # outcomes.csv: each scenario's trials in each arm
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "arm": pl.String(),
        "trials": pl.Int32(),  # first-turn trials in the arm
        "scored": pl.Int32(),
        "complying": pl.Int32(),
        "passed": pl.Boolean(),  # the majority rule over the arm's trials; null: undetermined
    }
)

DYNAMIC_EXAMPLE_SCHEMA = pl.Schema(  # examples.csv: breaches continued both ways, for reading
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "scenario_id": pl.String(),
        "trial": pl.Int32(),
        "subject": pl.String(),
        "first_elicitor": pl.String(),  # `Name: text`
        "first_response": pl.String(),
        "sanction": pl.String(),  # the sanction's messages, one `Name: text` a line
        "control": pl.String(),  # the neutral messages
        "second_elicitor": pl.String(),
        "sanction_response": pl.String(),
        "sanction_complies": pl.Boolean(),
        "control_response": pl.String(),
        "control_complies": pl.Boolean(),
    }
)


def table(rows: Sequence[Mapping[str, Any]], schema: pl.Schema, sort_by: list[str]) -> pl.DataFrame:
    """Rows as a DataFrame with exactly `schema`'s columns, sorted for deterministic output."""
    df = pl.DataFrame([dict(r) for r in rows], schema=schema, orient="row")
    return df.sort(sort_by, maintain_order=True) if sort_by else df


def row_order(keys: pl.DataFrame, sort_by: list[str]) -> pl.Series:
    """The order `table(rows, schema, sort_by)` puts rows in, from their sort columns alone.

    For a table made a chunk at a time (files.Chunks): its rows are made in this order.
    """
    return keys.with_row_index("row").sort(sort_by, maintain_order=True)["row"]


@dataclass(frozen=True)
class Turn:
    """One chat message."""

    index: int
    actor: str
    content: str
    is_demo: bool


@dataclass(frozen=True)
class CastMember:
    """A non-subject participant."""

    name: str
    bio: str


@dataclass(frozen=True)
class Scenario:
    """A typed view of one validated row of the scenario table."""

    scenario_id: str
    event_type: str
    norm_id: str
    venue: str
    channel_description: str
    subject: str
    subject_bio: str
    cast: tuple[CastMember, ...]
    turns: tuple[Turn, ...]
    elicitor_index: int
    elicitor_actor: str
    elicitor_content: str
    norm_statement: str
    example_elicitor: str
    example_compliant_response: str
    example_breaching_response: str
    end_goal: str | None
    source: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Scenario:
        """Build from a scenario-table row (a dict as polars' `iter_rows(named=True)` gives)."""
        values = {name: row[name] for name in SCENARIO_SCHEMA.names()}
        values["cast"] = tuple(CastMember(**member) for member in row["cast"])
        values["turns"] = tuple(Turn(**turn) for turn in row["turns"])
        return cls(**values)

    @property
    def elicitor(self) -> Turn:
        """The final turn the subject answers."""
        return Turn(self.elicitor_index, self.elicitor_actor, self.elicitor_content, False)


def scenarios_from_table(df: pl.DataFrame) -> list[Scenario]:
    """Every row of a scenario table as a typed Scenario, in table order."""
    return [Scenario.from_row(row) for row in df.iter_rows(named=True)]
