"""The fetch and render stages: their functions in-process, and their scripts as a user runs
them (outputs, overrides, and clean failures)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import call_stage, run_stage
from omegaconf import DictConfig

from losona.core.config import chosen
from losona.core.layout import RunLayout
from losona.pipeline.fetch import run_fetch
from losona.pipeline.render import run_render

Row = Callable[..., dict[str, Any]]


def test_fetch_then_render_writes_both_tables(workdir: Path) -> None:
    assert call_stage("fetch").returncode == 0
    result = call_stage("render")
    assert result.returncode == 0, result.stderr
    prompts = pl.read_parquet(workdir / "data" / "prompts.parquet")
    scenarios = pl.read_parquet(workdir / "data" / "scenarios.parquet")
    assert prompts.height == 4 * scenarios.height
    assert set(prompts["condition"]) == {
        "naive",
        "elicitor_only",
        "style_adaptation",
        "norm_informed",
    }


def test_render_one_condition_by_override(workdir: Path) -> None:
    call_stage("fetch")
    assert call_stage("render", "condition=norm_informed").returncode == 0
    prompts = pl.read_parquet(workdir / "data" / "prompts.parquet")
    assert set(prompts["condition"]) == {"norm_informed"}


def fetch_and_render(make_cfg: Callable[..., DictConfig]) -> None:
    """What `python stages/fetch.py` then `python stages/render.py` do, in this process."""
    cfg = make_cfg("sweep.conditions=[naive,norm_informed]")
    layout = RunLayout(chosen(cfg, "paths"))
    run_fetch(chosen(cfg, "dataset"), layout)
    run_render(["naive", "norm_informed"], layout)


def test_rerun_gives_byte_identical_files(
    workdir: Path, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    fetch_and_render(make_cfg)
    fetched, rendered = capsys.readouterr().out.splitlines()
    assert fetched.startswith("fetch: 44 scenarios from bundled:")
    assert fetched.endswith(" -> data/scenarios.parquet")
    assert rendered == "render: 88 prompts (2 conditions) -> data/prompts.parquet"
    first = [(workdir / "data" / n).read_bytes() for n in ("scenarios.parquet", "prompts.parquet")]
    fetch_and_render(make_cfg)
    again = [(workdir / "data" / n).read_bytes() for n in ("scenarios.parquet", "prompts.parquet")]
    assert first == again


def test_render_says_one_condition_in_the_singular(
    workdir: Path, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    layout = RunLayout(chosen(make_cfg(), "paths"))
    run_fetch(chosen(make_cfg(), "dataset"), layout)
    run_render(["naive"], layout)
    assert capsys.readouterr().out.splitlines()[-1] == (
        "render: 44 prompts (1 condition) -> data/prompts.parquet"
    )


@pytest.mark.slow  # starts stage scripts as processes
def test_bad_scenario_file_exits_2_with_a_message_and_writes_nothing(
    workdir: Path, scenario_row: Row
) -> None:
    bad = workdir / "mine.jsonl"
    bad.write_text(json.dumps(scenario_row(elicitor_actor="Noor")) + "\n", encoding="utf-8")
    out = workdir / "data" / "scenarios.parquet"
    out.parent.mkdir()
    out.write_bytes(b"previous output")
    result = run_stage("fetch", "dataset=local", f"dataset.path={bad}")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert (
        "mine.jsonl:1: scenario 'standup__binary_answer_norm__fixture': field "
        "'elicitor_actor'" in result.stderr
    )
    assert out.read_bytes() == b"previous output"
    assert list(out.parent.iterdir()) == [out]


@pytest.mark.slow  # starts stage scripts as processes
def test_render_before_fetch_says_what_to_run(workdir: Path) -> None:
    result = run_stage("render")
    assert result.returncode == 2
    assert "data/scenarios.parquet not found: run the fetch stage first" in result.stderr


def test_unknown_condition_is_refused(workdir: Path) -> None:
    call_stage("fetch")
    result = call_stage("render", "sweep.conditions=[naive,sarcastic]")
    assert result.returncode == 2
    assert "no config 'condition/sarcastic'" in result.stderr


def test_local_dataset_without_a_path_is_a_clear_config_error(workdir: Path) -> None:
    result = call_stage("fetch", "dataset=local")
    assert result.returncode == 2
    assert result.stderr.startswith(
        "error: conf/dataset/local.yaml: 'dataset.path': expected a value (give it on the "
        "command line, e.g. dataset.path=...), found ???"
    )
