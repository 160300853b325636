"""What `python -m losona.publishable` holds a run to, in-process on a hand-made repository
(tests/test_experiment_safety.py runs it on a real committed run, with a DVC remote)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from losona.provenance.publishable import git_refusal, rested_on

LOCK = {
    "schema": "2.0",
    "stages": {
        "fetch": {
            "cmd": "python stages/fetch.py",
            "deps": [{"path": "stages/fetch.py"}, {"path": "conf/dataset/mine.yaml"}],
            "params": {"params.yaml": {"dataset": "mine"}, "conf/run.yaml": {"dataset.limit": 2}},
            "outs": [{"path": "data/scenarios.parquet", "md5": "a"}],
        },
        "judge@lexicon-m-naive": {
            "cmd": "python stages/judge.py",
            "deps": [{"path": "data/scenarios.parquet"}, {"path": "conf/judge/lexicon.yaml"}],
            "outs": [{"path": "data/verdicts/lexicon/m/naive.parquet", "md5": "b"}],
        },
        "aggregate": {
            "cmd": "python stages/aggregate.py",
            "deps": [{"path": "data/verdicts"}],
            "outs": [{"path": "reports/results.csv", "md5": "c"}],
        },
    },
}


def git(*args: str, cwd: Path) -> None:
    identity = ["-c", "user.email=t@example.org", "-c", "user.name=t"]
    subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True)


def repo_with_a_run(root: Path) -> Path:
    files = {
        "dvc.yaml": "stages: {}\n",
        "dvc.lock": yaml.safe_dump(LOCK),
        "params.yaml": "dataset: mine\n",
        "conf/run.yaml": "dataset: {limit: 2}\n",
        "conf/dataset/mine.yaml": "name: mine\nkind: local\npath: my_scenarios.jsonl\n",
        "conf/judge/lexicon.yaml": "name: lexicon\nkind: lexicon\n",
        "stages/fetch.py": "",
        "my_scenarios.jsonl": "{}\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    git("init", "-q", cwd=root)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "a run", cwd=root)
    return root


def test_a_run_rests_on_its_configs_params_and_scenario_file_not_on_outputs(
    tmp_path: Path,
) -> None:
    root = repo_with_a_run(tmp_path)
    assert rested_on(root) == [
        "conf/dataset/mine.yaml",
        "conf/judge/lexicon.yaml",
        "conf/run.yaml",
        "dvc.lock",
        "dvc.yaml",
        "my_scenarios.jsonl",  # read by fetch through its config, named by no stage
        "params.yaml",
        "stages/fetch.py",
    ]  # no output, nor data/verdicts, a folder of outputs
    assert git_refusal(root) is None


def test_a_scenario_file_dvc_tracks_is_held_by_its_dvc_file(tmp_path: Path) -> None:
    root = repo_with_a_run(tmp_path)
    (root / "my_scenarios.jsonl.dvc").write_text("outs:\n- path: my_scenarios.jsonl\n")
    assert "my_scenarios.jsonl.dvc" in rested_on(root)
    assert "my_scenarios.jsonl" not in rested_on(root)
    refusal = git_refusal(root)
    assert refusal is not None and refusal.lines == ("my_scenarios.jsonl.dvc (new)",)


def test_each_file_git_does_not_hold_committed_is_named_with_how(tmp_path: Path) -> None:
    root = repo_with_a_run(tmp_path)
    (root / "conf/judge/lexicon.yaml").write_text("name: lexicon\nkind: lexicon\nlabel: L\n")
    (root / "params.yaml").write_text("dataset: mine\n# edited\n")
    git("add", "params.yaml", cwd=root)
    (root / "my_scenarios.jsonl").unlink()
    refusal = git_refusal(root)
    assert refusal is not None
    assert refusal.lines == (
        "conf/judge/lexicon.yaml (modified)",
        "my_scenarios.jsonl (deleted)",
        "params.yaml (modified, not committed)",
    )
    assert "git add <file> && git commit" in refusal.advice


def test_a_repository_without_a_commit_is_refused(tmp_path: Path) -> None:
    git("init", "-q", cwd=tmp_path)
    refusal = git_refusal(tmp_path)
    assert refusal is not None and "no commit holds dvc.yaml" in refusal.lines[0]


@pytest.mark.slow  # starts DVC
def test_bytecode_caches_in_a_code_folder_are_no_part_of_the_run(tmp_path: Path) -> None:
    # Python writes __pycache__/ into every code folder a stage imports (unless told not
    # to): git and DVC both ignore it, so the run does not rest on it. A config git
    # ignores but DVC hashes is still named.
    root = repo_with_a_run(tmp_path)
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    lock["stages"]["fetch"]["deps"] += [{"path": "losona/scenarios"}, {"path": "conf/model/m.yaml"}]
    (root / "dvc.lock").write_text(yaml.safe_dump(lock))
    (root / "losona/scenarios").mkdir(parents=True)
    (root / "losona/scenarios/fetch.py").write_text("")
    (root / "conf/model").mkdir()
    (root / "conf/model/m.yaml").write_text("name: m\n")
    (root / ".gitignore").write_text("__pycache__/\n*.py[cod]\nconf/model/\n")
    (root / ".dvcignore").write_text("__pycache__/\n*.pyc\n")
    subprocess.run(["python", "-m", "dvc", "init", "-q"], cwd=root, check=True)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "the code folder", cwd=root)
    (root / "losona/scenarios/__pycache__").mkdir()
    (root / "losona/scenarios/__pycache__/fetch.cpython-311.pyc").write_bytes(b"\x00")
    refusal = git_refusal(root)
    assert refusal is not None
    assert refusal.lines == ("conf/model/ (ignored)",)
