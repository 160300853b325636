"""A rerun rewrites every output byte for byte, and the run checks out against its reports.

On a temporary copy of the repo, the sweep is one subject served by the local test server
(two conditions, K = 3) and the lexicon judge; the call cache is a file of the test's own.
`dvc repro --force` with that cache warm makes no model call and leaves dvc.lock, and
every file the pipeline wrote, exactly as they were. `python -m losona.reproduce` passes on
the fresh run and, once a verdict file is edited, names the numbers that no longer follow.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import run_dvc

from losona.testing.openai_server import OpenAIServer

pytestmark = pytest.mark.slow

CONDITIONS = ["naive", "norm_informed"]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


@pytest.fixture
def repo(repo_copy: Path, server: OpenAIServer, tmp_path: Path) -> Path:
    """The copy with a test-server subject, the lexicon judge and a private call cache."""
    params = {
        "dataset": "bundled",
        "sweep": {"models": ["local"], "conditions": CONDITIONS, "judges": ["lexicon"]},
    }
    (repo_copy / "params.yaml").write_text(yaml.safe_dump(params))
    model = server.model_config("local", label="Test server")
    (repo_copy / "conf" / "model" / "local.yaml").write_text(yaml.safe_dump(model))
    paths_file = repo_copy / "conf" / "paths" / "default.yaml"
    cache = tmp_path / "calls.sqlite"
    paths_file.write_text(re.sub(r"call_cache: .*", f"call_cache: {cache}", paths_file.read_text()))
    (repo_copy / "dvc.lock").unlink(missing_ok=True)
    return repo_copy


def outputs(repo: Path) -> dict[str, str]:
    """The hash of every file under data/ and reports/, by path."""
    return {
        str(path.relative_to(repo)): hashlib.sha256(path.read_bytes()).hexdigest()
        for folder in ("data", "reports")
        for path in sorted((repo / folder).rglob("*"))
        if path.is_file() and not path.name.endswith(".log.json")  # run logs differ by design
    }


def reproduce(repo: Path) -> subprocess.CompletedProcess[str]:
    """`python -m losona.reproduce` in the copy, as an auditor types it there."""
    return subprocess.run(
        [sys.executable, "-m", "losona.reproduce"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )


def test_forced_rerun_is_byte_identical_and_the_reports_reproduce(
    repo: Path, server: OpenAIServer
) -> None:
    run_dvc("repro", cwd=repo)
    calls = server.request_count
    assert calls == 44 * len(CONDITIONS) * 3  # every scenario x condition x trial, once
    lock, before = (repo / "dvc.lock").read_bytes(), outputs(repo)
    assert "reports/provenance.json" in before and "reports/figures/fig2_accuracy.png" in before

    forced = run_dvc("repro", "--force", cwd=repo).stdout
    assert "Running stage 'sample@local-naive'" in forced
    assert server.request_count == calls  # the warm cache answered every call
    assert (repo / "dvc.lock").read_bytes() == lock
    assert outputs(repo) == before

    checked = reproduce(repo)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "every value matches" in checked.stdout

    # One verdict overturned: the cell's numbers no longer follow from the verdicts.
    path = repo / "data" / "verdicts" / "lexicon" / "local" / "naive.parquet"
    verdicts = pl.read_parquet(path)
    first = verdicts["complies"][0]
    edited = verdicts.with_columns(
        complies=pl.when(pl.int_range(pl.len()) == 0).then(not first).otherwise("complies")
    )
    edited.write_parquet(path)
    changed = reproduce(repo)
    assert changed.returncode == 3, changed.stdout + changed.stderr
    assert re.search(
        r"differs: reports/outcomes\.csv, line \d+ \(judge=lexicon, subject_model=local, "
        rf"condition=naive, .*scenario_id={verdicts['scenario_id'][0]}\), complying: "
        rf"expected \d+, found \d+",
        changed.stdout,
    ), changed.stdout
    assert "Traceback" not in changed.stderr
