"""The scenarios: where they come from, the checks they pass, and reading them.

- `datasets`: the bundled set, a user's file or the Hugging Face release, as scenario rows.
- `validate`: every row against the contract and the paper's construction rules.
- `followups`: a scenario's scripted follow-up material for the dynamic second turn.
- `view`: a scenario as people read it, and the no-demonstration control.
- `cli`: `python -m losona.scenarios` (show, stats, list).
"""
