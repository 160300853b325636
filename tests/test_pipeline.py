"""DVC reruns exactly the stages a change affects (on a temporary copy of the repo)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import run_dvc

pytestmark = pytest.mark.slow


def stages_run(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def test_fetch_and_render_rerun_only_when_their_inputs_change(repo_copy: Path) -> None:
    first = run_dvc("repro", "render", cwd=repo_copy).stdout
    assert stages_run(first) == {"preflight", "fetch", "render"}
    assert (repo_copy / "data" / "prompts.parquet").is_file()
    assert stages_run(run_dvc("repro", "render", cwd=repo_copy).stdout) == set()

    condition = repo_copy / "conf" / "condition" / "naive.yaml"
    condition.write_text(condition.read_text() + "# an edited comment\n")
    assert stages_run(run_dvc("repro", "render", cwd=repo_copy).stdout) == {"render"}

    scenario = repo_copy / "losona" / "data" / "scenarios" / "standup__binary_answer_norm.yaml"
    scenario.write_text(scenario.read_text().replace("Morning all", "Morning team"))
    assert stages_run(run_dvc("repro", "render", cwd=repo_copy).stdout) == {"fetch", "render"}
