"""The files audit writes under paths.audit_dir, written and read back."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from losona.audit.run import Audit
from losona.audit.tables import (
    CONTROL_MISS_SCHEMA,
    CONTROL_SUMMARY_SCHEMA,
    CORRECTED_DELTA_SCHEMA,
    CORRECTED_SCHEMA,
    CORRECTION_SCHEMA,
    DETERMINISM_FLIP_SCHEMA,
    DETERMINISM_SCHEMA,
    HUMAN_AGREEMENT_SCHEMA,
    HUMAN_ITEM_SCHEMA,
    JUDGE_PAIR_SCHEMA,
    PAIR_BREAKDOWN_SCHEMA,
    SELF_PREFERENCE_SCHEMA,
    STABILITY_SCHEMA,
)
from losona.files import read_csv, read_json_object, require_outputs, write_json, write_text

# The files audit writes under paths.audit_dir (dvc.yaml lists the same names).
AUDIT_FILES: dict[str, pl.Schema] = {
    "judge_pairs.csv": JUDGE_PAIR_SCHEMA,
    "judge_pair_breakdown.csv": PAIR_BREAKDOWN_SCHEMA,
    "headline_stability.csv": STABILITY_SCHEMA,
    "human_agreement.csv": HUMAN_AGREEMENT_SCHEMA,
    "human_items.csv": HUMAN_ITEM_SCHEMA,
    "determinism.csv": DETERMINISM_SCHEMA,
    "determinism_flips.csv": DETERMINISM_FLIP_SCHEMA,
    "controls.csv": CONTROL_SUMMARY_SCHEMA,
    "control_misses.csv": CONTROL_MISS_SCHEMA,
    "correction.csv": CORRECTION_SCHEMA,
    "corrected.csv": CORRECTED_SCHEMA,
    "corrected_deltas.csv": CORRECTED_DELTA_SCHEMA,
    "self_preference.csv": SELF_PREFERENCE_SCHEMA,
}
METRICS = "metrics.json"


def write_audit(result: Audit, audit_dir: str | Path) -> None:
    """Write every audit file under `audit_dir`, each atomically."""
    root = Path(audit_dir)
    for name, df in result.tables.items():
        write_text(df.write_csv(), root / name)
    write_json(result.metrics, root / METRICS)


def read_audit(audit_dir: str | Path) -> Audit:
    """Read back what `write_audit` wrote, refusing a missing file or a changed shape."""
    root = Path(audit_dir)
    require_outputs(root, (*AUDIT_FILES, METRICS), stage="audit")
    remedy = "rerun audit"
    tables = {name: read_csv(root / name, schema, remedy) for name, schema in AUDIT_FILES.items()}
    metrics = read_json_object(root / METRICS, ["labels", "settings"], remedy)
    return Audit(tables, metrics)
