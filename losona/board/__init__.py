"""A leaderboard whose every row is rechecked: the board/ project's stages (docs/board.md).

One module a job: `settings` (the board's own files: submissions.yaml, params.yaml, where
it writes), `tree` (a submission's git tree at its revision, as data), `commands` (its
stage commands, read and never run: none may reach outside its tree), `remote` (the
outputs its dvc.lock records, from its DVC remote, held to their md5), `recheck` (the run
checked by `losona.reproduce` in a process of its own, and the rows it ranks), `verify`
(the verify stage: one submission), `tables` (the rows' columns), `page` (the board stage:
groups of comparable runs, ranked, and the page).
"""
