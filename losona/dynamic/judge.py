"""dynamic_judge: the same judge, through its own `judge` method, scores the subject's
second reply in the second turn's chat."""

from __future__ import annotations

import polars as pl

from losona.core.contracts import scenarios_from_table, table
from losona.core.errors import LosonaError
from losona.dynamic.arms import OK
from losona.dynamic.cells import KEY, check_one_for_one
from losona.dynamic.chat import SecondTurn
from losona.dynamic.tables import DYNAMIC_VERDICT_SCHEMA
from losona.judges.base import Judge
from losona.judges.run import verdict_columns
from losona.scenarios.followups import Message


def judge_second_turn(
    scenarios: pl.DataFrame,
    prompts: pl.DataFrame,
    responses: pl.DataFrame,
    judge: Judge,
    name: str,
    *,
    origin: str,
) -> pl.DataFrame:
    """The verdict table of one cell's second replies (DYNAMIC_VERDICT_SCHEMA), sorted; every
    rendered prompt must have exactly its one response (`origin` names its file in errors)."""
    same = ["prompt_sha256"]
    check_one_for_one(
        prompts, responses, where=origin, what="reply", rerun="dynamic_sample", same=same
    )
    rendered = prompts.filter(pl.col("status") == OK).select(
        *KEY, "first_response", "followup", "elicitor_actor", "elicitor_content"
    )
    joined = rendered.join(
        responses.select(*KEY, "response", "condition", "subject_model"), on=KEY, how="inner"
    )
    by_id = {s.scenario_id: s for s in scenarios_from_table(scenarios)}
    cases, keys = [], []
    for row in joined.sort(KEY).iter_rows(named=True):
        scenario = by_id.get(row["scenario_id"])
        if scenario is None:
            raise LosonaError(
                f"{origin}: scenario '{row['scenario_id']}' is not in the scenario table; "
                "rerun dynamic_render after fetch"
            )
        second = SecondTurn(
            scenario,
            row["first_response"],
            tuple(Message(m["actor"], m["content"]) for m in row["followup"]),
            Message(row["elicitor_actor"], row["elicitor_content"]),
        )
        cases.append(second.judge_case(row["response"]))
        keys.append(
            {
                "scenario_id": scenario.scenario_id,
                "event_type": scenario.event_type,
                "norm_id": scenario.norm_id,
                "condition": row["condition"],
                "subject_model": row["subject_model"],
                "trial": row["trial"],
                "arm": row["arm"],
                "response": row["response"],
            }
        )
    fields = verdict_columns(judge, name, judge.judge(cases)).to_dicts() if cases else []
    verdicts = [{**key, **field} for key, field in zip(keys, fields, strict=True)]
    return table(verdicts, DYNAMIC_VERDICT_SCHEMA, sort_by=KEY)
