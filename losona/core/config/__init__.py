"""Every config group's typed schema, and the one checker that reads config into them.

Stage scripts compose the config with Hydra, then ask this module for the groups they use
(`chosen(cfg, "sampling")`), or read one option of a group on its own (`option("model",
"gpt_5_5")`). Either way the node is checked here, once, against a pydantic schema, and
the library receives a typed, frozen object. A wrong value is refused with one message:

    <file or command-line override>: '<dotted.key>': expected <what>, found <value>

Numbers are never NaN or infinite (a NaN cost cap would compare false and never trip),
and unknown keys are refused, so a misspelt setting cannot silently do nothing.

The sweep (which models, conditions and judges a run covers) lives in params.yaml,
because dvc.yaml expands its stage matrices from there. The Hydra config reads it through
the `dvc_param` resolver (registered on import), so stage scripts and DVC see the same
sweep.

One module a job: `loading` (where config lives, params.yaml's resolver, an option's file),
`values` (the value types and the base `Schema`), `schemas` (the first turn's groups'
schemas; a stage family's own sit in its package: `audit/settings.py`, ...),
`checker` (the one checker, pydantic's errors as one-line messages), `origins` (which
file or override each value came from), `reading` (a group of the composed config, or one
option, checked). Import from here: `from losona.core.config import ModelSpec, chosen`; a
family's settings from its package: `from losona.dynamic.settings import DynamicSettings`.
"""

from __future__ import annotations

from losona.core.config.loading import (
    CONF_DIR,
    PANELS_FILE,
    PARAMS_FILE,
    RUN_FILE,
    load_option,
    option_file,
    plain,
)
from losona.core.config.origins import Sources, origin_of
from losona.core.config.reading import GROUPS, chosen, compose_paths, option
from losona.core.config.schemas import (
    AggregateSettings,
    BatchSettings,
    ConditionConfig,
    ControlsSettings,
    DatasetConfig,
    JudgeConfig,
    JudgeKindSettings,
    ModelSpec,
    Paths,
    SamplingSettings,
    config_record,
    judge_kind_settings,
    without_password,
)

__all__ = [
    "CONF_DIR",
    "GROUPS",
    "PANELS_FILE",
    "PARAMS_FILE",
    "RUN_FILE",
    "AggregateSettings",
    "BatchSettings",
    "ConditionConfig",
    "ControlsSettings",
    "DatasetConfig",
    "JudgeConfig",
    "JudgeKindSettings",
    "ModelSpec",
    "Paths",
    "SamplingSettings",
    "Sources",
    "chosen",
    "compose_paths",
    "config_record",
    "judge_kind_settings",
    "load_option",
    "option",
    "option_file",
    "origin_of",
    "plain",
    "without_password",
]
