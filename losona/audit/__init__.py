"""audit: how far a run's verdicts can be trusted (paper Section 7; docs/judge-audit.md).

- `inputs`: what the audit reads of a run.
- `labelling`: the blinded sheet for people, and the labels they return.
- `agreement`: two raters on the same items.
- `comparison`: judge against judge; `human`: judge against people.
- `rejudging`: determinism, a seeded subset re-judged (opt-in: it pays for calls again).
- `controls`: every judge's validity controls in one table.
- `correction`, `self_preference`: judge error carried into the results, shown apart.
- `run`: the whole audit and its metrics; `summary`: the headlines in words.
- `files`, `tables`, `settings`: what it writes and reads back, its columns, its settings.

Import from the module: this package runs none of them, so reading the audit's settings
(preflight does) loads no statistics.
"""
