"""sample: K responses from one model to every prompt of one condition.

python stages/sample.py condition=naive                        # smollm2, the offline default
python stages/sample.py model=claude_opus condition=style_adaptation
python stages/sample.py model=claude_opus condition=naive sampling.dry_run=true
python stages/sample.py +experiment=paper sampling.dry_run=true    # every cell of the sweep
python stages/sample.py model=gpt_5_5 condition=naive sampling.batch=true   # a batch job
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import SamplingSettings, chosen, option, plain
from losona.errors import LosonaError
from losona.files import write_parquet
from losona.layout import RunLayout
from losona.models import CallOptions, CallPlan, answer_sources, read_run_log
from losona.models.batch import batch_provider
from losona.provenance.call_files import call_store
from losona.sampling.prompts import condition_rows, dry_run_prompts
from losona.sampling.sample import plan_sampling, plan_sweep, sample_cell


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    settings = chosen(cfg, "sampling")
    if "condition" not in cfg:
        if settings.dry_run:
            dry_run_sweep(cfg, layout, settings)
            return
        raise LosonaError(
            "sample needs one condition, e.g. python stages/sample.py condition=naive "
            "(or sampling.dry_run=true, without a condition, for the whole sweep's cost)"
        )
    # One cell: the model and the condition chosen on the command line.
    spec = chosen(cfg, "model")
    condition = chosen(cfg, "condition").name
    if settings.batch:
        batch_provider(spec, settings.batching)  # a provider without batch jobs fails first
    store = call_store(layout)
    if not settings.dry_run and not (store.published and store.published.expected):
        # Before any work: a missing key fails at once. A run with published calls reruns
        # without one; then only a call that must really be made asks for the key.
        spec.check_credentials()
    if settings.dry_run:
        prompts = dry_run_prompts(cfg, layout, [condition])
        found = plan_sampling(prompts, spec, condition, settings.trials, cache_path=store)
        print(f"sample (dry run, no calls made): {condition}, {found.describe()}")
        return
    prompts = condition_rows(layout, [condition])
    out = layout.responses(spec.name, condition)
    log = layout.sample_log(spec.name, condition)
    sampled = sample_cell(
        prompts,
        spec,
        condition,
        settings.trials,
        CallOptions(
            cache_path=store,
            max_cost_usd=settings.max_cost_usd,
            # Beside the table, not in it: latency, cache hits and spend differ between runs.
            run_log=log,
            progress=f"sample {spec.name}/{condition}",
        ),
        batch=settings.batching,
    )
    # The prompts are not needed to write the tables: let them go first. Each table is
    # made from the call cache a chunk at a time as it is written.
    del prompts
    write_parquet(sampled.responses, out)
    write_parquet(sampled.calls, layout.sample_calls(spec.name, condition))
    facts = read_run_log(log)
    print(
        f"sample: {sampled.responses.height} responses ({spec.name}, {condition}, "
        f"{settings.trials} trials; {answer_sources(facts)}, "
        f"${facts['cost_usd_this_run']:.4f}) -> {out}"
    )
    if "batch" in facts:
        batch = facts["batch"]
        print(
            f"sample: {batch['completed']} of them answered by batch job(s) "
            f"{', '.join(batch['batch_ids']) or '(none needed)'}, "
            f"${batch['cost_usd_batch_price']:.4f} at batch prices"
        )


def dry_run_sweep(cfg: DictConfig, layout: RunLayout, settings: SamplingSettings) -> None:
    """Print what every cell of the sweep (sweep.models x sweep.conditions) would cost."""
    sweep = plain(cfg.sweep)
    specs = [option("model", name) for name in sweep["models"]]
    # A condition must have its config, as render requires.
    conditions = [option("condition", name).name for name in sweep["conditions"]]
    prompts = dry_run_prompts(cfg, layout, conditions)
    cells = plan_sweep(prompts, specs, conditions, settings.trials, cache_path=call_store(layout))
    for condition, found in cells:
        print(f"sample (dry run, no calls made): {condition}, {found.describe()}")
    total = CallPlan.total([found for _, found in cells])
    print(f"sample (dry run, no calls made): the sweep, {total.describe()}")


if __name__ == "__main__":
    launch(main)
