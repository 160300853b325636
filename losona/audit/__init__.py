"""audit: how far a run's verdicts can be trusted (paper Section 7), checked on every run.

- Judge against judge: for every pair of judges that scored the same responses, their
  agreement, Cohen's kappa, the confusion table, each one's compliance rate, agreement by
  subject model, condition and norm, and whether the headline comparisons (each model's
  best condition, the sign of each paired effect against naive) come out the same.
- Judge against people: each judge against the labels people gave a blinded sample of
  responses (losona/audit/labelling.py): agreement with a bootstrap interval, both compliance
  rates, apparent false positives and false negatives, kappa.
- Determinism: a seeded subset re-judged N times with the call cache bypassed, and how
  often a verdict flips. Opt-in, since it pays for the judge's calls again.
- Validity controls: every judge's control results (the judge_controls stage) in one table.
- Judge error carried into the results: compliance and its effects against naive corrected
  for each judge's sensitivity and specificity against people's labels (`correction`), and
  each judge's self-preference for its own model family (`self_preference`), both shown
  apart from aggregate's figures, which stay the paper's.

"Complies" is the positive label throughout. Taking B as the reference, A's apparent false
positives are the responses A marks compliant and B breaching; its apparent false
negatives the reverse. Unscored verdicts are counted and left out, never read as a label.

One module a job: `inputs` (what it reads of a run), `labelling` (the blinded sheet for
people and the labels they return), `agreement` (two raters on the same items), `comparison`
(judge against judge), `human` (judge against people), `rejudging` (determinism),
`controls`, `run` (the whole audit and its metrics), `summary` (the headlines in words),
`files` (what it writes and reads back), `correction` and `self_preference` (judge error),
`resampling` (their bootstraps).
"""

from losona.audit.agreement import RESPONSE_KEY, Confusion
from losona.audit.comparison import (
    BEST_CONDITION,
    BREAKDOWNS,
    EFFECT,
    compare_judges,
    headline_stability,
    judge_names,
    paired_verdicts,
)
from losona.audit.controls import control_results
from losona.audit.correction import corrected_compliance, rogan_gladen
from losona.audit.files import AUDIT, AUDIT_FILES, read_audit
from losona.audit.human import human_agreement
from losona.audit.inputs import AuditInputs, audit_inputs
from losona.audit.rejudging import DETERMINISM_COUNTS, determinism, verdict_label
from losona.audit.run import audit, pair_name
from losona.audit.self_preference import Families, self_preference
from losona.audit.summary import summary_lines
from losona.config import AuditSettings, DeterminismSettings, SheetSettings

__all__ = [
    "AUDIT",
    "AUDIT_FILES",
    "BEST_CONDITION",
    "BREAKDOWNS",
    "DETERMINISM_COUNTS",
    "EFFECT",
    "RESPONSE_KEY",
    "AuditInputs",
    "AuditSettings",
    "Confusion",
    "DeterminismSettings",
    "Families",
    "SheetSettings",
    "audit",
    "audit_inputs",
    "compare_judges",
    "control_results",
    "corrected_compliance",
    "determinism",
    "headline_stability",
    "human_agreement",
    "judge_names",
    "pair_name",
    "paired_verdicts",
    "read_audit",
    "rogan_gladen",
    "self_preference",
    "summary_lines",
    "verdict_label",
]
