"""Ctrl-C: a stage stops at once, and under DVC the line it prints gets the committed run back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, GoldenRun

from losona.core.files import write_parquet
from losona.prompts.render import render_prompts
from losona.scenarios.datasets import fetch_scenarios

pytestmark = pytest.mark.slow

# What a person waits for after pressing Ctrl-C, at most, on a busy machine.
PROMPTLY_S = 2.0


def wait_for(text: str, path: Path, process: subprocess.Popen[str], limit_s: float = 300) -> None:
    """Wait until the process has written `text` to `path` (fails if it ends first)."""
    deadline = time.monotonic() + limit_s
    while text not in path.read_text():
        assert process.poll() is None, f"ended before {text!r}:\n{path.read_text()}"
        assert time.monotonic() < deadline, f"no {text!r} after {limit_s} s:\n{path.read_text()}"
        time.sleep(0.05)


def test_ctrl_c_ends_a_stage_at_once_while_the_embedded_model_is_answering(
    workdir: Path, tmp_path: Path
) -> None:
    # The embedded model answers in llama.cpp's C code, on a thread nothing can interrupt:
    # exiting must not wait for that call (a model load and a reply: 38 s on a busy machine).
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"}).head(2)
    write_parquet(render_prompts(scenarios, ["naive"]), workdir / "data" / "prompts.parquet")
    log = tmp_path / "stderr.txt"
    script = str(REPO / "stages" / "sample.py")
    with log.open("w") as stderr:
        stage = subprocess.Popen(
            [sys.executable, script, "model=smollm2", "condition=naive", "sampling.trials=1"],
            cwd=workdir,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            text=True,
        )
        wait_for("2 to make", log, stage)  # said just before the first call goes to the model
        stage.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        stage.wait(timeout=120)
    took = time.monotonic() - interrupted
    assert stage.returncode == 130, log.read_text()
    assert log.read_text().splitlines()[-1] == "interrupted: stopped by Ctrl-C"
    assert took < PROMPTLY_S, f"exited {took:.1f} s after Ctrl-C"


def committed_run(repo: Path) -> dict[str, bytes]:
    """Every file of the run: its outputs (data/, reports/) and its records and settings."""
    files = [p for folder in ("data", "reports") for p in (repo / folder).rglob("*") if p.is_file()]
    files += [repo / name for name in ("dvc.lock", "params.yaml", "conf/run.yaml")]
    return {str(path.relative_to(repo)): path.read_bytes() for path in sorted(files)}


def test_ctrl_c_under_dvc_exp_run_names_a_command_that_gets_the_committed_run_back(
    golden_run: GoldenRun, tmp_path: Path
) -> None:
    repo = golden_run.copy(tmp_path / "repo")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(repo),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DVC_NO_ANALYTICS": "1",
    }
    before = committed_run(repo)
    log = tmp_path / "dvc.txt"
    with log.open("w") as out:
        # Its own process group, which a terminal's Ctrl-C signals whole: DVC and its stage.
        dvc = subprocess.Popen(
            [sys.executable, "-m", "dvc", "exp", "run", "-S", "conf/run.yaml:sampling.trials=2"],
            cwd=repo,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        wait_for(" to make", log, dvc)  # its rerun sample stage is calling the embedded model
        os.killpg(dvc.pid, signal.SIGINT)
        dvc.wait(timeout=120)
    said = log.read_text()
    assert dvc.returncode != 0, said
    (line,) = [line for line in said.splitlines() if line.startswith("interrupted:")]
    assert line == (
        "interrupted: stopped by Ctrl-C; DVC deleted this stage's outputs before it ran, and "
        "dvc.lock and the settings may hold this run's: to get the committed run back, touch "
        "dvc.lock params.yaml conf/run.yaml && git checkout HEAD -- dvc.lock params.yaml "
        "conf/run.yaml && dvc checkout"
    )
    assert committed_run(repo) != before  # else there is nothing to get back
    # The printed command, run as a user pastes it into a shell.
    restore = line.split("to get the committed run back, ")[1]
    restored = subprocess.run(
        restore, shell=True, cwd=repo, env=env, capture_output=True, text=True
    )
    assert restored.returncode == 0, restored.stdout + restored.stderr
    after = committed_run(repo)
    assert sorted(after) == sorted(before)
    assert [name for name in before if after[name] != before[name]] == []
    assert run(["git", "status", "--porcelain"], repo, env) == ""
    assert "Data and pipelines are up to date." in run(
        [sys.executable, "-m", "dvc", "status"], repo, env
    )


def run(command: list[str], repo: Path, env: dict[str, str]) -> str:
    """What a command printed, which must succeed."""
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
