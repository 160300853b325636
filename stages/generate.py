"""generate: a generator model writes candidate scenarios for cells of the catalog.

python stages/generate.py                                  # conf/generation/default.yaml
python stages/generate.py generate.generator=gemini_pro generate.structured_output=json_schema \
    generate.cells.mode=per_norm generate.cells.per_norm=2

Writes data/generation/candidates.parquet (every candidate, valid or not, with its
reasons) and reports/generation/generate.json (counts and rejection reasons).
"""

import hydra
from omegaconf import DictConfig

from losona.catalog import load_catalog
from losona.cli import launch, reports_user_errors
from losona.config import chosen
from losona.files import write_json, write_parquet
from losona.generation.cells import plan_slots
from losona.generation.generate import generate_candidates, generation_summary, generator_spec
from losona.generation.settings import load_model
from losona.layout import RunLayout
from losona.models import CallOptions


@hydra.main(version_base="1.3", config_path="../conf", config_name="config")
@reports_user_errors
def main(cfg: DictConfig) -> None:
    settings = chosen(cfg, "generation").generate
    layout = RunLayout(chosen(cfg, "paths"))
    files = layout.generation
    catalog = load_catalog()
    slots = plan_slots(settings.cells, catalog, settings.candidates_per_cell, settings.seed)
    spec = generator_spec(
        load_model(settings.generator, settings.params), settings.structured_output
    )
    spec.check_credentials()  # before any work: a missing key fails at once
    candidates = generate_candidates(
        slots,
        spec,
        catalog,
        CallOptions(
            cache_path=layout.call_cache,
            max_cost_usd=settings.max_cost_usd,
            # Beside the table, not in it: latency, cache hits and spend differ between runs.
            run_log=files.run_logs / "generate.log.json",
            progress=f"generate {spec.name}",
        ),
    )
    summary = generation_summary(candidates, spec, settings)
    write_parquet(candidates, files.candidates)
    write_json(summary, files.generate_summary)
    print(
        f"generate: {summary['candidates']} candidates for {len({s.cell for s in slots})} "
        f"cells from {spec.name} ({spec.model}): {summary['valid']} valid, "
        f"{summary['invalid']} rejected by validation ({summary['rejected_percent']}%), "
        f"${summary['cost_usd']:.4f} -> {files.candidates}"
    )
    for kind, count in sorted(summary["rejected_for"].items(), key=lambda item: -item[1]):
        print(f"  rejected for {kind}: {count}")


if __name__ == "__main__":
    launch(main)
