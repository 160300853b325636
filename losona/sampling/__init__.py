"""Sampling: each model's K replies to every prompt of one condition (the sample stage).

- `sample`: one cell's prompts sent through the model layer, K trials each, as a table.
- `prompts`: the prompts sample reads (render's, or for a dry run, rendered in memory).
"""
