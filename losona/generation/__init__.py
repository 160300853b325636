"""Growing the benchmark: generate candidates, screen them, curate the survivors (stages of
their own DVC project in generation/, docs/generation.md).

- `cells`: which (event, norm) cells and venues get candidates (seeded).
- `prompt`: the generator prompt and the JSON schema of a scenario.
- `candidates`: the generator prompt filled in, a reply read, every check a candidate passes.
- `generate`: the generator model's calls and the candidate table.
- `screen`: the no-demonstration control, asked of one or several baselines and judged.
- `curate`: the review sheet, the accept list and the curated scenario file.
- `settings`, `tables`: the generate, screen and curate config nodes and their tables.
"""
