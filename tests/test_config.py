"""Every option of every config group composes, and Hydra leaves the filesystem alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import CONF_DIR, call_stage, run_stage
from omegaconf import DictConfig, OmegaConf

from losona.core.config import (
    GROUPS as SCHEMAS,
)
from losona.core.config import (
    AggregateSettings,
    DatasetConfig,
    JudgeConfig,
    ModelSpec,
    SamplingSettings,
    Sources,
    chosen,
    option,
    plain,
)
from losona.core.errors import LosonaError
from losona.core.layout import RunLayout
from losona.pipeline.config import run_config

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


@pytest.mark.slow  # starts a Python process
def test_stage_scripts_create_no_hydra_folders(workdir: Path) -> None:
    result = run_stage("fetch", "sweep.conditions=[naive]")
    assert result.returncode == 0, result.stderr
    created = sorted(p.name for p in workdir.iterdir())
    assert created == ["conf", "data", "params.yaml"]
    assert sorted(p.name for p in (workdir / "data").iterdir()) == ["scenarios.parquet"]


# -- the config stage -----------------------------------------------------------------------


def test_the_config_stage_writes_each_option_as_checked_without_its_password(
    make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = make_cfg(
        "model=local_openai",
        "model.api_base=http://user:s3cret@127.0.0.1:9/v1",
        "model.concurrency=2",
        "judge=offline_panel",
    )
    layout = RunLayout(chosen(cfg, "paths"))
    run_config(chosen(cfg, "model"), layout)
    run_config(chosen(cfg, "judge"), layout)
    model, judge = (
        Path("data/configs/model/local_openai.json"),
        Path("data/configs/judge/offline_panel.json"),
    )
    assert capsys.readouterr().out.splitlines() == [
        f"config: model local_openai -> {model}",
        f"config: judge offline_panel -> {judge}",
    ]
    assert "s3cret" not in model.read_text(encoding="utf-8")
    recorded = json.loads(model.read_text(encoding="utf-8"))
    assert recorded["api_base"] == "http://127.0.0.1:9/v1" and recorded["concurrency"] == 2
    # The file's values, and the defaults it leaves out filled in.
    assert recorded["max_attempts"] == 3 and recorded["endpoints"] == []
    assert json.loads(judge.read_text(encoding="utf-8"))["kind"] == "panel"


def test_the_config_script_records_only_the_groups_named_on_its_command_line(
    workdir: Path,
) -> None:
    refused = call_stage("config")
    assert refused.returncode == 2 and not (workdir / "data").exists()
    assert refused.stderr == (
        "error: config needs an option to record: model=<name> or judge=<name>\n"
    )
    done = call_stage("config", "judge=lexicon")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "config: judge lexicon -> data/configs/judge/lexicon.json\n"
    assert [p.name for p in (workdir / "data" / "configs").iterdir()] == ["judge"]


# -- the one checker ----------------------------------------------------------------------

NAMED_GROUPS = ["dataset", "model", "judge", "condition"]


@pytest.mark.parametrize(
    ("group", "option_name"), [(g, o) for g in NAMED_GROUPS for o in options(g)]
)
def test_every_shipped_option_passes_its_schema(
    workdir: Path, group: str, option_name: str
) -> None:
    if option_name == "local":  # its path is given on the command line (`???` in the file)
        with pytest.raises(LosonaError, match=r"'dataset\.path': expected a value"):
            option(group, option_name)
        return
    checked = option(group, option_name)
    assert isinstance(checked, SCHEMAS[group]) and checked.name == option_name


@pytest.mark.parametrize("group", ["sampling", "aggregate", "audit", "generation", "paths"])
def test_the_composed_nodes_pass_their_schemas(
    make_cfg: Callable[..., DictConfig], group: str
) -> None:
    assert isinstance(chosen(make_cfg(), group), SCHEMAS[group])


@pytest.mark.parametrize("dataset", ["bundled", "local", "losona_hf"])
def test_a_checked_dataset_records_the_settings_it_was_given(
    make_cfg: Callable[..., DictConfig], dataset: str
) -> None:
    # Provenance records the dataset's settings: checking them must not change the record.
    path = ["dataset.path=x.jsonl"] if dataset == "local" else []
    cfg = make_cfg(f"dataset={dataset}", *path)
    assert chosen(cfg, "dataset").settings() == plain(cfg.dataset)


def test_a_value_is_traced_to_the_override_the_overlay_or_the_file(workdir: Path) -> None:
    sources = Sources(
        {"model": "gpt_5_5", "experiment": "paper", "paths": "default"},
        ("model=gpt_5_5", "+experiment=paper", "aggregate.seed=-1", "~model.label"),
    )
    assert sources.where("aggregate.seed") == "the command line (aggregate.seed=...)"
    assert sources.where("model.label") == "the command line (~model.label)"
    # Choosing an option is not setting a value: the option's file holds it.
    assert sources.where("model.concurrency") == "conf/model/gpt_5_5.yaml"
    assert sources.where("sampling.trials") == "conf/experiment/paper.yaml"
    assert sources.where("sampling.dry_run") == "conf/config.yaml"
    assert sources.where("paths.reports_dir") == "conf/paths/default.yaml"
    # K and the subset come from the run file, unless the overlay or an option sets them.
    plain_run = Sources({"dataset": "bundled", "paths": "default"}, ())
    assert plain_run.where("sampling.trials") == "conf/run.yaml"
    assert plain_run.where("dataset.scenario_ids") == "conf/run.yaml"
    assert plain_run.where("dataset.kind") == "conf/dataset/bundled.yaml"


@pytest.mark.parametrize(
    ("value", "shown"), [(float("nan"), "nan"), (float("inf"), "inf"), (-float("inf"), "-inf")]
)
def test_no_number_read_from_config_may_be_nan_or_infinite(value: float, shown: str) -> None:
    nodes: list[tuple[type[Any], dict[str, Any], str]] = [
        (SamplingSettings, {"trials": 3, "dry_run": False, "max_cost_usd": value}, "max_cost_usd"),
        (AggregateSettings, {"resamples": 10, "seed": 0, "confidence": value}, "confidence"),
        (ModelSpec, {"name": "m", "model": "o/m", "backoff_s": value}, "backoff_s"),
        (ModelSpec, {"name": "m", "model": "o/m", "params": {"top_p": value}}, "params.top_p"),
        (JudgeConfig, {"name": "j", "kind": "lexicon", "max_cost_usd": value}, "max_cost_usd"),
        (DatasetConfig, {"name": "b", "kind": "bundled", "limit": value}, "limit"),
    ]
    for schema, node, key in nodes:
        with pytest.raises(LosonaError, match=rf"'{schema.KEY}\.{key}': expected .*found {shown}"):
            schema.from_config(node)


def test_the_schemas_of_every_group_are_listed_and_a_dataset_kind_asks_for_what_it_needs() -> None:
    # Every group is listed (iteration and size), each schema imported when first asked for.
    assert len(SCHEMAS) == len(list(SCHEMAS)) and set(GROUPS) - {"experiment"} <= set(SCHEMAS)
    with pytest.raises(LosonaError, match=r"'dataset\.path': expected a value \(kind local"):
        DatasetConfig.from_config({"name": "mine", "kind": "local"})
