"""The results: the paper's metrics from every verdict file (the aggregate stage).

- `metrics`: majority vote, accuracy-at-K, intervals and paired tests, as pure functions.
- `aggregate`: the results, effects and breakdown tables, and Table 1.
- `stage`: the aggregate stage as a function.
"""
