"""The dynamic_judge stage as a function: the first-turn judge on one cell's second replies."""

from __future__ import annotations

import polars as pl

from losona.core.config import ConditionConfig, JudgeConfig, ModelSpec
from losona.core.contracts import SCENARIO_SCHEMA
from losona.core.files import display_path, read_parquet
from losona.core.layout import RunLayout
from losona.dynamic.judge import judge_second_turn
from losona.dynamic.tables import DYNAMIC_PROMPT_SCHEMA, DYNAMIC_RESPONSE_SCHEMA
from losona.judges.base import Judge
from losona.judges.finish import finish_judging
from losona.judges.run import make_judge, status_counts
from losona.models import CallOptions
from losona.models.call_store import call_store
from losona.pipeline.command import Cell, Settings


def run_dynamic_judge(
    config: JudgeConfig, layout: RunLayout, model: ModelSpec, condition: ConditionConfig
) -> None:
    """dynamic_judge: the same judge scores one cell's second replies, in the second turn's
    chat, with its calls."""
    name = config.name
    cell = (name, model.name, condition.name)
    judge = make_judge(
        config,
        CallOptions(cache_path=call_store(layout), run_log=layout.dynamic_log("judge", *cell)),
    )
    out = layout.dynamic_verdicts(*cell)

    def headline(outcomes: pl.DataFrame) -> str:
        return (
            f"dynamic_judge {name} ({judge.model}) on {model.name}/{condition.name}: "
            f"{outcomes.height} verdicts, {status_counts(outcomes)} -> {out}"
        )

    finish_judging(
        _judged_cell(layout, judge, *cell),
        stage="dynamic_judge",
        name=name,
        judge=judge,
        out=out,
        calls_out=layout.dynamic_calls("dynamic_judge", *cell),
        headline=headline,
    )


def _judged_cell(
    layout: RunLayout, judge: Judge, name: str, model: str, condition: str
) -> pl.DataFrame:
    # Its inputs are this function's own: they go when it returns the verdicts.
    responses_path = layout.dynamic_responses(name, model, condition)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    prompts = read_parquet(
        layout.dynamic_prompts(name, model, condition),
        DYNAMIC_PROMPT_SCHEMA,
        made_by="dynamic_render",
    )
    responses = read_parquet(responses_path, DYNAMIC_RESPONSE_SCHEMA, made_by="dynamic_sample")
    return judge_second_turn(
        scenarios, prompts, responses, judge, name, origin=display_path(responses_path)
    )


CELL: dict[str, str] = {"judge": "judge", "model": "model", "condition": "condition"}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_dynamic_judge(
        settings.option("judge", cell["judge"]),
        layout,
        settings.option("model", cell["model"]),
        settings.option("condition", cell["condition"]),
    )
