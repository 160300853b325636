"""Where config lives and reading it raw: params.yaml through the `${dvc_param:...}`
resolver (registered on import), one option's file, a node as plain values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue

from losona.core.errors import LosonaError
from losona.core.files import read_yaml

# DVC runs every stage from the repository root, and Hydra never changes directory, so
# these are relative to the working directory, like every path in conf/paths/.
PARAMS_FILE = Path("params.yaml")
CONF_DIR = Path("conf")
ROOT_FILE = CONF_DIR / "config.yaml"
# K and the subset: the settings a run changes, kept apart from ROOT_FILE so that
# `dvc exp run -S conf/run.yaml:...` can rewrite them (DVC cannot rewrite a file that holds
# an interpolation it does not know, such as ROOT_FILE's ${dvc_param:...}).
RUN_FILE = CONF_DIR / "run.yaml"
# The judge panels of the sweep, apart from params.yaml (the file says why).
PANELS_FILE = CONF_DIR / "panels.yaml"


def dvc_param(key: str) -> Any:
    """The value at a dotted key of params.yaml (for the `${dvc_param:...}` resolver)."""
    try:
        value = at_dotted(read_yaml(PARAMS_FILE), key)
    except KeyError:
        raise LosonaError(f"{PARAMS_FILE}: missing key '{key}'") from None
    # Wrapped so that `cfg.sweep.conditions` works like any other config node.
    return OmegaConf.create(value) if isinstance(value, dict | list) else value


def at_dotted(value: Any, dotted: str) -> Any:
    """The value at a dotted key of nested mappings; KeyError when it is not there."""
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(dotted)
        value = value[part]
    return value


if not OmegaConf.has_resolver("dvc_param"):
    OmegaConf.register_new_resolver("dvc_param", dvc_param)


def load_option(group: str, name: str) -> DictConfig:
    """One option of a config group read on its own, e.g. conf/condition/naive.yaml."""
    path = option_file(group, name)
    if not path.is_file():
        raise LosonaError(
            f"no config '{group}/{name}' ({path} does not exist); available: {available(group)}"
        )
    config = OmegaConf.load(path)
    assert isinstance(config, DictConfig)
    return config


def option_file(group: str, name: str) -> Path:
    """Where an option of a group lives, e.g. conf/model/gpt_5_5.yaml."""
    return CONF_DIR / group / f"{name}.yaml"


def available(group: str) -> list[str]:
    """The options of a config group: the names a sweep may use."""
    return sorted(path.stem for path in (CONF_DIR / group).glob("*.yaml"))


def plain(config: Any) -> Any:
    """A config node as plain dicts and lists, every interpolation resolved, nothing missing."""
    if not OmegaConf.is_config(config):
        return config
    try:
        return OmegaConf.to_container(config, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as exc:
        raise LosonaError(
            f"missing required setting {exc.full_key}: give it on the command line, "
            f"e.g. {exc.full_key}=..."
        ) from None
