"""The files audit writes under paths.audit_dir (a report bundle), and reading them back."""

from __future__ import annotations

from pathlib import Path

import polars as pl

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
from losona.results.bundle import BundleFiles, ReportBundle

# The determinism audit's files: figures it made by calling the judges again, when opted in.
DETERMINISM_FILES = ("determinism.csv", "determinism_flips.csv")
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
AUDIT = BundleFiles("audit", AUDIT_FILES, metrics_keys=("labels", "settings"))


def read_audit(audit_dir: str | Path) -> ReportBundle:
    """The audit as it was written, refusing a missing file or a changed shape."""
    return ReportBundle.read(audit_dir, AUDIT)
