"""Publish only a clean run: `python -m losona.publishable` refuses one that is not.

On a temporary copy of the repo, a lean run (two scenarios, K = 1, one condition, one
subject served by the local test server, the lexicon judge). A config the sweep does not
use, written after the run, leaves it publishable: the stages that read several configs
depend on the sweep's own (data/configs/), not on whole conf/ folders. Any change the run
rests on makes it unpublishable, and the check names the stage and the file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import run_dvc

from losona.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.slow


def publishable(repo: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = str(Path(sys.executable).parent)
    return subprocess.run(
        [sys.executable, "-m", "losona.publishable"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(repo),
            "DVC_NO_ANALYTICS": "1",
        },
        check=False,
    )


def test_only_a_clean_run_is_publishable_and_the_change_is_named(
    repo_copy: Path, tmp_path: Path
) -> None:
    sweep = {"models": ["local"], "conditions": ["naive"], "judges": ["lexicon"]}
    (repo_copy / "params.yaml").write_text(yaml.safe_dump({"dataset": "bundled", "sweep": sweep}))
    run = repo_copy / "conf" / "run.yaml"
    run.write_text(
        run.read_text().replace("trials: 3 ", "trials: 1 ").replace("limit: null", "limit: 2")
    )
    paths = repo_copy / "conf" / "paths" / "default.yaml"
    cache = tmp_path / "calls.sqlite"
    paths.write_text(re.sub(r"call_cache: .*", f"call_cache: {cache}", paths.read_text()))
    (repo_copy / "dvc.lock").unlink(missing_ok=True)
    with OpenAIServer() as server:
        model = repo_copy / "conf" / "model" / "local.yaml"
        model.write_text(yaml.safe_dump(server.model_config("local", label="Test server")))
        run_dvc("repro", cwd=repo_copy)
    assert server.request_count == 2  # two scenarios, K = 1
    git = ["git", "-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run([*git, "add", "-A"], cwd=repo_copy, check=True)
    subprocess.run([*git, "commit", "-qm", "the run"], cwd=repo_copy, check=True)

    clean = publishable(repo_copy)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout.startswith("publishable: yes.")

    # A judge config used by no stage of the sweep, written after the run: still clean.
    unused = repo_copy / "conf" / "judge" / "written_later.yaml"
    unused.write_text("name: written_later\nkind: lexicon\n")
    still = publishable(repo_copy)
    assert still.returncode == 0, still.stdout
    assert "Data and pipelines are up to date." in run_dvc("status", cwd=repo_copy).stdout

    # What the run does rest on: each change named, with its stage.
    extra = repo_copy / "conf" / "condition" / "written_later.yaml"
    extra.write_text("name: written_later\nlabel: Later\n")
    model.write_text(model.read_text().replace("label: Test server", "label: Renamed"))
    run.write_text(run.read_text().replace("trials: 1 ", "trials: 2 "))
    refused = publishable(repo_copy)
    assert refused.returncode == 3, refused.stdout + refused.stderr
    lines = refused.stdout.splitlines()
    assert lines[0].startswith("publishable: no. dvc status is not clean")
    said = "\n".join(lines)
    assert (
        "render: changed deps: conf/condition (modified, a folder; in it, git sees "
        "conf/condition/written_later.yaml (new))"
    ) in said
    assert "model_config@local: changed deps: conf/model/local.yaml (modified)" in said
    assert "conf/run.yaml (sampling.trials modified)" in said
    assert "conf/judge" not in said  # the unused judge config still changes nothing
    assert lines[-1].startswith("Rerun them (dvc repro)")
