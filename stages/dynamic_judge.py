"""dynamic_judge: the same judge scores one cell's second replies, in the second turn's chat.

python stages/dynamic_judge.py judge=lexicon model=smollm2 condition=naive

Reads the cell's dynamic prompts and responses (data/dynamic/<judge>/...) and writes
data/dynamic/<judge>/verdicts/<model>/<condition>.parquet.
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen
from losona.contracts import DYNAMIC_PROMPT_SCHEMA, DYNAMIC_RESPONSE_SCHEMA, SCENARIO_SCHEMA
from losona.dynamic.judge import judge_second_turn
from losona.errors import LosonaError
from losona.files import display_path, read_parquet, write_parquet
from losona.judges.run import (
    call_sources,
    judge_calls,
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
        raise LosonaError(
            "dynamic_judge needs one cell, e.g. judge=lexicon model=smollm2 condition=naive"
        )
    config = chosen(cfg, "judge")
    name, model = config.name, chosen(cfg, "model").name
    condition = chosen(cfg, "condition").name
    log = layout.dynamic_log("judge", name, model, condition)
    judge = make_judge(config, CallOptions(cache_path=call_store(layout), run_log=log))
    responses_path = layout.dynamic_responses(name, model, condition)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    prompts = read_parquet(
        layout.dynamic_prompts(name, model, condition),
        DYNAMIC_PROMPT_SCHEMA,
        made_by="dynamic_render",
    )
    responses = read_parquet(responses_path, DYNAMIC_RESPONSE_SCHEMA, made_by="dynamic_sample")
    verdicts = judge_second_turn(
        scenarios, prompts, responses, judge, name, origin=display_path(responses_path)
    )
    out = layout.dynamic_verdicts(name, model, condition)
    write_parquet(verdicts, out)
    calls_out = layout.dynamic_calls("dynamic_judge", name, model, condition)
    write_parquet(judge_calls(judge), calls_out)
    print(
        f"dynamic_judge {name} ({judge.model}) on {model}/{condition}: {verdicts.height} "
        f"verdicts, {status_counts(verdicts)} -> {out}"
    )
    if (sources := call_sources(judge)) is not None:
        print(f"dynamic_judge {name}: answers: {sources}")
    for note in unscored_notes(verdicts):
        print(f"note: {note}")


if __name__ == "__main__":
    launch(main)
