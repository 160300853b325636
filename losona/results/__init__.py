"""The results: the paper's metrics from every verdict file (the aggregate stage).

- `metrics`: majority vote, accuracy-at-K, intervals and paired tests, as pure functions,
  and the one helper that turns the run's bootstrap settings into intervals.
- `aggregate`: the results, effects and breakdown tables, and Table 1.
- `bundle`: a report bundle (tables, texts, metrics.json), as aggregate, dynamic_aggregate
  and audit each write and read back theirs.
- `stage`: the aggregate stage as a function.
"""
