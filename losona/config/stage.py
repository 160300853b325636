"""The config stage as a function: a model or judge option of the sweep as the run uses it,
checked, in a file of its own (data/configs/<group>/<name>.json).

stages/config.py composes the config, finds the groups named on its command line, checks
each with `chosen` and calls this; tests call it in-process with a composed config.
"""

from __future__ import annotations

from losona.config import JudgeConfig, ModelSpec, config_record
from losona.files import write_json
from losona.layout import RunLayout


def run_config(config: ModelSpec | JudgeConfig, layout: RunLayout) -> None:
    """config: one checked model or judge option, with its defaults and without a password,
    as JSON in its group's folder."""
    group = "model" if isinstance(config, ModelSpec) else "judge"
    out = layout.config(group, config.name)
    write_json(config_record(config), out)
    print(f"config: {group} {config.name} -> {out}")
