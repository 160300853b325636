"""dynamic_aggregate: one judge's second-turn metrics, tables, figure and DVC metrics.

python stages/dynamic_aggregate.py judge=lexicon

Reads every cell of conf/dynamic/default.yaml (dynamic.models x dynamic.conditions)
under data/dynamic/<judge>/ and writes reports/dynamic/<judge>/: results.csv, arms.csv,
outcomes.csv, examples.csv, metrics.json and the figure recovery.{png,svg,csv}
(docs/dynamic.md, docs/metrics.md).
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen, plain
from losona.contracts import SCENARIO_SCHEMA, subset_note
from losona.dynamic.aggregate import FIGURE, aggregate_dynamic, load_cells, presentation_of
from losona.dynamic.plots import draw_recovery
from losona.files import read_parquet
from losona.layout import RunLayout
from losona.report.plots import write_figures


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    settings = chosen(cfg, "dynamic")
    settings.check_sweep(plain(cfg.sweep), where="conf/dynamic/default.yaml")
    bootstrap = chosen(cfg, "aggregate")
    judge = chosen(cfg, "judge").name
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    cells = load_cells(layout, judge, settings.models, settings.conditions)
    reports = aggregate_dynamic(
        cells,
        scenarios,
        judge=judge,
        bootstrap=bootstrap,
        presentation=presentation_of(settings.models, settings.conditions, [judge]),
    )
    out = layout.dynamic_reports(judge)
    reports.write(out)
    figure = draw_recovery(
        reports["results.csv"], FIGURE, reports.confidence, subset_note(scenarios)
    )
    write_figures([figure], out)
    print(
        f"dynamic_aggregate {judge}: {len(cells)} model x condition cells over "
        f"{scenarios.height} scenarios -> {out}/"
    )


if __name__ == "__main__":
    launch(main)
