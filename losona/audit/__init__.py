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
`resampling` (their bootstraps), `settings` (the `audit:` node's schema), `tables` (its
tables' columns). Import from the module: this package runs none of them, so reading the
audit's settings (preflight does) loads no statistics.
"""
