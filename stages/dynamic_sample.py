"""dynamic_sample: the subject's second reply to every second-turn prompt of one cell.

python stages/dynamic_sample.py judge=lexicon model=smollm2 condition=naive

Reads data/dynamic/<judge>/prompts/<model>/<condition>.parquet and writes the responses
beside it (data/dynamic/<judge>/responses/...), with the calls they came from under
paths.calls_dir; its run log goes to paths.dynamic_logs_dir. With sampling.dry_run=true it
prints what the calls would cost (cached calls counted), and writes nothing.
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen
from losona.dynamic.sample import sample_second_turn, second_turn_requests
from losona.dynamic.tables import DYNAMIC_PROMPT_SCHEMA
from losona.errors import LosonaError
from losona.files import display_path, read_parquet, write_parquet
from losona.layout import RunLayout
from losona.models import CallOptions, answer_sources, plan, read_run_log
from losona.provenance.call_files import call_store


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    if "condition" not in cfg:
        raise LosonaError(
            "dynamic_sample needs one cell, e.g. judge=lexicon model=smollm2 condition=naive"
        )
    settings = chosen(cfg, "sampling")
    spec = chosen(cfg, "model")
    judge, condition = chosen(cfg, "judge").name, chosen(cfg, "condition").name
    store = call_store(layout)
    if not settings.dry_run and not (store.published and store.published.expected):
        spec.check_credentials()
    source = layout.dynamic_prompts(judge, spec.name, condition)
    prompts = read_parquet(source, DYNAMIC_PROMPT_SCHEMA, made_by="dynamic_render")
    if settings.dry_run:
        found = plan(spec, second_turn_requests(prompts), cache_path=store)
        print(f"dynamic_sample (dry run, no calls made): {condition}, {found.describe()}")
        return
    out = layout.dynamic_responses(judge, spec.name, condition)
    log = layout.dynamic_log("sample", judge, spec.name, condition)
    sampled = sample_second_turn(
        prompts,
        spec,
        CallOptions(
            cache_path=store,
            max_cost_usd=settings.max_cost_usd,
            run_log=log,
            progress=f"dynamic_sample {judge}/{spec.name}/{condition}",
        ),
        origin=display_path(source),
        batch=settings.batching,
    )
    write_parquet(sampled.responses, out)
    calls_out = layout.dynamic_calls("dynamic_sample", judge, spec.name, condition)
    write_parquet(sampled.calls, calls_out)
    facts = read_run_log(log)
    print(
        f"dynamic_sample {judge}/{spec.name}/{condition}: {sampled.responses.height} second "
        f"replies ({answer_sources(facts)}, ${facts['cost_usd_this_run']:.4f}) -> {out}"
    )


if __name__ == "__main__":
    launch(main)
