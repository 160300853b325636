"""The judge audit's tables (audit writes them, plot reads them) and the labelling sheet's."""

from __future__ import annotations

import polars as pl

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
