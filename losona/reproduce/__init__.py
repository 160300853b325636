"""Check a run: every stage run again from the run's own files, with no model call.

    python -m losona.reproduce                        # from the repository root
    python -m losona.reproduce paths.reports_dir=runs/reports   # any config override

Each stage of the pipeline's table (losona/pipeline/table.py) but those checks.NOT_RERUN
names runs again on each of its cells, by its own function, in a scratch copy of the run,
with the settings and configs the run recorded (recorded.py) and every model call answered
from its published calls alone (checks.INSTEAD: what takes a cell's place); every file
the stage writes is compared value by value with the run's (a drawn figure by the numbers
beside it: checks.NOT_COMPARED). Beside the stages: the verdicts name the judge models the
provenance records, the scenario table and templates keep their recorded hashes, every
response is the published call that produced it, and every output matches dvc.lock, which
matches the one committed at git HEAD.

Exit status: 0 when everything matches; 3 when anything differs (each difference named:
file, line or key, column, expected vs found); 2 when the run cannot be checked.

Modules: `compare` (a value against the one on disk), `replay` (a stage run again in a
scratch copy), `recorded` (the run's settings), `checks` (the loop and the checks beside
it), `cli` (the command).
"""
