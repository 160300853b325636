"""aggregate: the paper's metrics from every verdict file, as report tables and DVC metrics.

python stages/aggregate.py
python stages/aggregate.py aggregate.seed=1              # another bootstrap seed
python stages/aggregate.py paths.verdicts_dir=runs/v paths.reports_dir=runs/reports
"""

import sys

import hydra
import polars as pl
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen, plain
from losona.contracts import SCENARIO_SCHEMA
from losona.files import read_parquet
from losona.judges.verdicts import load_verdicts
from losona.results.aggregate import aggregate, judge_evidence, write_reports
from losona.results.presentation import judge_kinds, outside_sweep, presentation_for


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    paths = chosen(cfg, "paths")
    bootstrap = chosen(cfg, "aggregate")
    verdicts = load_verdicts(paths.verdicts_dir)
    scenarios = read_parquet(paths.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    sweep = plain(cfg.sweep)
    for name in outside_sweep(verdicts, sweep):
        # Verdict files outlive a sweep that drops them: report them, and say so.
        print(f"note: {paths.verdicts_dir} has verdicts for {name}; reported too", file=sys.stderr)
    reports = aggregate(
        verdicts,
        scenarios,
        bootstrap=bootstrap,
        presentation=presentation_for(verdicts, sweep),
        judges=judge_evidence(paths.judge_controls_dir, judge_kinds(verdicts["judge"].unique())),
    )
    write_reports(reports, paths.reports_dir)
    results = reports["results.csv"]
    print(
        f"aggregate: {results.height} model x condition rows over {scenarios.height} scenarios, "
        f"{results['unscored_trials'].sum()} unscored trials -> {paths.reports_dir}/"
    )
    for row in results.filter(pl.col("degenerate").is_not_null()).iter_rows(named=True):
        print(
            f"warning: judge {row['judge']}'s verdicts on {row['subject_model']}/"
            f"{row['condition']} are degenerate ({row['degenerate']}): its numbers there "
            "measure the judge, not the model",
            file=sys.stderr,
        )


if __name__ == "__main__":
    launch(main)
