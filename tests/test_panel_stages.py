"""The panel_votes and panel stages called in-process with the composed config, on one cell
judged by the lexicon judge in this process and the same verdicts standing in for the
scripted judge's (the offline panel's other member). Their scripts' refusals run as
processes in tests/test_panels.py, and under DVC in tests/test_judge_error_pipeline.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from omegaconf import DictConfig
from test_judge_stage import fetched, write_responses  # noqa: F401  (fetched: a fixture)

from losona.core.config import chosen, plain
from losona.core.contracts import CONTROL_SCHEMA, VERDICT_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import read_parquet, write_parquet
from losona.core.layout import RunLayout
from losona.pipeline.judge import run_judge
from losona.pipeline.judge_controls import run_judge_controls
from losona.pipeline.panel import run_panel
from losona.pipeline.panel_votes import run_panel_votes

SWEEP = "sweep.judges=[lexicon,local_openai]"


@pytest.fixture
def judged(fetched: Path, make_cfg: Callable[..., DictConfig]) -> RunLayout:  # noqa: F811
    """smollm2/naive judged by the lexicon judge, its verdicts and controls copied as the
    scripted judge's: both members of the offline panel have voted."""
    write_responses(fetched)
    cfg = make_cfg("condition=naive", SWEEP)
    layout = RunLayout(chosen(cfg, "paths"))
    lexicon = chosen(cfg, "judge")
    run_judge(lexicon, layout, chosen(cfg, "model"), chosen(cfg, "condition"))
    run_judge_controls(lexicon, chosen(cfg, "judge_controls"), layout)
    other = pl.lit("local_openai").alias("judge")
    verdicts = read_parquet(layout.verdicts("lexicon", "smollm2", "naive"), VERDICT_SCHEMA, "judge")
    write_parquet(verdicts.with_columns(other), layout.verdicts("local_openai", "smollm2", "naive"))
    controls = read_parquet(layout.controls("lexicon"), CONTROL_SCHEMA, "judge_controls")
    write_parquet(controls.with_columns(other), layout.controls("local_openai"))
    return layout


def test_panel_votes_copies_a_members_votes_and_none_of_another_judge(
    judged: RunLayout, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = make_cfg("judge=offline_panel", SWEEP)
    panel, sweep = chosen(cfg, "judge"), plain(cfg.sweep)
    with pytest.raises(LosonaError, match=r"\+member=NAME"):
        run_panel_votes(panel, judged, None, sweep)
    run_panel_votes(panel, judged, "lexicon", sweep)
    run_panel_votes(panel, judged, "gemini_pro", sweep)
    copied = pl.read_parquet(judged.panel_votes("offline_panel", "lexicon"))
    assert copied.equals(pl.read_parquet(judged.verdicts("lexicon", "smollm2", "naive")))
    assert pl.read_parquet(judged.panel_votes("offline_panel", "gemini_pro")).is_empty()
    assert capsys.readouterr().out.splitlines()[-2:] == [
        f"panel_votes offline_panel: {copied.height} verdicts and 88 controls of member "
        f"'lexicon' -> {judged.panel_votes_folder('offline_panel')}/",
        "panel_votes offline_panel: judge 'gemini_pro' is not a member: no votes -> "
        f"{judged.panel_votes_folder('offline_panel')}/",
    ]


def test_panel_combines_its_members_votes_into_verdicts_and_controls(
    judged: RunLayout, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = make_cfg("judge=offline_panel", SWEEP)
    panel, sweep = chosen(cfg, "judge"), plain(cfg.sweep)
    with pytest.raises(LosonaError, match=r"member 'local_openai' is not in sweep\.judges"):
        run_panel(panel, judged, ["lexicon"])
    with pytest.raises(LosonaError, match="not a panel"):
        run_panel(chosen(make_cfg(), "judge"), judged, sweep["judges"])
    for member in panel.members:
        run_panel_votes(panel, judged, member, sweep)
    run_panel(panel, judged, sweep["judges"])
    verdicts = read_parquet(
        judged.verdicts("offline_panel", "smollm2", "naive"), VERDICT_SCHEMA, "judge"
    )
    members = pl.read_parquet(judged.verdicts("lexicon", "smollm2", "naive"))
    # Two members that agree everywhere: the unanimous panel says what they say.
    assert verdicts["complies"].to_list() == members["complies"].to_list()
    assert judged.controls("offline_panel").is_file()
    assert judged.controls_summary("offline_panel").is_file()
    assert capsys.readouterr().out.splitlines()[-1] == (
        "panel offline_panel (unanimous of lexicon, local_openai (unscored members abstain)): "
        f"{verdicts.height} verdicts, 14 comply, 74 breach, 0 unscored -> "
        f"{judged.judge_verdicts('offline_panel')}/; controls: 42 comply, 46 breach, 0 unscored"
    )
