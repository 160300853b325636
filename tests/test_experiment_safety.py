"""Nothing a user types breaks a committed run, and `publishable` means rerunnable elsewhere.

On a copy of the golden run (tests/conftest.py: two scenarios, K = 1, the embedded model,
one condition, the lexicon judge, committed): each mistyped `dvc exp run -S` of issue 30 is
refused by the preflight, naming the key, with every output byte left as it was; a judge
that cannot judge its validity controls stops the run before its cells; `python -m
losona.publishable` refuses a run another machine could not rerun.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import GoldenRun, run_dvc
from test_first_hour import python

from losona.core.files import write_parquet
from losona.models import calls_table
from losona.testing.openai_server import OpenAIServer
from losona.testing.scripted_judge import template_copy

pytestmark = pytest.mark.slow


def git(*args: str, cwd: Path) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"git {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def machine(home: Path) -> dict[str, str]:
    """An environment of its own: its HOME, so its own call cache and git identity."""
    home.mkdir(parents=True, exist_ok=True)
    return {**os.environ, "HOME": str(home)}


def outputs(repo: Path) -> dict[str, str]:
    """Every file under data/ and reports/ with its sha256: what a committed run is."""
    return {
        str(path.relative_to(repo)): hashlib.sha256(path.read_bytes()).hexdigest()
        for folder in ("data", "reports")
        for path in sorted((repo / folder).rglob("*"))
        if path.is_file()
    }


def empty_folders(repo: Path) -> list[str]:
    """The empty folders under data/ and reports/: what DVC makes for a new stage's outputs."""
    return [
        str(path.relative_to(repo))
        for folder in ("data", "reports")
        for path in (repo / folder).rglob("*")
        if path.is_dir() and not any(path.iterdir())
    ]


def own_outputs(repo: Path, env: dict[str, str]) -> None:
    """DVC records the outputs it commits as its own, where they were made (its state is kept
    per folder, so a copy starts without); before a run, DVC removes each such output that no
    stage of the new pipeline declares. `dvc commit` records them in the copy."""
    run_dvc("commit", "--force", cwd=repo, env=env)


@pytest.fixture
def repo(golden_run: GoldenRun, tmp_path: Path) -> Path:
    """A copy of the committed golden run, so each test starts from it."""
    return golden_run.copy(tmp_path / "repo")


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("conf/run.yaml:sampling.trials=0", "conf/run.yaml: 'sampling.trials': expected"),
        ("conf/run.yaml:dataset.limit=-3", "conf/run.yaml: 'dataset.limit': expected"),
        ("sweep.models=[smollm2,nosuch_model]", "params.yaml: 'sweep.models': no config"),
        ("sweep.judges=[lexicon,nosuch_judge]", "params.yaml: 'sweep.judges': no config"),
    ],
)
def test_a_mistyped_experiment_leaves_the_committed_run_as_it_was(
    repo: Path, tmp_path: Path, setting: str, named: str
) -> None:
    env = machine(tmp_path / "home")
    own_outputs(repo, env)
    before = outputs(repo)
    failed = run_dvc("exp", "run", "-S", setting, cwd=repo, env=env, check=False)
    said = failed.stdout + failed.stderr
    assert failed.returncode != 0, said
    assert named in said
    assert "no stage ran and no output was touched" in said
    assert outputs(repo) == before  # every output there, byte for byte
    assert empty_folders(repo) == []  # not even the folders DVC made for the new name's cells
    # The message's own command gets the committed settings back.
    (restore,) = re.findall(r"touch [^\n]+ && git checkout HEAD -- [^\n]+", said)
    subprocess.run(restore, shell=True, cwd=repo, check=True)
    assert git("status", "--porcelain", cwd=repo) == ""
    assert "Data and pipelines are up to date." in run_dvc("status", cwd=repo, env=env).stdout


@pytest.fixture
def template_server() -> Iterator[OpenAIServer]:
    """A judge that copies its answer template: it cannot judge anything."""
    with OpenAIServer(reply=template_copy) as server:
        yield server


def test_a_judge_that_cannot_judge_stops_before_its_cells(
    repo: Path, tmp_path: Path, template_server: OpenAIServer
) -> None:
    env = machine(tmp_path / "home")
    judge = {
        "name": "copier",
        "label": "A judge that copies the template",
        "kind": "llm",
        "model": template_server.model_config("copier", seed_per_trial=False),
    }
    (repo / "conf" / "judge" / "copier.yaml").write_text(yaml.safe_dump(judge))
    git("add", "conf/judge/copier.yaml", cwd=repo)
    git("commit", "-qm", "a judge of my own", cwd=repo)
    before = outputs(repo)
    add_copier = ("-S", "sweep.judges=[lexicon,copier]")
    stopped = run_dvc("exp", "run", *add_copier, cwd=repo, env=env, check=False)
    said = stopped.stdout + stopped.stderr
    assert stopped.returncode != 0, said
    assert "error: judge copier (openai/test-model) cannot judge: 4 of its 4 validity" in said
    assert "judge_controls.judge_anyway=true" in said
    assert "structured_output" in said
    # Stopped at its controls: no cell of it ran, its controls wrote no table (their calls'
    # run logs only), and the folders DVC made for its cells are gone.
    assert "Running stage 'judge@copier" not in said
    assert {k: v for k, v in outputs(repo).items() if k in before} == before
    logs = "data/judge_logs/copier/"
    assert [k for k in outputs(repo) if k not in before and not k.startswith(logs)] == [
        "data/configs/judge/copier.json"
    ]
    assert empty_folders(repo) == []
    # The message's own command gets the committed run back, without judge_config's file.
    (restore,) = re.findall(r"to get the committed run back instead \(.+?\): (.+)$", said, re.M)
    shell = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"}
    subprocess.run(restore, shell=True, cwd=repo, check=True, env=shell)
    assert {k: v for k, v in outputs(repo).items() if not k.startswith(logs)} == before
    assert empty_folders(repo) == []
    assert git("status", "--porcelain", cwd=repo) == ""
    assert "Data and pipelines are up to date." in run_dvc("status", cwd=repo, env=env).stdout
    paid = template_server.request_count
    assert paid > 0
    # Told to go on, it judges (every verdict unscored), and its controls cost no call again.
    went_on = run_dvc(
        "exp",
        "run",
        *add_copier,
        "-S",
        "conf/run.yaml:judge_controls.judge_anyway=true",
        cwd=repo,
        env=env,
    )
    assert "Running stage 'judge@copier-smollm2-naive'" in went_on.stdout
    verdicts = pl.read_parquet(repo / "data" / "verdicts" / "copier" / "smollm2" / "naive.parquet")
    assert verdicts["complies"].null_count() == verdicts.height == 2
    controls_calls = 4 * 2  # each control: the call and its one repair
    assert template_server.request_count == paid + verdicts.height * 2
    assert paid == controls_calls


def test_publishable_refuses_a_run_no_one_else_could_rerun(repo: Path, tmp_path: Path) -> None:
    env = machine(tmp_path / "home")
    assert python(repo, env, "-m", "losona.publishable").returncode == 0
    # A model config of the user's own, put in the sweep and run, but left out of git; a
    # remote set up, but nothing pushed to it.
    mine = yaml.safe_load((repo / "conf" / "model" / "smollm2.yaml").read_text())
    (repo / "conf" / "model" / "mine.yaml").write_text(
        yaml.safe_dump(mine | {"name": "mine", "label": "Mine"})
    )
    params = yaml.safe_load((repo / "params.yaml").read_text())
    params["sweep"]["models"] = ["smollm2", "mine"]
    (repo / "params.yaml").write_text(yaml.safe_dump(params))
    shutil.copy(
        repo / "data" / "responses" / "smollm2" / "naive.parquet",
        tmp_path / "responses.parquet",
    )
    mine_responses = pl.read_parquet(tmp_path / "responses.parquet").with_columns(
        subject_model=pl.lit("mine")
    )
    write_parquet(mine_responses, repo / "data" / "responses" / "mine" / "naive.parquet")
    no_calls = repo / "data" / "calls" / "sample" / "mine" / "naive.parquet"
    write_parquet(calls_table("", []), no_calls)
    run_dvc("repro", "render", cwd=repo, env=env)
    run_dvc("commit", "--force", "sample@mine-naive", cwd=repo, env=env)
    run_dvc("repro", cwd=repo, env=env)
    assert "Data and pipelines are up to date." in run_dvc("status", cwd=repo, env=env).stdout
    run_dvc("remote", "add", "--default", "storage", str(tmp_path / "remote"), cwd=repo, env=env)

    refused = python(repo, env, "-m", "losona.publishable")
    said = refused.stdout
    assert refused.returncode == 3, said + refused.stderr
    assert said.startswith("publishable: no. git does not hold, committed,")
    assert "  conf/model/mine.yaml (new)" in said
    assert "  params.yaml (modified)" in said
    assert "  dvc.lock (modified)" in said
    assert "git add <file> && git commit" in said
    assert "Also, DVC remote 'storage' lacks" in said
    assert "data/responses/mine/naive.parquet" in said
    assert "dvc push" in said

    git("add", "-A", cwd=repo)
    git("commit", "-qm", "my model too", cwd=repo)
    refused = python(repo, env, "-m", "losona.publishable")
    assert refused.returncode == 3
    assert refused.stdout.startswith("publishable: no. DVC remote 'storage' lacks")
    run_dvc("push", cwd=repo, env=env)
    ready = python(repo, env, "-m", "losona.publishable")
    assert ready.returncode == 0, ready.stdout + ready.stderr
    assert ready.stdout.startswith("publishable: yes.")
    assert "the DVC remote holds them" in ready.stdout


# The golden run grown by one model and one condition: a committed run whose `-S` can drop a
# cell. "tiny" is the embedded model again under a name of its own (two scenarios, K = 1).
GROWN_SWEEP = {
    "models": ["smollm2", "tiny"],
    "conditions": ["naive", "norm_informed"],
    "judges": ["lexicon"],
}


@pytest.fixture(scope="module")
def grown_run(golden_run: GoldenRun, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden run with a second model and a second condition, run and committed."""
    root = tmp_path_factory.mktemp("grown")
    repo = golden_run.copy(root / "repo")
    smollm2 = yaml.safe_load((repo / "conf" / "model" / "smollm2.yaml").read_text())
    tiny = smollm2 | {"name": "tiny", "label": "Tiny"}
    (repo / "conf" / "model" / "tiny.yaml").write_text(yaml.safe_dump(tiny))
    params = yaml.safe_load((repo / "params.yaml").read_text())
    (repo / "params.yaml").write_text(yaml.safe_dump(params | {"sweep": GROWN_SWEEP}))
    run_dvc("repro", cwd=repo, env=machine(root / "home"))
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "a second model and a second condition", cwd=repo)
    return repo


@pytest.mark.xdist_group("grown_run")
@pytest.mark.parametrize(
    ("setting", "named", "dropped"),
    [
        # The README's recipe before conf/model/my_llamacpp.yaml is written: it drops tiny.
        (
            "sweep.models=[smollm2,my_llamacpp]",
            "params.yaml: 'sweep.models': no config for ['my_llamacpp']",
            "data/responses/tiny/naive.parquet",
        ),
        (
            "sweep.conditions=[naive,no_such_condition]",
            "params.yaml: 'sweep.conditions': no config for ['no_such_condition']",
            "data/responses/smollm2/norm_informed.parquet",
        ),
    ],
)
def test_a_refused_setting_that_drops_a_cell_gets_every_output_back(
    grown_run: Path, tmp_path: Path, setting: str, named: str, dropped: str
) -> None:
    repo = shutil.copytree(grown_run, tmp_path / "repo", symlinks=True)
    env = machine(tmp_path / "home")
    own_outputs(repo, env)
    before = outputs(repo)
    failed = run_dvc("exp", "run", "-S", setting, cwd=repo, env=env, check=False)
    said = failed.stdout + failed.stderr
    assert failed.returncode != 0, said
    assert named in said
    # DVC removed the dropped cells' outputs before the preflight ran: the message says so,
    # names each one, and says nothing of "no output touched".
    removed = sorted(set(before) - set(outputs(repo)))
    assert dropped in removed
    assert re.findall(r"^  missing: (\S+)$", said, re.MULTILINE) == removed
    assert "not in the workspace" in said and "no output was touched" not in said
    assert empty_folders(repo) == []
    (restore,) = re.findall(r"touch [^\n]+ && git checkout HEAD -- [^\n]+ && dvc checkout", said)
    shell = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"}
    subprocess.run(restore, shell=True, cwd=repo, check=True, env=shell)
    assert outputs(repo) == before  # every committed output back, byte for byte
    assert git("status", "--porcelain", cwd=repo) == ""
    assert "Data and pipelines are up to date." in run_dvc("status", cwd=repo, env=env).stdout
