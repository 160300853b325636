"""What the audit reads of a run, assembled one way for the audit stage and reproduce."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from losona.audit.comparison import judge_names
from losona.audit.self_preference import Families
from losona.judges.verdicts import load_verdicts
from losona.results.presentation import Presentation, configured, judge_kinds, presentation_for


@dataclass(frozen=True)
class AuditInputs:
    """A run's verdicts as the audit reads them, with the sweep's order and each judge's kind."""

    verdicts: pl.DataFrame
    presentation: Presentation
    judges: list[str]  # in the sweep's order
    kinds: dict[str, str]  # judge -> its kind (losona/judges/kinds/)
    families: Families  # each judge's and subject's model family (conf/judge/, conf/model/)


def audit_inputs(
    verdicts_dir: str | Path,
    sweep: Mapping[str, Sequence[str]],
    recorded_kinds: Mapping[str, str] | None = None,
) -> AuditInputs:
    """Assemble the audit's inputs one way, for the audit stage and for reproduce's check; a
    judge's kind is the recorded one (a run's provenance) when given, else its config's ("llm"
    for a judge whose config is gone, as the aggregate reads it)."""

    verdicts = load_verdicts(verdicts_dir)
    presentation = presentation_for(verdicts, sweep)
    judges = judge_names(verdicts, presentation)
    recorded = recorded_kinds or {}
    kinds = {j: recorded.get(j) or kind for j, kind in judge_kinds(judges).items()}
    models = verdicts["subject_model"].unique().sort().to_list()
    # None where a config names no family, or is gone (a published run's judge or model).
    families = Families(
        judges={j: getattr(configured("judge", j), "family", None) for j in judges},
        models={m: getattr(configured("model", m), "family", None) for m in models},
    )
    return AuditInputs(verdicts, presentation, judges, kinds, families)
