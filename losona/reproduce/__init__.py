"""Check a run: every stage run again from the run's own files, with no model call, and what
it writes compared value by value with the run's (docs/reproducing.md).

    python -m losona.reproduce        # from the repository root; any config override after

Modules: `checks` (the loop over the pipeline's table, and the checks beside it), `replay` (a
stage run again in a scratch copy), `recorded` (the run's settings), `compare` (a value
against the one on disk), `cli` (the command).
"""
