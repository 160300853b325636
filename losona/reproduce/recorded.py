"""A published run's settings as its stages take them (losona/pipeline/command.py): what
its provenance records, and each model and judge as its config stage checked it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from losona.audit.settings import AuditSettings, DeterminismSettings, SheetSettings
from losona.core.config import (
    AggregateSettings,
    ControlsSettings,
    JudgeConfig,
    ModelSpec,
    SamplingSettings,
    option,
)
from losona.core.errors import LosonaError
from losona.core.files import display_path
from losona.core.layout import RunLayout
from losona.dynamic.settings import DynamicSettings
from losona.pipeline.command import Settings

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
    """The settings a published run records: its sweep, K and bootstrap from its provenance,
    each model and judge as its config stage checked it. What the record does not hold (the
    dynamic turn and its dataset) is this repository's (`repository`). Stages given these
    make no new model call: the validity controls are judged again whatever they show, and
    the audit re-judges nothing."""

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


def read_provenance(path: str | Path) -> dict[str, Any]:
    """The run's provenance record, refusing a missing or malformed file."""
    path = Path(path)
    if not path.is_file():
        raise LosonaError(
            f"{display_path(path)} not found: run the provenance stage first "
            "(python stages/provenance.py, or dvc repro)"
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LosonaError(f"{display_path(path)}: not a JSON file ({exc})") from None
    for key in ("dataset", "templates", "sweep", "judges", "aggregate"):
        if not isinstance(record, dict) or not isinstance(record.get(key), dict):
            raise LosonaError(
                f"{display_path(path)}: no '{key}' section; rerun the provenance stage"
            )
    checked: dict[str, Any] = record
    return checked


def recorded_config(layout: RunLayout, record: Mapping[str, Any], group: str, name: str) -> Any:
    """A model or judge option as the run used it: the config stage's checked copy
    (data/configs/<group>/<name>.json), else what the provenance records of it; never
    conf/ as it is now."""
    path = layout.config(group, name)
    schema = ModelSpec if group == "model" else JudgeConfig
    key = f"{group}s"
    if path.is_file():
        node, origin = json.loads(path.read_text(encoding="utf-8")), display_path(path)
    elif (node := record.get(key, {}).get(name)) is not None:
        origin = f"{display_path(layout.provenance)} ({key}.{name})"
    else:
        raise LosonaError(
            f"{display_path(layout.provenance)}: no '{key}.{name}' and no {display_path(path)}: "
            "the run does not record the config it used; rerun the config and provenance stages"
        )
    return schema.from_config(_settings(node, schema), origin)


def _settings(node: Mapping[str, Any], schema: Any) -> dict[str, Any]:
    """A recorded config's settings: what the schema has and a value was given for (a record
    writes out unset ones as null and adds facts of its own, such as a judge's versions)."""
    settings = {k: v for k, v in node.items() if k in schema.model_fields and v is not None}
    if isinstance(settings.get("model"), Mapping):  # a judge's model
        settings["model"] = _settings(settings["model"], ModelSpec)
    return settings
