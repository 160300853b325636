"""dynamic_judge: the same judge scores one cell's second replies, in the second turn's chat.

python stages/dynamic_judge.py judge=lexicon model=smollm2 condition=naive

Reads the cell's dynamic prompts and responses (data/dynamic/<judge>/...) and writes
data/dynamic/<judge>/verdicts/<model>/<condition>.parquet.
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen
from losona.contracts import SCENARIO_SCHEMA
from losona.dynamic.files import (
    JUDGE_CALLS,
    PROMPTS,
    RESPONSES,
    VERDICTS,
    calls_file,
    cell_file,
    run_log,
)
from losona.dynamic.judge import judge_second_turn
from losona.dynamic.tables import DYNAMIC_PROMPT_SCHEMA, DYNAMIC_RESPONSE_SCHEMA
from losona.errors import LosonaError
from losona.files import display_path, read_parquet, write_parquet
from losona.judges.run import (
    call_sources,
    judge_calls,
    make_judge,
    status_counts,
    unscored_notes,
)
from losona.models import CallOptions
from losona.provenance.call_files import call_store


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    paths = chosen(cfg, "paths")
    if "condition" not in cfg:
        raise LosonaError(
            "dynamic_judge needs one cell, e.g. judge=lexicon model=smollm2 condition=naive"
        )
    config = chosen(cfg, "judge")
    name, model = config.name, chosen(cfg, "model").name
    condition = chosen(cfg, "condition").name
    log = run_log(paths, "judge", name, model, condition)
    judge = make_judge(config, CallOptions(cache_path=call_store(paths), run_log=log))
    responses_path = cell_file(paths, RESPONSES, name, model, condition)
    scenarios = read_parquet(paths.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    prompts = read_parquet(
        cell_file(paths, PROMPTS, name, model, condition),
        DYNAMIC_PROMPT_SCHEMA,
        made_by="dynamic_render",
    )
    responses = read_parquet(responses_path, DYNAMIC_RESPONSE_SCHEMA, made_by="dynamic_sample")
    verdicts = judge_second_turn(
        scenarios, prompts, responses, judge, name, origin=display_path(responses_path)
    )
    out = cell_file(paths, VERDICTS, name, model, condition)
    write_parquet(verdicts, out)
    write_parquet(judge_calls(judge), calls_file(paths, JUDGE_CALLS, name, model, condition))
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
