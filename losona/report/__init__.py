"""The report: the figures and reports/index.html (the plot stage).

- `index`: the HTML report's sections, from the numbers down to every chat.
- `plots`: the paper's figures and the heatmap.
- `audit_section`: the judge audit's section of the report.
- `run_facts`: what each cell cost, as the report shows it (the same on every rerun).
- `experiments`: `python -m losona.experiments`, experiments' settings and headline
  numbers side by side.
- `run_logs`: `python -m losona.run_logs`, each cell's facts that differ on every run.
"""
