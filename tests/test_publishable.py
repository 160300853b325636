"""What `python -m losona.publishable` holds a run to, in-process on a hand-made repository
(tests/test_experiment_safety.py runs it on a real committed run, with a DVC remote)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from losona.provenance.publishable import describe, git_refusal, rested_on

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
            "outs": [
                {"path": "reports/results.csv", "md5": "c"},
                # Kept in git (cache: false), as dvc.yaml keeps the metrics and provenance.
                {"path": "reports/metrics.json", "md5": "d"},
            ],
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
        # DVC's outputs are ignored by git, as this project's .gitignore does; the metrics
        # are not.
        ".gitignore": "/data/*\n/reports/*\n!/reports/metrics.json\n",
        "reports/metrics.json": '{"acc": 50.0}\n',
        ".dvc/config": "[core]\n    autostage = true\n",
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
        ".dvc/config",  # the remote a clone pulls from
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


def test_uncommitted_metrics_are_refused_though_dvc_lock_is_committed(tmp_path: Path) -> None:
    # dvc.lock committed, the metrics it records left out: a clone of HEAD reads HEAD's older
    # metrics beside a dvc.lock that does not match them.
    root = repo_with_a_run(tmp_path)
    (root / "reports/metrics.json").write_text('{"acc": 75.0}\n')
    (root / "reports/results.csv").parent.mkdir(exist_ok=True)
    (root / "reports/results.csv").write_text("an output DVC holds, ignored by git\n")
    refusal = git_refusal(root)
    assert refusal is not None
    assert refusal.lines == ("reports/metrics.json (modified)",)
    assert refusal.reason.startswith("git does not hold, committed, 1 file(s) the run rests on or")
    assert "git add <file> && git commit" in refusal.advice


def test_an_uncommitted_dvc_remote_is_refused(tmp_path: Path) -> None:
    # `dvc remote add -d` writes .dvc/config: uncommitted, a clone has no remote to pull from.
    root = repo_with_a_run(tmp_path)
    with (root / ".dvc/config").open("a") as config:
        config.write("['remote \"storage\"']\n    url = /mnt/shared/losona-dvc\n")
    refusal = git_refusal(root)
    assert refusal is not None and refusal.lines == (".dvc/config (modified)",)


@pytest.mark.slow  # starts DVC (dvc check-ignore, for the stray file)
def test_a_changed_folder_is_named_by_the_files_that_changed_in_it(tmp_path: Path) -> None:
    # A refused judge left its checked config in data/configs, a folder DVC hashes whole:
    # the file is named, not the folder, along with the output of the run that is gone.
    root = repo_with_a_run(tmp_path)
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    lock["stages"]["judge_config@lexicon"] = {
        "cmd": "python stages/config.py judge=lexicon",
        "outs": [
            {"path": "data/configs/judge/lexicon.json", "md5": "e"},
            {"path": "data/configs/model/m.json", "md5": "f"},
        ],
    }
    (root / "dvc.lock").write_text(yaml.safe_dump(lock))
    (root / "data/configs/judge").mkdir(parents=True)
    (root / "data/configs/judge/lexicon.json").write_text("{}")
    (root / "data/configs/judge/scripted.json").write_text("{}")
    status = {"provenance": [{"changed deps": {"data/configs": "modified"}}]}
    assert describe(status, root) == [
        "provenance: changed deps: "
        "data/configs/judge/lexicon.json (modified: not the md5 dvc.lock records), "
        "data/configs/judge/scripted.json (new: no stage of dvc.lock writes it and git does "
        "not hold it), "
        "data/configs/model/m.json (deleted)"
    ]


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
    subprocess.run(["python", "-m", "dvc", "init", "-q", "--force"], cwd=root, check=True)
    git("add", "-A", cwd=root)
    git("commit", "-qm", "the code folder", cwd=root)
    (root / "losona/scenarios/__pycache__").mkdir()
    (root / "losona/scenarios/__pycache__/fetch.cpython-311.pyc").write_bytes(b"\x00")
    refusal = git_refusal(root)
    assert refusal is not None
    assert refusal.lines == ("conf/model/ (ignored)",)
