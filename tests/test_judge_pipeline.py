"""Judges in the DVC pipeline: each reruns alone, none resamples, a sweep compares them.

On a temporary copy of the repo with a one-cell sweep: the sampled responses are written
by the test and recorded with `dvc commit` (no model runs), and an LLM judge is served by
the local test server.
"""

from __future__ import annotations

import csv
import io
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import run_dvc
from test_judge import responses_table
from test_judge_llm import scripted_judge

from losona.core.files import write_parquet
from losona.judges.rules import load_rules
from losona.models import calls_table
from losona.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.slow

CELL = "smollm2-naive"


def stages_run(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def repro(repo: Path) -> set[str]:
    """Reproduce the judges, their controls and aggregate (plot adds nothing to prove here)."""
    return stages_run(run_dvc("repro", "aggregate", "judge_controls", cwd=repo).stdout)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(reply=scripted_judge) as running:
        yield running


@pytest.fixture
def repo(repo_copy: Path, server: OpenAIServer, tmp_path: Path) -> Path:
    """The copy with judges [lexicon, scripted] over smollm2 x naive, responses sampled."""
    params = {
        "dataset": "bundled",
        "sweep": {
            "models": ["smollm2"],
            "conditions": ["naive"],
            "judges": ["lexicon", "scripted"],
        },
    }
    (repo_copy / "params.yaml").write_text(yaml.safe_dump(params))
    scripted = {
        "name": "scripted",
        "label": "Scripted judge on the test server",
        "kind": "llm",
        "model": server.model_config("scripted", seed_per_trial=False, params={"temperature": 0}),
    }
    (repo_copy / "conf" / "judge" / "scripted.yaml").write_text(yaml.safe_dump(scripted))
    paths_file = repo_copy / "conf" / "paths" / "default.yaml"
    paths = paths_file.read_text()
    paths = re.sub(r"call_cache: .*", f"call_cache: {tmp_path / 'calls.sqlite'}", paths)
    paths_file.write_text(paths)

    (repo_copy / "dvc.lock").unlink(missing_ok=True)
    run_dvc("repro", "render", cwd=repo_copy)
    ids = pl.read_parquet(repo_copy / "data" / "scenarios.parquet")["scenario_id"].to_list()
    items = [
        (sid, trial, "Yes." if trial else "Sure, happy to help!") for sid in ids for trial in (0, 1)
    ]
    write_parquet(
        responses_table(items), repo_copy / "data" / "responses" / "smollm2" / "naive.parquet"
    )
    # Written by hand, these responses rest on no model call: the cell's calls file is empty.
    write_parquet(
        calls_table("", []), repo_copy / "data" / "calls" / "sample" / "smollm2" / "naive.parquet"
    )
    run_dvc("commit", "--force", f"sample@{CELL}", cwd=repo_copy)
    return repo_copy


def test_each_judge_reruns_alone_and_nothing_resamples(repo: Path, server: OpenAIServer) -> None:
    judges = {f"judge@lexicon-{CELL}", f"judge@scripted-{CELL}"}
    controls = {"judge_controls@lexicon", "judge_controls@scripted"}
    # The configs of the sweep, checked, which aggregate depends on (labels).
    configs = {"judge_config@lexicon", "judge_config@scripted", "model_config@smollm2"}
    assert repro(repo) == judges | controls | configs | {"aggregate"}  # never resamples
    assert repro(repo) == set()
    calls = server.request_count

    # A judge's config changed: its stages rerun (from the call cache), nobody else's, and
    # since its verdicts come out the same, nothing downstream moves.
    config = repo / "conf" / "judge" / "scripted.yaml"
    config.write_text(config.read_text() + "# an edited comment\n")
    edited = {f"judge@scripted-{CELL}", "judge_controls@scripted", "judge_config@scripted"}
    assert repro(repo) == edited
    assert server.request_count == calls

    # A lexicon rule changed: the judge stages and what reads verdicts rerun, never
    # sampling. (The judge code and rules are shared deps of every judge stage, so the
    # other judge's stages rerun too, from the call cache, with identical verdicts.)
    rules = repo / "losona" / "data" / "lexicon.yaml"
    rules.write_text(rules.read_text().replace(r"^\W*(yes|yeah|", r"^\W*(yeah|"))
    assert repro(repo) == judges | controls | {"aggregate"}
    assert server.request_count == calls


def test_a_judge_sweep_runs_as_a_queued_experiment_side_by_side(repo: Path) -> None:
    git = ["git", "-c", "user.email=test@example.org", "-c", "user.name=test"]
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo, check=True, capture_output=True)
    run_dvc("exp", "run", "--queue", "-n", "two", "-S", "sweep.judges=[scripted,lexicon]", cwd=repo)
    run_dvc("exp", "run", "--run-all", cwd=repo)
    shown = run_dvc("exp", "show", "--csv", cwd=repo).stdout
    (row,) = [r for r in csv.DictReader(io.StringIO(shown)) if r["Experiment"] == "two"]
    assert row["lexicon.all.items"] == row["scripted.all.items"] == "88"
    assert row["lexicon.judge_model"] == f"lexicon@{load_rules().version}"
    assert row["scripted.judge_model"] == "openai/test-model"
    # The scripted judge passes bare yes/no answers only: its controls expose it as unfit.
    assert float(row["scripted.all.accuracy"]) < 90 <= float(row["lexicon.all.accuracy"])
