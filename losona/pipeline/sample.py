"""The sample stage as functions: one cell sampled (or priced, as a dry run), or the whole
sweep priced."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from omegaconf import DictConfig

from losona.core.config import ConditionConfig, ModelSpec, SamplingSettings, chosen, option, plain
from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.core.formatting import counted
from losona.core.layout import RunLayout
from losona.models import CallOptions, CallPlan, answer_sources, read_run_log
from losona.models.batch import batch_provider
from losona.models.call_cache import needs_key
from losona.models.call_store import call_store
from losona.models.runlog import record_table
from losona.pipeline.command import Cell, ComposedSettings, Settings, cell_of
from losona.sampling.prompts import DatasetSource, condition_rows, dry_run_prompts
from losona.sampling.sample import plan_sampling, sample_cell


def run_sample(
    settings: SamplingSettings,
    layout: RunLayout,
    spec: ModelSpec,
    condition: ConditionConfig,
    dataset: DatasetSource,
) -> None:
    """sample: one model's K responses to every prompt of one condition, with their calls;
    with settings.dry_run, what they would cost, and nothing written."""
    name = condition.name
    if settings.batch:
        batch_provider(spec, settings.batching)  # a provider without batch jobs fails first
    store = call_store(layout)
    if not settings.dry_run and needs_key(store):
        spec.check_credentials()
    if settings.dry_run:
        prompts = dry_run_prompts(layout, [name], dataset)
        found = plan_sampling(prompts, spec, name, settings.trials, cache_path=store)
        print(f"sample (dry run, no calls made): {name}, {found.describe()}")
        return
    prompts = condition_rows(layout, [name])
    out = layout.responses(spec.name, name)
    log = layout.sample_log(spec.name, name)
    sampled = sample_cell(
        prompts,
        spec,
        name,
        settings.trials,
        CallOptions(
            cache_path=store,
            max_cost_usd=settings.max_cost_usd,
            # Beside the table, not in it: latency, cache hits and spend differ between runs.
            run_log=log,
            progress=f"sample {spec.name}/{name}",
        ),
        batch=settings.batching,
    )
    # The prompts are not needed to write the tables: let them go first. Each table is
    # made from the call cache a chunk at a time as it is written.
    del prompts
    write_parquet(sampled.responses, out)
    record_table(log, out)
    write_parquet(sampled.calls, layout.sample_calls(spec.name, name))
    facts = read_run_log(log)
    print(
        f"sample: {sampled.responses.height} responses ({spec.name}, {name}, "
        f"{counted(settings.trials, 'trial')}; {answer_sources(facts)}, "
        f"${facts['cost_usd_this_run']:.4f}) -> {out}"
    )
    if "batch" in facts:
        batch = facts["batch"]
        print(
            f"sample: {batch['completed']} of them answered by batch job(s) "
            f"{', '.join(batch['batch_ids']) or '(none needed)'}, "
            f"${batch['cost_usd_batch_price']:.4f} at batch prices"
        )


def run_sample_dry_sweep(
    settings: SamplingSettings,
    layout: RunLayout,
    specs: Sequence[ModelSpec],
    conditions: Sequence[str],
    dataset: DatasetSource,
) -> None:
    """sample, dry run of the sweep: what every cell (specs x conditions) would cost."""
    prompts = dry_run_prompts(layout, list(conditions), dataset)
    store = call_store(layout)
    cells = [
        (condition, plan_sampling(prompts, spec, condition, settings.trials, cache_path=store))
        for spec in specs
        for condition in conditions
    ]
    for condition, found in cells:
        print(f"sample (dry run, no calls made): {condition}, {found.describe()}")
    total = CallPlan.total([found for _, found in cells])
    print(f"sample (dry run, no calls made): the sweep, {total.describe()}")


def run_sample_command(cfg: DictConfig) -> None:
    """sample as its command line asks: one cell (a condition named), or with
    sampling.dry_run and no condition, every cell of the sweep's estimate."""
    layout = RunLayout(chosen(cfg, "paths"))
    settings = chosen(cfg, "sampling")
    if "condition" in cfg:
        run(ComposedSettings(cfg), layout, cell_of(cfg, "sample", CELL))
    elif settings.dry_run:  # a condition must have its config
        sweep = plain(cfg.sweep)
        specs = [option("model", name) for name in sweep["models"]]
        conditions = [option("condition", name).name for name in sweep["conditions"]]
        dataset = functools.partial(chosen, cfg, "dataset")  # read only before fetch
        run_sample_dry_sweep(settings, layout, specs, conditions, dataset)
    else:
        raise LosonaError(
            "sample needs one condition, e.g. python stages/sample.py condition=naive "
            "(or sampling.dry_run=true, without a condition, for the whole sweep's cost)"
        )


CELL: dict[str, str] = {"model": "model", "condition": "condition"}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_sample(
        settings.group("sampling"),
        layout,
        settings.option("model", cell["model"]),
        settings.option("condition", cell["condition"]),
        dataset=lambda: settings.group("dataset"),  # read only by a dry run before fetch
    )
