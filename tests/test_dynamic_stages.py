"""The dynamic turn's rendering stage called in-process with the composed config, on one cell
of the bundled scenarios judged in this process by the lexicon judge. Its script runs as a
process in tests/test_dynamic.py (a dry run) and under DVC in tests/test_dynamic_pipeline.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from omegaconf import DictConfig
from test_judge_stage import fetched, write_responses  # noqa: F401  (fetched: a fixture)

from losona.core.config import chosen
from losona.core.layout import RunLayout
from losona.pipeline.dynamic_render import run_dynamic_render
from losona.pipeline.judge import run_judge

CELL = ("judge=lexicon", "model=smollm2", "condition=naive", "dynamic.judges=[lexicon]")


@pytest.fixture
def judged(fetched: Path, make_cfg: Callable[..., DictConfig]) -> RunLayout:  # noqa: F811
    """smollm2/naive's first turn, judged by the lexicon judge."""
    write_responses(fetched)
    cfg = make_cfg(*CELL)
    layout = RunLayout(chosen(cfg, "paths"))
    run_judge(chosen(cfg, "judge"), layout, chosen(cfg, "model"), chosen(cfg, "condition"))
    return layout


def render_in_process(make_cfg: Callable[..., DictConfig], *overrides: str) -> None:
    """What `python stages/dynamic_render.py judge=lexicon model=smollm2 condition=naive`
    does, called in this process."""
    cfg = make_cfg(*CELL, *overrides)
    run_dynamic_render(
        chosen(cfg, "dynamic"),
        RunLayout(chosen(cfg, "paths")),
        ("lexicon", "smollm2", "naive"),
        chosen(cfg, "sampling"),
        chosen(cfg, "dataset"),
    )


def test_dynamic_render_writes_a_cells_second_turn_prompts_and_no_call(
    judged: RunLayout, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    render_in_process(make_cfg)
    out = judged.dynamic_prompts("lexicon", "smollm2", "naive")
    prompts = pl.read_parquet(out)
    assert prompts.height > 0
    # Scripted follow-ups: the group model is not asked.
    calls = pl.read_parquet(judged.dynamic_calls("dynamic_group", "lexicon", "smollm2", "naive"))
    assert calls.is_empty()
    counts = prompts.group_by("status").len().sort("status").rows()
    assert capsys.readouterr().out.splitlines()[-1] == (
        "dynamic_render lexicon/smollm2/naive (scripted): "
        f"{', '.join(f'{n} {status}' for status, n in counts)} -> {out}"
    )


def test_a_dry_run_of_scripted_follow_ups_says_so_and_writes_nothing(
    judged: RunLayout, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    render_in_process(make_cfg, "sampling.dry_run=true")
    assert not judged.dynamic_prompts("lexicon", "smollm2", "naive").exists()
    assert capsys.readouterr().out.splitlines()[-1] == (
        "dynamic_render (dry run): scripted follow-ups, no model call"
    )
