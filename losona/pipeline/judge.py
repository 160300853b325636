"""The judge stage as a function: one judge's verdicts on one cell's responses."""

from __future__ import annotations

import polars as pl

from losona.core.config import (
    ConditionConfig,
    JudgeConfig,
    ModelSpec,
    judge_kind_settings,
)
from losona.core.contracts import RESPONSE_SCHEMA, SCENARIO_SCHEMA
from losona.core.files import (
    display_path,
    read_parquet,
)
from losona.core.layout import RunLayout
from losona.judges.base import Judge
from losona.judges.finish import finish_judging
from losona.judges.health import (
    JudgeEvidence,
    degenerate_signs,
    uniform_verdict,
)
from losona.judges.run import (
    judge_responses,
    make_judge,
    status_counts,
)
from losona.models import CallOptions
from losona.models.call_store import call_store
from losona.pipeline.command import Cell, Settings


def run_judge(
    config: JudgeConfig, layout: RunLayout, model: ModelSpec, condition: ConditionConfig
) -> None:
    """judge: one judge's verdicts on one cell's responses (never resampled), with its calls."""
    name, model_name, condition_name = config.name, model.name, condition.name
    judge = make_judge(
        config,
        CallOptions(
            cache_path=call_store(layout),
            run_log=layout.judge_log(name, model_name, condition_name),
        ),
    )
    cell = f"{model_name}/{condition_name}"
    out = layout.verdicts(name, model_name, condition_name)

    def headline(outcomes: pl.DataFrame) -> str:
        return (
            f"judge {name} ({judge.model}) on {cell}: {outcomes.height} "
            f"verdicts, {status_counts(outcomes)} -> {out}"
        )

    def warnings(outcomes: pl.DataFrame) -> list[str]:
        evidence = JudgeEvidence(own_words=judge_kind_settings(config.kind).own_words)
        lines = [
            f"warning: judge {name}'s verdicts on {cell} say nothing: {sign}"
            for sign in degenerate_signs(outcomes, evidence)
        ]
        if (label := uniform_verdict(outcomes)) is not None:
            lines.append(
                f"note: every scored verdict of judge {name} on {cell} is "
                f"{'comply' if label else 'breach'}; if its validity controls fail "
                "(judge_controls), aggregate flags the cell as degenerate"
            )
        return lines

    finish_judging(
        _judged_cell(layout, judge, name, model_name, condition_name),
        stage="judge",
        name=name,
        judge=judge,
        out=out,
        calls_out=layout.judge_calls(name, model_name, condition_name),
        headline=headline,
        warnings=warnings,
    )


def _judged_cell(
    layout: RunLayout, judge: Judge, name: str, model: str, condition: str
) -> pl.DataFrame:
    # Its inputs are this function's own: they go when it returns the verdicts.
    responses_path = layout.responses(model, condition)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    responses = read_parquet(responses_path, RESPONSE_SCHEMA, made_by="sample")
    return judge_responses(
        scenarios,
        responses,
        judge,
        name,
        model=model,
        condition=condition,
        origin=display_path(responses_path),
    )


CELL: dict[str, str] = {"judge": "judge", "model": "model", "condition": "condition"}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_judge(
        settings.option("judge", cell["judge"]),
        layout,
        settings.option("model", cell["model"]),
        settings.option("condition", cell["condition"]),
    )
