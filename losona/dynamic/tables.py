"""The dynamic second turn's tables: its prompts, replies and verdicts, and its reports."""

from __future__ import annotations

import polars as pl

from losona.core.contracts import MESSAGE

# Under paths.dynamic_dir/<judge>/, <judge> being the first-turn judge that chose the arms.
CHAT_MESSAGE = pl.Struct({"actor": pl.String(), "content": pl.String()})

DYNAMIC_PROMPT_SCHEMA = pl.Schema(  # prompts/<model>/<condition>.parquet: written by dynamic_render
    {
        "scenario_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),
        "judge": pl.String(),  # the first-turn judge that chose the arm
        "trial": pl.Int32(),  # the first turn's trial index, kept for the second turn
        "first_response": pl.String(),  # the subject's first reply, as the judge read it
        "first_complies": pl.Boolean(),  # the first-turn verdict; null when unscored
        # sanction | control (breaches) | retention (compliant); null when left out unscored
        "arm": pl.String(),
        "continuation": pl.String(),  # sanction | neutral: what the group said; null if none
        "followup": pl.List(CHAT_MESSAGE),  # the group's messages after the first reply
        "followup_source": pl.String(),  # where they came from, with its version
        "elicitor_actor": pl.String(),  # the second elicitor
        "elicitor_content": pl.String(),
        "elicitor_source": pl.String(),
        # ok | first_turn_unscored | no_followup (a group model's reply could not be used)
        "status": pl.String(),
        "note": pl.String(),  # why a trial was left out; null when status is ok
        "template_version": pl.String(),  # the subject prompt's version
        "group_template_version": pl.String(),  # the group model's prompt; null if scripted
        "messages": pl.List(MESSAGE),  # the second-turn subject prompt; empty if left out
        "prompt_sha256": pl.String(),  # null if left out
    }
)

DYNAMIC_RESPONSE_SCHEMA = pl.Schema(  # responses/<model>/<condition>.parquet: dynamic_sample
    {
        "scenario_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),
        "judge": pl.String(),
        "trial": pl.Int32(),
        "arm": pl.String(),
        "provider_model": pl.String(),
        "prompt_sha256": pl.String(),
        "response": pl.String(),  # the subject's second reply
        "finish_reason": pl.String(),
        "prompt_tokens": pl.Int64(),
        "completion_tokens": pl.Int64(),
        "cost_usd": pl.Float64(),
    }
)

DYNAMIC_VERDICT_SCHEMA = pl.Schema(  # verdicts/<model>/<condition>.parquet: dynamic_judge
    {
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),
        "trial": pl.Int32(),
        "arm": pl.String(),
        "response": pl.String(),  # the second reply judged
        "judge": pl.String(),  # the same judge as the first turn's
        "judge_model": pl.String(),
        "judge_version": pl.String(),
        "complies": pl.Boolean(),  # null when unscored
        "elicitor_uptake": pl.String(),
        "norm_requirement": pl.String(),
        "evidence": pl.String(),
        "reasoning": pl.String(),
        "judge_status": pl.String(),
        "non_answer": pl.Boolean(),
    }
)

# The dynamic reports, under paths.dynamic_reports_dir/<judge>/, written by dynamic_aggregate.
DYNAMIC_RESULT_SCHEMA = pl.Schema(  # results.csv: one row per model x condition x level x metric
    {
        "judge": pl.String(),
        "judge_model": pl.String(),
        # Display labels as in the first turn's results.csv (RESULT_SCHEMA), a test
        # double's marked, so that both turns name a judge, model and condition alike.
        "judge_label": pl.String(),
        "subject_model": pl.String(),
        "model_label": pl.String(),
        "condition": pl.String(),
        "condition_label": pl.String(),
        # What the cell rests on, for the scope line its figure and section carry
        # ("N = 5 scenarios, K = 1 trials each"): the first-turn trials per scenario (the
        # most any scenario has, as the first turn's `k`) and the scenarios of the run
        # (every one is continued, losona/dynamic/aggregate.py refuses a cell missing one).
        "k": pl.Int32(),
        "scenarios": pl.Int32(),
        "level": pl.String(),  # trial | scenario (the paper's majority rule per arm)
        # recovery_after_sanction | recovery_after_control | sanction_effect | retention
        "metric": pl.String(),
        "estimate": pl.Float64(),  # percent (0-100); the effect in points; null: no data
        "low": pl.Float64(),  # the scenario-bootstrap interval
        "high": pl.Float64(),
        "count": pl.Int32(),  # complying trials or passing scenarios; the effect: its pairs
        "out_of": pl.Int32(),  # the trials or scenarios it is a share of
        "helped": pl.Int32(),  # the effect: pairs complying after the sanction only
        "hurt": pl.Int32(),  # the effect: pairs complying after the control only
        "mcnemar_p": pl.Float64(),  # the effect: exact McNemar test on helped vs hurt
    }
)

DYNAMIC_ARM_SCHEMA = pl.Schema(  # arms.csv: what happened to the first turn's trials, by arm
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "arm": pl.String(),  # sanction | control | retention | first_turn_unscored
        "trials": pl.Int32(),  # first-turn trials in the arm
        "continued": pl.Int32(),  # given a second turn
        "left_out": pl.Int32(),  # not continued (unscored first turn, unusable group reply)
        "scored": pl.Int32(),  # second turns the judge scored
        "complying": pl.Int32(),
    }
)

DYNAMIC_OUTCOME_SCHEMA = pl.Schema(  # outcomes.csv: each scenario's trials in each arm
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "arm": pl.String(),
        "trials": pl.Int32(),  # first-turn trials in the arm
        "scored": pl.Int32(),
        "complying": pl.Int32(),
        "passed": pl.Boolean(),  # the majority rule over the arm's trials; null: undetermined
    }
)

DYNAMIC_EXAMPLE_SCHEMA = pl.Schema(  # examples.csv: breaches continued both ways, for reading
    {
        "judge": pl.String(),
        "subject_model": pl.String(),
        "condition": pl.String(),
        "scenario_id": pl.String(),
        "trial": pl.Int32(),
        "subject": pl.String(),
        "first_elicitor": pl.String(),  # `Name: text`
        "first_response": pl.String(),
        "sanction": pl.String(),  # the sanction's messages, one `Name: text` a line
        "control": pl.String(),  # the neutral messages
        "second_elicitor": pl.String(),
        "sanction_response": pl.String(),
        "sanction_complies": pl.Boolean(),
        "control_response": pl.String(),
        "control_complies": pl.Boolean(),
    }
)
