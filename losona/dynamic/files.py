"""Where the dynamic extension's files live (conf/paths/default.yaml: dynamic_dir, ...).

Everything is kept under the first-turn judge that chose the arms, so that two judges'
second turns never mix: `dynamic_dir/<judge>/<table>/<model>/<condition>.parquet` and
`dynamic_reports_dir/<judge>/`. The calls a stage's table was built from go under
paths.calls_dir like every stage's (`dynamic_group/`, `dynamic_sample/`, `dynamic_judge/`,
then <judge>/<model>/<condition>.parquet), and the calls stage merges them.
"""

from __future__ import annotations

from pathlib import Path

from losona.config import Paths
from losona.dynamic.settings import DynamicSettings

PROMPTS, RESPONSES, VERDICTS = "prompts", "responses", "verdicts"
# The parts of paths.calls_dir the dynamic stages write (the group model's calls are
# written by dynamic_render: an empty table when the follow-ups are scripted).
GROUP_CALLS, SAMPLE_CALLS, JUDGE_CALLS = "dynamic_group", "dynamic_sample", "dynamic_judge"


def cell_file(paths: Paths, table: str, judge: str, model: str, condition: str) -> Path:
    """One cell's prompts, responses or verdicts table."""
    return Path(paths.dynamic_dir) / judge / table / model / f"{condition}.parquet"


def calls_file(paths: Paths, stage: str, judge: str, model: str, condition: str) -> Path:
    """Where a dynamic stage writes the calls one cell's table was built from."""
    return Path(paths.calls_dir) / stage / judge / model / f"{condition}.parquet"


def run_log(paths: Paths, stage: str, judge: str, model: str, condition: str) -> Path:
    """Where a dynamic stage writes one cell's run log (kept out of dynamic_dir: it differs
    on every run, and dynamic_aggregate depends on that folder as a whole)."""
    return Path(paths.dynamic_logs_dir) / judge / stage / model / f"{condition}.log.json"


def reports_dir(paths: Paths, judge: str) -> Path:
    """The folder of one judge's dynamic tables, figure and metrics."""
    return Path(paths.dynamic_reports_dir) / judge


def dynamic_call_files(paths: Paths, settings: DynamicSettings) -> list[Path]:
    """Every calls file the dynamic stages write (none while the extension is off)."""
    return [
        calls_file(paths, stage, judge, model, condition)
        for stage in (GROUP_CALLS, SAMPLE_CALLS, JUDGE_CALLS)
        for judge in settings.judges
        for model in settings.models
        for condition in settings.conditions
    ]
