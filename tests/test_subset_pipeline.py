"""`dataset.limit=5` runs the whole pipeline on five scenarios, tracked by DVC.

On a temporary copy of the repo: one subject served by the local test server, one
condition, the lexicon judge; the subset is set in conf/run.yaml, the conf file DVC tracks
for fetch, as `dvc exp run -S conf/run.yaml:dataset.limit=5` sets it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import run_dvc

from losona.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.slow


def test_a_limit_of_five_runs_every_stage_on_five_scenarios(
    repo_copy: Path, tmp_path: Path
) -> None:
    params = {
        "dataset": "bundled",
        "sweep": {"models": ["local"], "conditions": ["naive"], "judges": ["lexicon"]},
    }
    (repo_copy / "params.yaml").write_text(yaml.safe_dump(params))
    run = repo_copy / "conf" / "run.yaml"
    run.write_text(run.read_text().replace("limit: null", "limit: 5"))
    paths = repo_copy / "conf" / "paths" / "default.yaml"
    cache = tmp_path / "calls.sqlite"
    paths.write_text(re.sub(r"call_cache: .*", f"call_cache: {cache}", paths.read_text()))
    (repo_copy / "dvc.lock").unlink(missing_ok=True)
    with OpenAIServer() as server:
        model = server.model_config("local", label="Test server")
        (repo_copy / "conf" / "model" / "local.yaml").write_text(yaml.safe_dump(model))
        run_dvc("repro", cwd=repo_copy)
    assert server.request_count == 5 * 3  # five scenarios, K = 3, nothing else
    scenarios = pl.read_parquet(repo_copy / "data" / "scenarios.parquet")
    assert scenarios.height == 5 and "subset of 44: limit 5" in scenarios["source"][0]
    responses = pl.read_parquet(repo_copy / "data" / "responses" / "local" / "naive.parquet")
    assert set(responses["scenario_id"]) == set(scenarios["scenario_id"])
    results = pl.read_csv(repo_copy / "reports" / "results.csv")
    assert results["scenarios"].to_list() == [5]
    # Both reports say that the run covers a subset, of how many and how chosen.
    covers = "this run covers 5 of 44 scenarios (limit 5 stratified by norm, seed 0)"
    assert f"> **Subset:** {covers}" in (repo_copy / "reports" / "table1.md").read_text()
    assert f"<b>Subset:</b> {covers}" in (repo_copy / "reports" / "index.html").read_text()
    record = json.loads((repo_copy / "reports" / "provenance.json").read_text())
    assert record["dataset"]["config"]["limit"] == 5
    assert any("subset" in source for source in record["dataset"]["sources"])
    lock = yaml.safe_load((repo_copy / "dvc.lock").read_text())
    assert lock["stages"]["fetch"]["params"]["conf/run.yaml"]["dataset.limit"] == 5
