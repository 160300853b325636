"""A published run's settings as its stages take them (a `Settings`: command.py): what its
provenance records, each model and judge as its config stage checked it. Reproduce reruns
the stages with them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from losona.audit.settings import AuditSettings, DeterminismSettings, SheetSettings
from losona.core.config import AggregateSettings, ControlsSettings, SamplingSettings, option
from losona.core.errors import LosonaError
from losona.core.files import display_path
from losona.core.layout import RunLayout
from losona.dynamic.settings import DynamicSettings
from losona.pipeline.command import Settings
from losona.provenance.record import recorded_config

# The dynamic extension's settings while it is off: no judge, so no cell.
DYNAMIC_OFF = DynamicSettings(
    judges=(), models=(), conditions=(), source="scripted", group_model="smollm2"
)


class NoRepository:
    """The settings of no repository: the dynamic extension off, nothing else given."""

    def group(self, group: str) -> Any:
        if group == "dynamic":
            return DYNAMIC_OFF
        raise LosonaError(f"reproduce has no '{group}' settings to run this run's stages with")

    def option(self, group: str, name: str) -> Any:
        return option(group, name)


class RecordedSettings:
    """The sweep, K and bootstrap a run's provenance records, and its checked configs; what
    the record does not hold (the dynamic turn) is `repository`'s. Stages given these make no
    new model call: the controls are judged again whatever they show, the audit re-judges
    nothing."""

    def __init__(
        self, layout: RunLayout, record: Mapping[str, Any], repository: Settings | None = None
    ) -> None:
        self.layout, self.record = layout, record
        self.repository = repository or NoRepository()
        trials = (record.get("sampling") or {}).get("trials")
        self.trials: int | None = trials if isinstance(trials, int) else None

    def group(self, group: str) -> Any:
        if group == "sweep":
            return {"panels": [], **self.record["sweep"]}
        if group == "aggregate":
            return AggregateSettings.from_config(
                self.record["aggregate"]["bootstrap"],
                origin=display_path(self.layout.provenance),
                key="aggregate.bootstrap",
            )
        if group == "sampling":
            trials = self.trials or self.repository.group("sampling").trials
            return SamplingSettings(trials=trials, dry_run=False, max_cost_usd=None)
        if group == "judge_controls":
            return ControlsSettings(judge_anyway=True)
        if group == "audit":
            no_rejudging = DeterminismSettings(repeats=0)
            return AuditSettings(export=False, sheet=SheetSettings(), determinism=no_rejudging)
        return self.repository.group(group)

    def option(self, group: str, name: str) -> Any:
        if group in ("model", "judge"):
            return recorded_config(self.layout, self.record, group, name)
        return option(group, name)
