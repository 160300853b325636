"""The results: the paper's metrics from every verdict file (the aggregate stage).

- `metrics`: majority vote, accuracy-at-K, intervals and paired tests, as pure functions.
- `resampling`: the scenario bootstrap, the one resampler of every interval.
- `aggregate`: the results, effects and breakdown tables.
- `table1`: Table 1 in the paper's layout; `presentation`: the sweep's order and labels.
- `bundle`: a report bundle (tables, texts, metrics.json), as aggregate, dynamic_aggregate
  and audit each write and read back theirs; `tables`: aggregate's columns.
"""
