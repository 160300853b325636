"""`python -m losona.dynamic.prune_lock`: the lock entries of stages that left dvc.yaml, dropped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import run_dvc

from losona.dynamic.prune_lock import stale_stages

ONE = {"stages": {"a": {"cmd": "echo a > a.txt", "outs": ["a.txt"]}}}
TWO = {"stages": {**ONE["stages"], "b": {"cmd": "echo b > b.txt", "outs": ["b.txt"]}}}


# Real DVC repositories: each test starts DVC and git processes.
pytestmark = pytest.mark.slow


def prune(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    root = str(Path(__file__).parent.parent)
    return subprocess.run(
        [sys.executable, "-m", "losona.dynamic.prune_lock", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": root, "DVC_NO_ANALYTICS": "1"},
        check=False,
    )


def test_stale_stages_are_the_locked_ones_the_pipeline_lacks_in_lock_order() -> None:
    lock = {"schema": "2.0", "stages": {"c": {}, "a": {}, "b@x": {}, "b@y": {}}}
    assert stale_stages(lock, ["a", "b@y"]) == ["c", "b@x"]
    assert stale_stages(lock, ["a", "b@x", "b@y", "c"]) == []
    assert stale_stages({"schema": "2.0"}, ["a"]) == []


def test_a_stage_taken_out_of_dvc_yaml_leaves_the_lock_as_it_was_before(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    run_dvc("init", "-q", cwd=tmp_path)
    pipeline = tmp_path / "dvc.yaml"
    pipeline.write_text(yaml.safe_dump(ONE))
    run_dvc("repro", cwd=tmp_path)
    before = (tmp_path / "dvc.lock").read_bytes()
    pipeline.write_text(yaml.safe_dump(TWO))
    run_dvc("repro", cwd=tmp_path)
    pipeline.write_text(yaml.safe_dump(ONE))
    run_dvc("repro", cwd=tmp_path)
    # DVC keeps the entry of the stage that is gone.
    assert "\n  b:\n" in (tmp_path / "dvc.lock").read_text()

    dropped = prune(tmp_path)
    assert dropped.returncode == 0, dropped.stderr
    assert dropped.stdout == "dvc.lock: dropped 1 entry of stages dvc.yaml no longer has: b\n"
    assert (tmp_path / "dvc.lock").read_bytes() == before
    # Nothing left to drop: said so, and the file is not even rewritten.
    stamp = (tmp_path / "dvc.lock").stat().st_mtime_ns
    again = prune(tmp_path)
    assert again.stdout == "dvc.lock: every entry is a stage of dvc.yaml; nothing to drop\n"
    assert (tmp_path / "dvc.lock").stat().st_mtime_ns == stamp


@pytest.mark.parametrize(
    ("files", "args", "said"),
    [
        ({}, (), "error: no dvc.yaml here: run it at the project's root"),
        ({"dvc.yaml": "stages: [unclosed"}, (), "error: "),
        ({"dvc.yaml": yaml.safe_dump(ONE)}, ("--all",), "takes no arguments, found --all"),
    ],
)
def test_bad_input_is_one_error_and_the_lock_untouched(
    tmp_path: Path, files: dict[str, str], args: tuple[str, ...], said: str
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    run_dvc("init", "-q", cwd=tmp_path)
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    lock = "schema: '2.0'\nstages:\n  gone:\n    cmd: echo\n"
    (tmp_path / "dvc.lock").write_text(lock)
    refused = prune(tmp_path, *args)
    assert refused.returncode == 2
    assert said in refused.stderr and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "Traceback" not in refused.stderr
    assert (tmp_path / "dvc.lock").read_text() == lock
