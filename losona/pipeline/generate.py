"""The generate stage as a function: the generator model's candidate scenarios for the
selected cells of the catalog, every one checked and kept.
"""

from __future__ import annotations

from losona.core.catalog import load_catalog
from losona.core.files import write_json, write_parquet
from losona.core.layout import RunLayout
from losona.generation.cells import plan_slots
from losona.generation.generate import generate_candidates, generation_summary, generator_spec
from losona.generation.settings import GenerateSettings, load_model
from losona.models import CallOptions


def run_generate(settings: GenerateSettings, layout: RunLayout) -> None:
    """generate: the candidate table (every candidate, valid or not, with its reasons) and
    its summary (counts and rejection reasons)."""
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
