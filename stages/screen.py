"""screen: the no-demonstration control, asked of the baseline models and judged.

python stages/screen.py                                        # conf/generation/default.yaml
python stages/screen.py 'screen.models=[gemini_pro,claude_opus]' screen.keep=majority

Reads data/generation/candidates.parquet; writes data/generation/screened.parquet (every
candidate with its outcome), data/generation/screen_verdicts.parquet (each baseline
answer and its verdict), reports/generation/cells.csv (per cell: generated, rejected by
validation, rejected by screening, undetermined, accepted) and reports/generation/screen.json.
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen, option
from losona.files import read_parquet, write_json, write_parquet, write_text
from losona.generation.screen import (
    cell_report,
    format_cell_report,
    screen_candidates,
    screen_summary,
)
from losona.generation.settings import load_model
from losona.generation.tables import CANDIDATE_SCHEMA
from losona.judges.run import make_judge
from losona.layout import RunLayout
from losona.models import CallOptions


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    settings = chosen(cfg, "generation").screen
    layout = RunLayout(chosen(cfg, "paths"))
    files = layout.generation
    baselines = [load_model(name) for name in settings.models]
    for spec in baselines:
        spec.check_credentials()  # before any work: a missing key fails at once
    judge = make_judge(
        option("judge", settings.judge),
        CallOptions(cache_path=layout.call_cache, run_log=files.run_logs / "screen_judge.log.json"),
    )
    candidates = read_parquet(files.candidates, CANDIDATE_SCHEMA, made_by="generate")
    screening = screen_candidates(
        candidates,
        baselines,
        judge,
        settings.judge,
        trials=settings.trials,
        keep=settings.keep,
        options=CallOptions(cache_path=layout.call_cache, max_cost_usd=settings.max_cost_usd),
        run_log_dir=files.run_logs,
    )
    cells = cell_report(screening.candidates)
    summary = screen_summary(
        screening.candidates,
        baselines,
        judge,
        settings.judge,
        trials=settings.trials,
        keep=settings.keep,
    )
    write_parquet(screening.candidates, files.screened)
    write_parquet(screening.verdicts, files.screen_verdicts)
    write_text(cells.write_csv(), files.cells)
    write_json(summary, files.screen_summary)
    print(
        f"screen: {', '.join(s.name for s in baselines)} x {settings.trials} answers on each "
        f"valid candidate's no-demonstration control, judged by {settings.judge} "
        f"({judge.model}), keep: {settings.keep} -> {files.screened}"
    )
    print(format_cell_report(cells))


if __name__ == "__main__":
    launch(main)
