"""Every option of every config group composes, and Hydra leaves the filesystem alone."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CONF_DIR, run_stage
from omegaconf import DictConfig, OmegaConf

GROUPS = ["dataset", "model", "judge", "condition", "paths", "experiment"]


def options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


@pytest.mark.parametrize(
    "override",
    [
        f"{group}={option}" if group != "experiment" else f"+experiment={option}"
        for group in GROUPS
        for option in options(group)
    ],
)
def test_every_option_composes(make_cfg: Callable[..., DictConfig], override: str) -> None:
    extra = ["dataset.path=x.jsonl"] if override == "dataset=local" else []
    cfg = make_cfg(override, *extra)
    group, option = override.lstrip("+").split("=")
    if group not in ("paths", "experiment"):
        assert cfg[group].name == option
    # Resolving everything catches broken interpolations (mandatory values aside).
    OmegaConf.to_container(cfg, resolve=True, throw_on_missing=False)


def test_sweep_comes_from_params_yaml(workdir: Path, make_cfg: Callable[..., DictConfig]) -> None:
    (workdir / "params.yaml").write_text(
        "dataset: bundled\nsweep:\n  models: [m1]\n  conditions: [naive]\n  judges: [j1]\n"
    )
    cfg = make_cfg("sweep.conditions=${dvc_param:sweep.conditions}")
    assert list(cfg.sweep.models) == ["m1"]
    assert list(cfg.sweep.judges) == ["j1"]


def test_stage_scripts_create_no_hydra_folders(workdir: Path) -> None:
    result = run_stage("fetch", "sweep.conditions=[naive]")
    assert result.returncode == 0, result.stderr
    created = sorted(p.name for p in workdir.iterdir())
    assert created == ["conf", "data", "params.yaml"]
    assert sorted(p.name for p in (workdir / "data").iterdir()) == ["scenarios.parquet"]
