"""judge: score one subject model's responses under one condition with one judge.

python stages/judge.py condition=naive                                # the default judge and model
python stages/judge.py judge=gemini_pro model=claude_opus condition=style_adaptation

Reads data/responses/<model>/<condition>.parquet (never resamples) and writes
data/verdicts/<judge>/<model>/<condition>.parquet.
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen
from losona.contracts import RESPONSE_SCHEMA, SCENARIO_SCHEMA
from losona.errors import LosonaError
from losona.files import display_path, read_parquet, write_parquet
from losona.judges.health import JudgeEvidence, degenerate_signs, uniform_verdict
from losona.judges.llm import LLMJudge
from losona.judges.run import (
    call_sources,
    judge_calls,
    judge_responses,
    make_judge,
    status_counts,
    unscored_notes,
)
from losona.layout import RunLayout
from losona.models import CallOptions
from losona.provenance.call_files import call_store


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    if "condition" not in cfg:
        raise LosonaError("judge needs one condition, e.g. condition=naive")
    config = chosen(cfg, "judge")
    judge_name = config.name
    model, condition = chosen(cfg, "model").name, chosen(cfg, "condition").name
    judge = make_judge(
        config,
        CallOptions(
            cache_path=call_store(layout),
            run_log=layout.judge_log(judge_name, model, condition),
        ),
    )
    responses_path = layout.responses(model, condition)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    responses = read_parquet(responses_path, RESPONSE_SCHEMA, made_by="sample")
    verdicts = judge_responses(
        scenarios,
        responses,
        judge,
        judge_name,
        model=model,
        condition=condition,
        origin=display_path(responses_path),
    )
    out = layout.verdicts(judge_name, model, condition)
    # Only the verdicts are needed from here: the inputs go before they are written, and the
    # verdicts (but the columns the account below reads) before the calls table is made.
    del scenarios, responses
    write_parquet(verdicts, out)
    outcomes = verdicts.select("complies", "judge_status", "reasoning")
    del verdicts
    # Collected here rather than streamed: a cell's calls fit one row group, which the
    # writer would hold whole anyway, and made on this thread they peaked a little lower.
    write_parquet(judge_calls(judge).collect(), layout.judge_calls(judge_name, model, condition))
    print(
        f"judge {judge_name} ({judge.model}) on {model}/{condition}: {outcomes.height} "
        f"verdicts, {status_counts(outcomes)} -> {out}"
    )
    for sign in degenerate_signs(outcomes, JudgeEvidence(own_words=isinstance(judge, LLMJudge))):
        print(f"warning: judge {judge_name}'s verdicts on {model}/{condition} say nothing: {sign}")
    if (label := uniform_verdict(outcomes)) is not None:
        print(
            f"note: every scored verdict of judge {judge_name} on {model}/{condition} is "
            f"{'comply' if label else 'breach'}; if its validity controls fail "
            "(judge_controls), aggregate flags the cell as degenerate"
        )
    if (sources := call_sources(judge)) is not None:
        print(f"judge {judge_name}: answers: {sources}")
    for note in unscored_notes(outcomes):
        print(f"note: {note}")


if __name__ == "__main__":
    launch(main)
