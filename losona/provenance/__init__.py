"""What a run rests on and what travels with it (the provenance and calls stages).

- `record`: reports/provenance.json, the record `python -m losona.reproduce` checks.
- `call_files`: the call store a stage reads, and the cells' calls files merged.
- `dvc_json`: asking DVC's command line for a JSON answer (status, experiments).
- `publishable`: `python -m losona.publishable`, whether `dvc status` is clean.
"""
