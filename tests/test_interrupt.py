"""Ctrl-C: a stage stops at once, and under DVC the line it prints gets the committed run back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

from losona.files import write_parquet
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
