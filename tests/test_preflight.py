"""The preflight: the whole run checked before any stage runs, every problem in one message.

In-process against the composed config (tests/test_experiment_safety.py runs the same
settings through `dvc exp run -S` on a committed run).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig

from losona.core.errors import LosonaError
from losona.pipeline.preflight import (
    CHECKED_MARK,
    changed_settings_files,
    missing_outputs,
    refusal,
    remove_empty_folders,
    run_preflight,
    run_problems,
)

CHECKED = Path("data/configs/run.checked")


def test_the_shipped_run_has_no_problem(make_cfg: Callable[..., DictConfig]) -> None:
    assert run_problems(make_cfg()) == []


def test_the_stage_marks_a_run_with_no_problem_checked(
    make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    run_preflight(make_cfg())
    assert CHECKED.read_text(encoding="utf-8") == CHECKED_MARK
    assert capsys.readouterr().out == (
        "preflight: every setting and name of the run checked (a subset's size, once fetch "
        f"reads the dataset) -> {CHECKED}\n"
    )


def test_the_stage_refuses_every_problem_at_once_bad_paths_too_and_writes_nothing(
    make_cfg: Callable[..., DictConfig],
) -> None:
    CHECKED.parent.mkdir(parents=True)
    CHECKED.write_text("an earlier run's mark\n", encoding="utf-8")
    with pytest.raises(LosonaError) as refused:
        run_preflight(make_cfg("sampling.trials=0", "paths.configs_dir=null"))
    first, *problems = str(refused.value).splitlines()
    assert first == (
        "this run's settings have 2 problem(s); no stage ran and no output was touched:"
    )
    assert any("'paths.configs_dir'" in problem for problem in problems)
    assert any("'sampling.trials'" in problem for problem in problems)
    assert CHECKED.read_text(encoding="utf-8") == "an earlier run's mark\n"


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("sampling.trials=0", "'sampling.trials': expected an integer of at least 1, found 0"),
        ("dataset.limit=-3", "'dataset.limit': expected"),
        ("judge_controls.judge_anyway=maybe", "'judge_controls.judge_anyway': expected"),
        ("aggregate.confidence=2", "'aggregate.confidence': expected"),
    ],
)
def test_a_bad_setting_is_named_with_its_key(
    make_cfg: Callable[..., DictConfig], override: str, expected: str
) -> None:
    (problem,) = run_problems(make_cfg(override))
    assert expected in problem


def test_a_name_with_no_config_lists_the_ones_there_are(
    make_cfg: Callable[..., DictConfig],
) -> None:
    problems = run_problems(
        make_cfg("sweep.models=[smollm2,nosuch_model]", "sweep.judges=[lexicon,nosuch_judge]")
    )
    assert len(problems) == 2
    models, judges = problems
    assert models.startswith("params.yaml: 'sweep.models': no config for ['nosuch_model']")
    assert "conf/model/nosuch_model.yaml" in models and "'smollm2'" in models
    assert judges.startswith("params.yaml: 'sweep.judges': no config for ['nosuch_judge']")
    assert "'lexicon'" in judges and "'offline_panel'" in judges


def test_every_problem_is_named_at_once(make_cfg: Callable[..., DictConfig]) -> None:
    problems = run_problems(
        make_cfg(
            "sampling.trials=0",
            "sweep.conditions=[naive,naive,nosuch_condition]",
            "panels=[lexicon]",
            "dynamic.judges=[lexicon]",
            "dynamic.models=[other_model]",
        )
    )
    text = "\n".join(problems)
    assert "'sampling.trials'" in text
    assert "'sweep.conditions': expected each name once, found ['naive']" in text
    assert "no config for ['nosuch_condition']" in text
    assert "'panels': expected judges of kind panel, found 'lexicon' of kind lexicon" in text
    assert "'dynamic.models': expected names from sweep.models" in text
    assert len(problems) == 5


def test_a_panel_member_outside_the_sweep_is_named(make_cfg: Callable[..., DictConfig]) -> None:
    (problem,) = run_problems(make_cfg("panels=[offline_panel]", "sweep.judges=[lexicon]"))
    assert problem.startswith("conf/judge/offline_panel.yaml: 'judge.members'")
    assert "found ['local_openai']" in problem


def test_a_simulated_group_needs_a_model_config(make_cfg: Callable[..., DictConfig]) -> None:
    (problem,) = run_problems(
        make_cfg(
            "dynamic.judges=[lexicon]",
            "dynamic.conditions=[naive]",
            "dynamic.source=simulated",
            "dynamic.group_model=x",
        )
    )
    assert "'dynamic.group_model': expected one of the model configs" in problem


def git(*args: str, cwd: Path) -> None:
    identity = ["-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True)


def test_the_refusal_gives_the_command_that_restores_the_committed_settings(
    tmp_path: Path,
) -> None:
    for name in ("params.yaml", "conf/run.yaml", "conf/panels.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("a: 1\n")
    git("init", "-q", cwd=tmp_path)
    git("add", "-A", cwd=tmp_path)
    git("commit", "-qm", "run", cwd=tmp_path)
    assert changed_settings_files(tmp_path) == []
    # What `dvc exp run -S` leaves: the same size, rewritten within the same second.
    (tmp_path / "conf/run.yaml").write_text("a: 2\n")
    changed = changed_settings_files(tmp_path)
    assert changed == ["conf/run.yaml"]
    assert missing_outputs(tmp_path) == []  # no dvc.lock: nothing recorded, nothing missing
    message = refusal(["conf/run.yaml: 'a': expected 1, found 2"], changed, [])
    assert message.splitlines()[0].endswith("no stage ran and no output was touched:")
    assert message.splitlines()[-1].endswith(
        "touch conf/run.yaml && git checkout HEAD -- conf/run.yaml"
    )


def test_the_refusal_names_each_output_dvc_removed_and_restores_it_with_dvc_checkout(
    tmp_path: Path,
) -> None:
    (tmp_path / "data" / "kept.parquet").parent.mkdir()
    (tmp_path / "data" / "kept.parquet").write_text("x")
    (tmp_path / "dvc.lock").write_text(
        "schema: '2.0'\nstages:\n"
        "  a:\n    outs:\n    - path: data/kept.parquet\n"
        "  b:\n    outs:\n    - path: data/gone.parquet\n    - path: reports/gone\n"
    )
    missing = missing_outputs(tmp_path)
    assert missing == ["data/gone.parquet", "reports/gone"]
    message = refusal(["params.yaml: 'sweep.models': no config"], ["params.yaml"], missing)
    lines = message.splitlines()
    assert lines[0] == (
        "this run's settings have 1 problem(s); no stage ran, but 2 output(s) that dvc.lock "
        "records are not in the workspace (DVC removes the outputs of the stages a setting "
        "leaves out of the pipeline before any stage runs, so before this check):"
    )
    assert lines[2:4] == ["  missing: data/gone.parquet", "  missing: reports/gone"]
    assert lines[-1].endswith(
        "get back the settings and outputs git and DVC hold: "
        "touch params.yaml && git checkout HEAD -- params.yaml && dvc checkout"
    )
    assert refusal(["x"], [], missing).splitlines()[-1].endswith("hold: dvc checkout")


def test_a_refusal_leaves_no_empty_folder_behind(tmp_path: Path) -> None:
    (tmp_path / "data" / "responses" / "nosuch").mkdir(parents=True)
    (tmp_path / "data" / "verdicts" / "lexicon" / "nosuch").mkdir(parents=True)
    (tmp_path / "data" / "labels").mkdir()
    (tmp_path / "data" / "labels" / "human.csv").write_text("id\n")
    remove_empty_folders(tmp_path / "data")
    left = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "data").rglob("*"))
    assert left == ["data/labels", "data/labels/human.csv"]
