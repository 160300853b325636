"""The dynamic_render stage as a function: one cell's second-turn prompts, from its first
turn's verdicts.
"""

from __future__ import annotations

from losona.core.config import DatasetConfig, SamplingSettings, option
from losona.core.contracts import SCENARIO_SCHEMA, VERDICT_SCHEMA, scenarios_from_table
from losona.core.files import display_path, read_parquet, write_parquet
from losona.core.layout import RunLayout
from losona.dynamic.render import GroupModel, first_turn, group_asks, render_cell
from losona.dynamic.settings import DynamicSettings
from losona.models import CallOptions, plan
from losona.models.call_cache import needs_key
from losona.models.call_store import call_store
from losona.pipeline.command import Cell, Settings
from losona.scenarios.datasets import fetch_followups


def run_dynamic_render(
    settings: DynamicSettings,
    layout: RunLayout,
    cell: tuple[str, str, str],
    sampling: SamplingSettings,
    dataset: DatasetConfig,
) -> None:
    """dynamic_render: the second-turn prompts of one (judge, model, condition) cell, and the
    group model's calls when it writes the follow-ups; with sampling.dry_run, what those
    calls would cost, nothing written."""
    judge, model, condition = cell
    out = layout.dynamic_prompts(judge, model, condition)
    group = None
    if settings.source == "simulated":
        spec = option("model", settings.group_model)
        store = call_store(layout)
        if not sampling.dry_run and needs_key(store):
            spec.check_credentials()
        group = GroupModel(
            spec,
            CallOptions(
                cache_path=store,
                max_cost_usd=sampling.max_cost_usd,
                run_log=layout.dynamic_log("render", judge, model, condition),
                progress=f"dynamic_render {judge}/{model}/{condition} (group model)",
            ),
        )
    verdicts_path = layout.verdicts(judge, model, condition)
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    verdicts = read_parquet(verdicts_path, VERDICT_SCHEMA, made_by="judge")
    followups = fetch_followups(dataset)
    if sampling.dry_run:
        if group is None:
            print("dynamic_render (dry run): scripted follow-ups, no model call")
            return
        trials = first_turn(
            verdicts,
            scenarios,
            judge=judge,
            model=model,
            condition=condition,
            origin=display_path(verdicts_path),
        )
        by_id = {s.scenario_id: s for s in scenarios_from_table(scenarios)}
        asks = group_asks(followups, by_id, trials)
        found = plan(
            group.spec, [request for *_, request in asks], cache_path=group.options.cache_path
        )
        print(f"dynamic_render (dry run, no calls made): the group model, {found.describe()}")
        return
    rendered = render_cell(
        scenarios,
        verdicts,
        judge=judge,
        model=model,
        condition=condition,
        followups=followups,
        group=group,
        origin=display_path(verdicts_path),
    )
    write_parquet(rendered.prompts, out)
    calls_out = layout.dynamic_calls("dynamic_group", judge, model, condition)
    write_parquet(rendered.calls, calls_out)
    counts = rendered.prompts.group_by("status").len().sort("status").rows()
    print(
        f"dynamic_render {judge}/{model}/{condition} ({settings.source}): "
        f"{', '.join(f'{n} {status}' for status, n in counts)} -> {out}"
    )


CELL: dict[str, str] = {"judge": "judge", "model": "model", "condition": "condition"}


def run(settings: Settings, layout: RunLayout, cell: Cell) -> None:
    """The stage with `settings` (losona/pipeline/command.py) on `cell`."""
    run_dynamic_render(
        settings.group("dynamic"),
        layout,
        (cell["judge"], cell["model"], cell["condition"]),
        settings.group("sampling"),
        settings.group("dataset"),
    )
