"""dynamic_render: one cell's second-turn prompts, from its first turn's verdicts.

python stages/dynamic_render.py judge=lexicon model=smollm2 condition=naive
python stages/dynamic_render.py judge=lexicon model=smollm2 condition=naive \
    dynamic.source=simulated dynamic.group_model=smollm2

Reads data/verdicts/<judge>/<model>/<condition>.parquet (the first turn, judged) and the
dataset's follow-up material, and writes data/dynamic/<judge>/prompts/<model>/<condition>.parquet
(docs/dynamic.md). With dynamic.source=simulated the group model writes the follow-ups,
through the call cache, and its calls are written under paths.calls_dir; with
sampling.dry_run=true it prints what those calls would cost, and writes nothing.
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen, option
from losona.contracts import SCENARIO_SCHEMA, VERDICT_SCHEMA, scenarios_from_table
from losona.dynamic.render import GroupModel, first_turn, group_asks, render_cell
from losona.errors import LosonaError
from losona.files import display_path, read_parquet, write_parquet
from losona.layout import RunLayout
from losona.models import CallOptions, plan
from losona.provenance.call_files import call_store
from losona.scenarios.datasets import fetch_followups


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    layout = RunLayout(chosen(cfg, "paths"))
    settings = chosen(cfg, "dynamic")
    if "condition" not in cfg:
        raise LosonaError(
            "dynamic_render needs one cell, e.g. judge=lexicon model=smollm2 condition=naive"
        )
    judge, model = chosen(cfg, "judge").name, chosen(cfg, "model").name
    condition = chosen(cfg, "condition").name
    out = layout.dynamic_prompts(judge, model, condition)
    group = None
    sampling = chosen(cfg, "sampling")
    if settings.source == "simulated":
        spec = option("model", settings.group_model)
        store = call_store(layout)
        if not sampling.dry_run and not (store.published and store.published.expected):
            spec.check_credentials()  # before any work; a published run needs no key
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
    followups = fetch_followups(chosen(cfg, "dataset"))
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


if __name__ == "__main__":
    launch(main)
