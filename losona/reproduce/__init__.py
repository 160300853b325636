"""Check a run: every stage run again from the run's own files, with no model call, and what
it writes compared value by value with the run's (docs/reproducing.md).

Modules: `checks` (the loop over the pipeline's table), `replay` (a stage run again in a
scratch copy), `compare` (a value against the one on disk), `cli` (the command).
"""
