"""The dynamic_sample stage as a function: the subject's second reply to every second-turn
prompt of one cell.
"""

from __future__ import annotations

from losona.core.config import ModelSpec, SamplingSettings
from losona.core.files import display_path, read_parquet, write_parquet
from losona.core.layout import RunLayout
from losona.dynamic.sample import sample_second_turn, second_turn_requests
from losona.dynamic.tables import DYNAMIC_PROMPT_SCHEMA
from losona.models import CallOptions, answer_sources, plan, read_run_log
from losona.models.call_cache import needs_key
from losona.models.call_store import call_store
from losona.pipeline.command import Cell, Settings


def run_dynamic_sample(
    settings: SamplingSettings,
    layout: RunLayout,
    judge: str,
    spec: ModelSpec,
    condition: str,
) -> None:
    """dynamic_sample: one (judge, model, condition) cell's second replies, with their
    calls; with settings.dry_run, what those calls would cost, nothing written."""
    store = call_store(layout)
    if not settings.dry_run and needs_key(store):
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


CELL: dict[str, str] = {"judge": "judge", "model": "model", "condition": "condition"}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    spec = settings.option("model", cell["model"])
    run_dynamic_sample(settings.group("sampling"), layout, cell["judge"], spec, cell["condition"])
