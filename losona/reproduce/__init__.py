"""Check a run: every reported number recomputed from its verdict files, with no model call.

    python -m losona.reproduce                        # from the repository root
    python -m losona.reproduce paths.reports_dir=runs/reports   # any config override

It recomputes, with the settings recorded in reports/provenance.json, everything the
aggregate stage reports (results, means, deltas, flips, breakdowns, outcomes, Table 1,
metrics.json), each judge's validity-control summary, the judge audit (when the run has
one) and the numbers behind the figures, and compares them value by value with the files
on disk. Below the numbers, it checks that every verdict judged the recorded response
(the lexicon judge's verdicts are judged again from the responses: rules cost nothing; a
judge panel's are combined again from its members' verdict files),
that the verdicts name the judge models and versions the provenance records, that
the scenario table and the templates still have the hashes it records, and that the
run's published calls (paths.calls) hold every cell's calls file and, for every response,
the very call that produced it (looked up by the call-cache key of the prompt, trial and
model config). Last, every output file against the md5 dvc.lock records for it, and
dvc.lock against the one committed at git HEAD: a table, the calls file and dvc.lock that
disagree, or a run recomputed and recorded again since it was committed, are named.

Exit status: 0 when everything matches; 3 when anything differs (each difference is
named: file, line or key, column, expected vs found); 2 when the run cannot be checked
(a file is missing or unreadable). Audit figures that came from re-judging (the opt-in
determinism check) need model calls and are reported as not rechecked.

One module a job: `compare` (a value against the one on disk, and the differences),
`checks` (what is recomputed and checked), `cli` (the command and its exit status).
"""
