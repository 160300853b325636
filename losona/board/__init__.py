"""A leaderboard whose every row is rechecked: the board/ project's stages (docs/board.md).

- `settings`: the board's own files and where it writes.
- `tree`: a submission's git tree at its revision, as data.
- `commands`: its stage commands, read and never run.
- `remote`: the outputs its dvc.lock records, from its DVC remote, held to their md5.
- `recheck`: the run checked by `losona.reproduce` in a process of its own.
- `verify`: the verify stage, one submission; `tables`: the rows' columns.
- `page`: the board stage, groups of comparable runs ranked, and the page.
"""
