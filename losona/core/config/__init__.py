"""Every config group's typed schema, and the one checker that reads config into them.

A stage asks for a group of the composed config (`chosen(cfg, "sampling")`) or one option
on its own (`option("model", "gpt_5_5")`) and gets a frozen, checked object; a wrong value
is one line: `<file or override>: '<dotted.key>': expected <what>, found <value>`.
Importing it registers the `dvc_param` resolver, through which Hydra reads params.yaml's
sweep, so stage scripts and DVC see the same sweep.
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
from losona.core.config.reading import GROUPS, chosen, compose_config, compose_paths, option
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
    "compose_config",
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
