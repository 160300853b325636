"""judge_controls: one judge scores every scenario's example compliant and breaching response.

python stages/judge_controls.py                    # the default judge
python stages/judge_controls.py judge=gemini_pro

Writes data/judge_controls/<judge>.parquet (one verdict per example) and
reports/judge_controls/<judge>.json (how many it got right, a DVC metric), so a broken
judge shows itself at once. Every judge cell depends on its judge's controls, so DVC runs
them first; a judge that cannot judge them (most unscored, or one verdict for every
example) stops the run here, before its cells are paid for, and writes nothing, unless
judge_controls.judge_anyway=true (conf/run.yaml). Its calls stay in the call cache.
"""

import hydra
from omegaconf import DictConfig

from losona.cli import launch, reports_user_errors
from losona.config import chosen
from losona.contracts import SCENARIO_SCHEMA
from losona.errors import LosonaError
from losona.files import read_parquet, write_json, write_parquet
from losona.judges.health import TRUSTWORTHY_PERCENT, cannot_judge
from losona.judges.run import (
    call_sources,
    control_summary,
    judge_calls,
    judge_controls,
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
    config = chosen(cfg, "judge")
    name = config.name
    judge = make_judge(
        config,
        CallOptions(
            cache_path=call_store(layout),
            run_log=layout.controls_log(name),
        ),
    )
    scenarios = read_parquet(layout.scenarios, SCENARIO_SCHEMA, made_by="fetch")
    controls = judge_controls(scenarios, judge, name)
    summary = control_summary(controls)
    out = layout.controls(name)
    signs = cannot_judge(controls)
    if signs and not chosen(cfg, "judge_controls").judge_anyway:
        raise LosonaError(
            f"judge {name} ({judge.model}) cannot judge: {'; '.join(signs)} "
            f"({status_counts(controls)}). Its cells would cost their calls for verdicts "
            "that measure the judge, so the run stops before them; nothing was written, and "
            "the calls made are kept in the call cache. Try structured_output in "
            f"conf/judge/{name}.yaml (docs/judges.md), or a larger judge model; to judge "
            "with it anyway: dvc exp run -S conf/run.yaml:judge_controls.judge_anyway=true"
        )
    write_parquet(controls, out)
    write_parquet(judge_calls(judge), layout.controls_calls(name))
    # Keyed by the judge, so `dvc exp show` puts several judges' figures side by side.
    write_json({name: summary}, layout.controls_summary(name))
    every, compliant, breaching = summary["all"], summary["compliant"], summary["breaching"]
    print(
        f"judge_controls {name} ({judge.model}): {every['right']} of {every['items']} right "
        f"({every['accuracy']}%): compliant examples {compliant['right']}/{compliant['items']}, "
        f"breaching examples {breaching['right']}/{breaching['items']}; "
        f"{status_counts(controls)} -> {out}"
    )
    if (sources := call_sources(judge)) is not None:
        print(f"judge_controls {name}: answers: {sources}")
    for note in unscored_notes(controls):
        print(f"note: {note}")
    if (every["accuracy"] or 0.0) < TRUSTWORTHY_PERCENT:
        print(
            f"warning: judge {name} got fewer than {TRUSTWORTHY_PERCENT:g}% of its controls "
            f"right; check its config and {out} before trusting its verdicts"
        )


if __name__ == "__main__":
    launch(main)
