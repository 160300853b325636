"""Publish a run, then audit it on another machine: real git, real DVC, no mocks.

One run is made on a temporary copy of the repository ("origin"): subject `local` and an
LLM judge `scripted` are served by the local test server (which counts every request),
beside the lexicon judge. It is committed, pushed to a bare git repository and, with
`dvc push`, to a local-directory DVC remote. Each test then clones it as an auditor
would, with an empty HOME (so an empty call cache) and no API key, and runs `dvc pull`.
The same server stays up the whole time, so a single model call from a clone would show
in its count.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest
from conftest import copy_repo, run_dvc

from losona.core.config import compose_config, compose_paths
from losona.core.files import display_path, write_parquet
from losona.core.layout import RunLayout
from losona.models import Completion
from losona.models.call_cache import CallCache
from losona.pipeline.command import ComposedSettings
from losona.pipeline.recorded import RecordedSettings
from losona.pipeline.table import STAGES
from losona.provenance.record import read_provenance
from losona.reproduce.checks import NOT_COMPARED, NOT_RERUN, check_run
from losona.testing.openai_server import OpenAIServer
from losona.testing.published_sweep import write_published_sweep
from losona.testing.scripted_judge import ScriptedJudge

# One worker takes the whole module (make test's --dist loadgroup), so its module fixture
# (a published run and its server) is made once per test run, not once per worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("publish")]

UP_TO_DATE = "Data and pipelines are up to date."
CALLS = "data/calls.parquet"


@dataclass(frozen=True)
class Published:
    """A published run: its git and DVC remotes, and the directory it was made in."""

    origin: Path
    bare: Path
    root: Path


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    # Judge prompts get verdicts, anything else (the subject's prompts) the default reply.
    with OpenAIServer(reply=ScriptedJudge()) as running:
        yield running


def git(*args: str, cwd: Path) -> str:
    """Run git with a fixed identity (clones have an empty HOME, so no global config)."""
    identity = ["-c", "user.email=test@example.org", "-c", "user.name=test"]
    result = subprocess.run(
        ["git", *identity, *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, f"git {' '.join(args)}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def machine(home: Path) -> dict[str, str]:
    """Another machine's environment: its own HOME, and no provider key of any kind."""
    home.mkdir(parents=True, exist_ok=True)
    kept = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**kept, "HOME": str(home)}


def configure(repo: Path, server: OpenAIServer, remote: Path) -> None:
    """The sweep, the test server's subject and judge, and a local-directory DVC remote."""
    write_published_sweep(repo, server)
    run_dvc("remote", "add", "--default", "storage", str(remote), cwd=repo)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, server: OpenAIServer) -> Published:
    root = tmp_path_factory.mktemp("published")
    origin = copy_repo(root / "origin")
    configure(origin, server, root / "dvc-remote")
    bare = root / "run.git"
    git("init", "-q", "--bare", str(bare), cwd=root)
    # The sweep before any run (its configs, no dvc.lock): where a split sweep starts.
    git("add", "-A", cwd=origin)
    git("commit", "-qm", "the sweep", cwd=origin)
    git("push", "-q", str(bare), "HEAD:refs/heads/sweep", cwd=origin)
    env = machine(root / "home-origin")
    run_dvc("repro", cwd=origin, env=env)
    assert server.request_count > 0
    # A full run leaves nothing to do: the generation project (generation/) is not listed.
    assert UP_TO_DATE in run_dvc("status", cwd=origin, env=env).stdout
    git("add", "-A", cwd=origin)
    git("commit", "-qm", "a published run", cwd=origin)
    git("tag", "run-1", cwd=origin)
    git("push", "-q", str(bare), "HEAD:refs/heads/main", "run-1", cwd=origin)
    run_dvc("push", cwd=origin, env=env)
    return Published(origin=origin, bare=bare, root=root)


def clone(published: Published, where: Path) -> tuple[Path, dict[str, str]]:
    """The published run as an auditor gets it: git clone, then dvc pull, on a new machine."""
    repo = where / "audit"
    git("clone", "-q", "--branch", "run-1", str(published.bare), str(repo), cwd=where)
    env = machine(where / "home")
    pulled = run_dvc("pull", cwd=repo, env=env).stdout
    assert re.search(r"\d+ files? (added|fetched)", pulled), pulled
    print(f"dvc pull: {pulled.strip().splitlines()[-1]}")  # the count, for the test log
    return repo, env


def outputs(repo: Path) -> dict[str, str]:
    """The hash of every file under data/ and reports/ (run logs aside: they differ by design)."""
    return {
        str(path.relative_to(repo)): hashlib.sha256(path.read_bytes()).hexdigest()
        for folder in ("data", "reports")
        for path in sorted((repo / folder).rglob("*"))
        if path.is_file() and not path.name.endswith(".log.json")
    }


def run_python(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """A module or stage script of the clone, run in the clone as its user would."""
    return subprocess.run(
        [sys.executable, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**env, "PYTHONPATH": str(repo), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )


def test_a_published_run_pulls_checks_and_reruns_with_no_call_and_no_key(
    published: Published, server: OpenAIServer, tmp_path: Path
) -> None:
    repo, env = clone(published, tmp_path)
    assert not (Path(env["HOME"]) / ".cache").exists()  # an empty call cache
    assert UP_TO_DATE in run_dvc("status", cwd=repo, env=env).stdout
    checked = run_python(repo, env, "-m", "losona.reproduce")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "every value matches" in checked.stdout
    assert "note: data/calls.parquet" not in checked.stdout  # the calls were checked
    print(checked.stdout.strip().splitlines()[-1])  # values and files checked, for the log

    # The auditor's cache holds another answer for one of the run's calls (made earlier on
    # another CPU, or the endpoint changed since): the rerun still reproduces the run.
    responses_file = repo / "data" / "responses" / "local" / "naive.parquet"
    published_text = pl.read_parquet(responses_file)["response"][0]
    call = pl.read_parquet(repo / CALLS).filter(pl.col("text") == published_text).row(0, named=True)
    own_cache = Path(env["HOME"]) / ".cache" / "losona" / "calls.sqlite"
    with CallCache(own_cache) as cache:
        mine = Completion("the auditor's own answer", "stop", 1, 1, 0.0, error=None, cached=False)
        cache.put(call["key"], call["model"], mine)

    lock, before, requests = (repo / "dvc.lock").read_bytes(), outputs(repo), server.request_count
    assert CALLS in before and "reports/index.html" in before
    forced = run_dvc("repro", "--force", cwd=repo, env=env).stdout
    assert "Running stage 'sample@local-naive'" in forced
    assert "Running stage 'judge@scripted-local-naive'" in forced
    assert server.request_count == requests  # not one model call
    print(f"requests: {requests} to publish the run, 0 for its forced rerun in the clone")
    assert (repo / "dvc.lock").read_bytes() == lock
    assert outputs(repo) == before
    assert UP_TO_DATE in run_dvc("status", cwd=repo, env=env).stdout
    # Each stage says where its answers came from, and that the local one was not used.
    assert re.search(
        r"sample: \d+ responses \(local, naive, 3 trials; \d+ from the run's published "
        r"calls \(1 of them answered differently in your call cache, which was not used\), "
        r"0 from the call cache, 0 new calls",
        forced,
    ), forced
    assert re.search(
        r"judge scripted: answers: \d+ from the run's published calls, 0 from the call "
        r"cache, 0 new calls",
        forced,
    ), forced
    with CallCache(own_cache) as cache:  # and left it alone
        assert cache.get_many([call["key"]])[call["key"]].text == "the auditor's own answer"
    checked = run_python(repo, env, "-m", "losona.reproduce")
    assert checked.returncode == 0, checked.stdout + checked.stderr

    # Bypassing the published calls on purpose (paths.calls=null) takes the local answer:
    # the table then disagrees with dvc.lock, and the check says so.
    bypass = ("stages/sample.py", "model=local", "condition=naive", "paths.calls=null")
    assert run_python(repo, env, *bypass).returncode == 0
    assert pl.read_parquet(responses_file)["response"][0] == "the auditor's own answer"
    checked = run_python(repo, env, "-m", "losona.reproduce")
    assert checked.returncode == 3, checked.stdout + checked.stderr
    assert re.search(
        r"differs: dvc\.lock, out data/responses/local/naive\.parquet, md5: expected '\w+', "
        r"found '\w+'",
        checked.stdout,
    ), checked.stdout
    # Recorded again, every file agrees with dvc.lock and `dvc status` is clean, as after a
    # rerun that took the local answer: still not the run that was published.
    run_dvc("commit", "--force", "sample@local-naive", cwd=repo, env=env)
    run_dvc("repro", cwd=repo, env=env)
    assert UP_TO_DATE in run_dvc("status", cwd=repo, env=env).stdout
    checked = run_python(repo, env, "-m", "losona.reproduce")
    assert checked.returncode == 3, checked.stdout + checked.stderr
    assert re.search(
        r"differs: dvc\.lock, out data/calls\.parquet \(expected: as committed at git HEAD\), "
        r"md5: expected '\w+', found '\w+'",
        checked.stdout,
    ), checked.stdout
    assert "note: dvc.lock differs from the one committed at git HEAD" in checked.stdout


def test_a_tampered_output_or_calls_file_is_named(
    published: Published, server: OpenAIServer, tmp_path: Path
) -> None:
    repo, env = clone(published, tmp_path)
    results = repo / "reports" / "results.csv"
    table = pl.read_csv(results)
    first = table["compliance"][0]
    table.with_columns(
        compliance=pl.when(pl.int_range(pl.len()) == 0).then(first + 1.0).otherwise("compliance")
    ).write_csv(results)
    calls = pl.read_parquet(repo / CALLS)
    responses = pl.read_parquet(repo / "data" / "responses" / "local" / "naive.parquet")
    tampered_text = responses["response"][0]
    changed = calls.with_columns(
        text=pl.when(pl.col("text") == tampered_text).then(pl.lit("edited")).otherwise("text")
    )
    assert (changed["text"] == "edited").sum() == 1
    write_parquet(changed, repo / CALLS)

    status = run_dvc("status", cwd=repo, env=env).stdout
    assert re.search(r"modified:\s+reports/results\.csv", status), status
    assert re.search(rf"modified:\s+{re.escape(CALLS)}", status), status
    checked = run_python(repo, env, "-m", "losona.reproduce")
    assert checked.returncode == 3, checked.stdout + checked.stderr
    assert re.search(
        r"differs: reports/results\.csv, line 2 \(judge=lexicon, subject_model=local, "
        r"condition=naive\), compliance: expected [\d.]+, found [\d.]+",
        checked.stdout,
    ), checked.stdout
    # The edited call is named by its key, and the response sampled again from it by its row.
    assert re.search(
        rf"differs: {re.escape(CALLS)}, row \d+ \(key=\w+\), text: expected .*, found 'edited'",
        checked.stdout,
    ), checked.stdout
    assert re.search(
        r"differs: data/responses/local/naive\.parquet, row 1 \(subject_model=local, "
        rf"condition=naive, scenario_id={responses['scenario_id'][0]}, trial=0\), response: "
        r"expected 'edited', found .*",
        checked.stdout,
    ), checked.stdout
    assert "Traceback" not in checked.stderr


@pytest.mark.parametrize("damage", ["missing", "corrupt", "edited"])
def test_a_missing_or_damaged_calls_file_stops_the_rerun_naming_it(
    damage: str, published: Published, server: OpenAIServer, tmp_path: Path
) -> None:
    repo, env = clone(published, tmp_path)
    path = repo / CALLS
    if damage == "missing":
        path.unlink()
    elif damage == "corrupt":
        path.write_bytes(b"PAR1 not really a table")
    else:  # valid Parquet, other content: not the file dvc.lock records
        write_parquet(pl.read_parquet(path).head(10), path)
    requests = server.request_count
    stage = run_python(repo, env, "stages/sample.py", "model=local", "condition=naive")
    assert stage.returncode == 2, stage.stdout + stage.stderr
    [line] = [line for line in stage.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(f"error: {CALLS}: the run's calls file is ")
    assert "no model is called in its place" in line and f"dvc pull {CALLS}" in line
    assert "Traceback" not in stage.stderr
    assert server.request_count == requests

    # Through DVC the same: the forced cell stops, and the LLM judge too.
    for target in ("sample@local-naive", "judge_controls@scripted"):
        forced = run_dvc(
            "repro", "--force", "--single-item", target, cwd=repo, env=env, check=False
        )
        assert forced.returncode != 0
        assert f"error: {CALLS}: the run's calls file is " in forced.stderr
        assert "Traceback" not in forced.stderr
    assert server.request_count == requests
    if damage == "missing":
        checked = run_python(repo, env, "-m", "losona.reproduce")
        assert checked.returncode == 2
        assert f"error: {CALLS} not found, though dvc.lock records it" in checked.stderr


def test_a_sweep_split_over_two_machines_aggregates_on_a_third_with_no_call(
    published: Published, server: OpenAIServer, tmp_path: Path
) -> None:
    """Two machines run different cells of the sweep; a third pulls both and aggregates.

    Each starts from the sweep's commit, runs its cells with `dvc repro <stage>...` and
    pushes them with `dvc push --run-cache` (outputs, calls files and DVC's record of each
    stage run) to a DVC remote of their own, and its dvc.lock to a branch of the git remote.
    The third machine merges no dvc.lock: `dvc repro --pull` fetches the run cache and
    restores every cell from it instead of running it, then aggregates and plots.
    """
    remote = tmp_path / "split-remote"
    cells = {
        "a": [
            "sample@local-naive",
            "judge@lexicon-local-naive",
            "judge@scripted-local-naive",
            "judge_controls@lexicon",
            "judge_controls@scripted",
        ],
        "b": [
            "sample@local-norm_informed",
            "judge@lexicon-local-norm_informed",
            "judge@scripted-local-norm_informed",
        ],
    }
    machines = {}
    for name in [*cells, "c"]:
        repo = tmp_path / name
        git("clone", "-q", "--branch", "sweep", str(published.bare), str(repo), cwd=tmp_path)
        env = machine(tmp_path / f"home-{name}")
        run_dvc("remote", "add", "--local", "--default", "split", str(remote), cwd=repo, env=env)
        machines[name] = (repo, env)
    for name, targets in cells.items():
        repo, env = machines[name]
        ran = run_dvc("repro", *targets, cwd=repo, env=env).stdout
        assert "Running stage 'aggregate'" not in ran
        run_dvc("push", "--run-cache", cwd=repo, env=env)
        git("add", "dvc.lock", cwd=repo)
        git("commit", "-qm", f"cells of machine {name}", cwd=repo)
        git("push", "-q", "origin", f"HEAD:refs/heads/cells-{name}", cwd=repo)

    repo, env = machines["c"]
    requests = server.request_count
    # --pull: DVC fetches the run cache, and the outputs of each stage it restores from it.
    ran = run_dvc("repro", "--pull", cwd=repo, env=env).stdout
    for target in (*cells["a"], *cells["b"]):
        assert f"Stage '{target}' is cached - skipping run" in ran, ran
    assert server.request_count == requests, ran  # no model call on the third machine
    assert "Running stage 'aggregate'" in ran and "Running stage 'plot'" in ran
    assert UP_TO_DATE in run_dvc("status", cwd=repo, env=env).stdout
    # Its reports, its calls file and all else: as the single-machine run of the sweep.
    assert outputs(repo) == outputs(published.origin)
    checked = run_python(repo, env, "-m", "losona.reproduce")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_reproduce_compares_every_output_of_every_stage_it_runs_again(
    published: Published, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reproduce is a loop over the pipeline's table: each stage it does not hold to the record
    instead (NOT_RERUN) runs again on each of its cells, and every file the stage declares,
    but a drawn figure (NOT_COMPARED), is compared value by value."""
    monkeypatch.chdir(published.origin)  # reproduce only reads the run
    layout = RunLayout(compose_paths([]))
    check = check_run(layout, ComposedSettings(compose_config([])))
    assert check.ok, check.differences
    # Held to the record instead, each for its reason: no other stage is left out.
    assert set(NOT_RERUN) == {
        "preflight",
        "fetch",
        "model_config",
        "judge_config",
        "panel_config",
        "provenance",
    }
    settings = RecordedSettings(layout, read_provenance(layout.provenance))
    declared = set()
    for stage in STAGES:
        if stage.name in NOT_RERUN:
            continue
        for cell in stage.cells_of(settings):
            for output in stage.outputs(layout, cell):
                files = sorted(output.rglob("*")) if output.is_dir() else [output]
                declared |= {
                    display_path(file)
                    for file in files
                    if file.is_file() and not file.name.endswith(tuple(NOT_COMPARED))
                }
    assert {CALLS, "reports/index.html", "data/responses/local/naive.parquet"} <= declared
    assert sorted(declared - set(check.files)) == []
