"""Check a run: every stage run again from the run's own files, with no model call.

    python -m losona.reproduce                        # from the repository root
    python -m losona.reproduce paths.reports_dir=runs/reports   # any config override

It runs every stage from render on again (sample when the run published its calls), each
by the stage's own function, in a scratch copy of the run (`replay`), with the sweep and
bootstrap settings recorded in reports/provenance.json and every model call answered from
the run's published calls alone; each stage reads the run's own files, and what it writes
is compared value by value with the run's: the prompts, the responses, the verdicts
(judged again by the judge config the run recorded: rules for free, an LLM judge from the
published calls), each panel's votes, verdicts and validity controls (by the panel
stages), the validity controls and their summaries, aggregate's tables and metrics, the
judge audit (when the run has one), the numbers behind the figures and, with the extension
on, the dynamic turn's prompts, replies, verdicts and reports, and last the merged calls
file. Beside the stages, it checks that the verdicts name the judge models and versions
the provenance records, that the scenario table and the templates still have the hashes it
records, and that the run's published calls (paths.calls) hold every cell's calls file
and, for every response, the very call that produced it (looked up by the call-cache key
of the prompt, trial and model config). Last, every output file against the md5 dvc.lock
records for it, and dvc.lock against the one committed at git HEAD: a table, the calls
file and dvc.lock that disagree, or a run recomputed and recorded again since it was
committed, are named.

Exit status: 0 when everything matches; 3 when anything differs (each difference is
named: file, line or key, column, expected vs found); 2 when the run cannot be checked
(a file is missing or unreadable). Audit figures that came from re-judging (the opt-in
determinism check) need model calls and are reported as not rechecked.

One module a job: `compare` (a value against the one on disk, and the differences),
`replay` (a stage run again in a scratch copy of the run), `checks` (which stages are run
again and what is checked), `cli` (the command and its exit status).
"""
