"""The generation pipeline as a user runs it: DVC on a copy of the repo, then dataset=local.

`dvc repro` (the evaluation) never generates, nor do its `dvc status` and `dvc pull` see
the generation pipeline: it is a DVC project of its own in generation/, and `dvc repro`
there generates, with
a scripted generator and baseline on the local test server, or offline with the embedded
model. Editing the accept list reruns curate alone, and the curated file feeds fetch and
render.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import call_stage, run_dvc
from test_generation import CELLS, ONE_BASELINE, Scripted

from losona.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.slow

STAGES = {"generate", "screen", "curate"}


def stage_name(name: str) -> str:
    """A stage's name without its file, if DVC names one: `generation/dvc.yaml:curate`."""
    return name.rsplit(":", 1)[-1]


def stages_run(output: str) -> set[str]:
    return {stage_name(name) for name in re.findall(r"Running stage '([^']+)'", output)}


def run_script(repo: Path, name: str, *overrides: str) -> subprocess.CompletedProcess[str]:
    """The copy's own stage script, run from the copy as a user would."""
    return subprocess.run(
        [sys.executable, f"stages/{name}.py", *overrides],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )


def configure(repo: Path, tmp_path: Path, **changes: dict[str, object]) -> None:
    """Point the copy's call cache into tmp_path and change its generation settings."""
    paths = repo / "conf" / "paths" / "default.yaml"
    paths.write_text(
        re.sub(r"call_cache: .*", f"call_cache: {tmp_path / 'calls.sqlite'}", paths.read_text())
    )
    generation = repo / "conf" / "generation" / "default.yaml"
    settings = yaml.safe_load(generation.read_text())
    for node, values in changes.items():
        settings[node].update(values)
    generation.write_text("# @package _global_\n" + yaml.safe_dump(settings, sort_keys=False))


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(reply=Scripted(ONE_BASELINE)) as running:
        yield running


def test_generation_is_its_own_pipeline_and_curation_feeds_the_evaluation(
    repo_copy: Path, server: OpenAIServer, tmp_path: Path
) -> None:
    repo = repo_copy
    for name, model in (("scripted_generator", "generator"), ("baseline_a", "baseline-a")):
        node = server.model_config(name, model=f"openai/{model}")
        (repo / "conf" / "model" / f"{name}.yaml").write_text(yaml.safe_dump(node))
    configure(
        repo,
        tmp_path,
        generate={
            "generator": "scripted_generator",
            "cells": {
                "mode": "list",
                "per_norm": 1,
                "list": [c.replace("__", "/") for c in CELLS],
                "venues": ["workplace"],
            },
        },
        screen={"models": ["baseline_a"]},
    )
    (repo / "dvc.lock").unlink(missing_ok=True)
    (repo / "generation" / "dvc.lock").unlink(missing_ok=True)

    # `dvc repro` reproduces the stages of ./dvc.yaml, and generation is not among them.
    listed = {line.split()[0] for line in run_dvc("stage", "list", cwd=repo).stdout.splitlines()}
    assert "sample" in {name.split("@")[0] for name in listed} and not listed & STAGES
    generation = run_dvc("stage", "list", cwd=repo / "generation", root=repo).stdout
    assert {stage_name(line.split()[0]) for line in generation.splitlines()} == STAGES

    first = run_dvc("repro", cwd=repo / "generation", root=repo).stdout
    assert stages_run(first) == STAGES
    assert "of 6 candidates: 66.7% rejected by validation, 16.7% by screening" in first
    assert "accepts no candidate yet" in first
    cells = pl.read_csv(repo / "reports" / "generation" / "cells.csv")
    assert cells["generated"].sum() == 6 and cells["accepted"].sum() == 1
    summary = json.loads((repo / "reports" / "generation" / "generate.json").read_text())
    assert (summary["valid"], summary["invalid"]) == (2, 4)
    curated = repo / "data" / "generated" / "losona-generated-v1.jsonl"
    assert curated.read_text() == ""
    review = pl.read_csv(repo / "reports" / "generation" / "review.csv")
    [accepted] = review["candidate_id"].to_list()
    assert (repo / "reports" / "generation" / "review.html").read_text().count(accepted) >= 2

    calls = server.request_count
    assert stages_run(run_dvc("repro", cwd=repo / "generation", root=repo).stdout) == set()

    # A person accepts the candidate: only curate reruns, and no model is called.
    accept = repo / "generation" / "accept.txt"
    accept.write_text(accept.read_text() + f"{accepted}\n")
    assert stages_run(run_dvc("repro", cwd=repo / "generation", root=repo).stdout) == {"curate"}
    assert server.request_count == calls
    [line] = curated.read_text().splitlines()
    assert json.loads(line)["scenario_id"] == accepted
    sidecar = json.loads((curated.parent / "losona-generated-v1.provenance.json").read_text())
    assert sidecar["scenario_ids"] == [accepted]
    assert sidecar["generation"]["generator"]["config"] == "scripted_generator"
    assert sidecar["screen"]["baselines"] == [
        {"config": "baseline_a", "model": "openai/baseline-a"}
    ]
    assert sidecar["screen"]["judge"]["config"] == "lexicon" and sidecar["dates"]["curated_on"]

    # The curated set is a dataset like any other (fetch and render run in this process).
    fetched = call_stage("fetch", "dataset=local", f"dataset.path={curated}", cwd=repo)
    assert fetched.returncode == 0, fetched.stderr
    rendered = call_stage("render", cwd=repo)
    assert rendered.returncode == 0, rendered.stderr
    prompts = pl.read_parquet(repo / "data" / "prompts.parquet")
    assert set(prompts["scenario_id"]) == {accepted}

    # A bad accept list stops curate's script with a message, not a traceback, and writes
    # nothing: the command line's contract, so the script runs as a process.
    before = curated.read_bytes()
    sheet = repo / "reports" / "generation" / "review.html"
    sheet.unlink()
    screened = pl.read_parquet(repo / "data" / "generation" / "screened.parquet")
    [screened_out] = screened.filter(pl.col("status") == "screened_out")["candidate_id"]
    accept.write_text(f"{accepted}\n{screened_out}\n")
    failed = run_script(repo, "curate")
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert failed.stderr.startswith("error: the accept list names candidates it cannot use")
    assert f"{screened_out}': its status is 'screened_out'" in failed.stderr
    assert curated.read_bytes() == before and not sheet.exists()


def test_the_embedded_model_runs_the_pipeline_and_reports_its_rejections(
    repo_copy: Path, tmp_path: Path
) -> None:
    repo = repo_copy
    # The shipped default: one cell, SmolLM2-135M writing and screening, offline.
    configure(repo, tmp_path)
    (repo / "generation" / "dvc.lock").unlink(missing_ok=True)
    out = run_dvc("repro", cwd=repo / "generation", root=repo).stdout
    assert stages_run(out) == STAGES
    summary = json.loads((repo / "reports" / "generation" / "generate.json").read_text())
    candidates = pl.read_parquet(repo / "data" / "generation" / "screened.parquet")
    assert summary["candidates"] == candidates.height == 1
    assert summary["valid"] + summary["invalid"] == 1
    assert summary["rejected_percent"] == 100 * summary["invalid"]
    rejected = candidates.filter(pl.col("status") == "invalid")
    assert all(rejected["reasons"].to_list())  # never rejected silently
    assert f"rejected by validation ({summary['rejected_percent']}%)" in out
    print(out)  # the honest figure, for whoever reads the test log
