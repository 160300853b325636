"""Batch mode: provider batch jobs fill the call cache, and the tables come out the same.

Against the local test server's Batch API (files, batches), with a completion delay and
injected failures; the kill test runs the sample stage as a user would and SIGKILLs it
while it waits for its batch.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from conftest import REPO, run_stage
from test_judge import responses_table
from test_judge_llm import scripted_judge

from losona.core.config import SamplingSettings
from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.judges.run import judge_responses, make_judge
from losona.models import BatchFailed, BatchSettings, CallOptions, CallsFailed, ModelSpec
from losona.models.batch import _BatchJob, _State, fill_cache_by_batch, state_dir
from losona.prompts.render import render_prompts
from losona.sampling.sample import sample_cell, sample_requests
from losona.scenarios.datasets import fetch_scenarios
from losona.testing.openai_server import OpenAIServer, fail_first

FAST = BatchSettings(enabled=True, poll_interval_s=0.02, rounds=3)


@pytest.fixture
def prompts(workdir: Path) -> pl.DataFrame:
    """Four bundled scenarios rendered under one condition, where the stage reads them."""
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"}).head(4)
    table = render_prompts(scenarios, ["naive"])
    write_parquet(table, workdir / "data" / "prompts.parquet")
    return table


def sampled_bytes(
    prompts: pl.DataFrame,
    server: OpenAIServer,
    cache: Path,
    batch: BatchSettings | None,
    out: Path,
    run_log: Path | None = None,
) -> bytes:
    """The response table one sample run writes (12 calls), as bytes."""
    spec = ModelSpec.from_config(server.model_config("local"))
    sampled = sample_cell(
        prompts, spec, "naive", 3, CallOptions(cache_path=cache, run_log=run_log), batch=batch
    )
    write_parquet(sampled.responses, out)
    return out.read_bytes()


@pytest.fixture
def normal_table(prompts: pl.DataFrame, tmp_path: Path) -> bytes:
    """The table of a normal (one call at a time) run, with its own cache."""
    with OpenAIServer() as server:
        return sampled_bytes(prompts, server, tmp_path / "normal.sqlite", None, tmp_path / "n.pq")


def test_a_batch_run_writes_the_same_table_as_a_normal_run(
    prompts: pl.DataFrame, normal_table: bytes, tmp_path: Path
) -> None:
    cache, log = tmp_path / "calls.sqlite", tmp_path / "run.log.json"
    with OpenAIServer(batch_delay=1.0) as server:
        table = sampled_bytes(prompts, server, cache, FAST, tmp_path / "b.pq", log)
        assert table == normal_table
        # Every reply came from the one batch: no single call was made.
        assert server.batches_created == 1 and server.request_count == 0
        assert len(server.batches["batch_1"].lines) == 12
        assert server.batch_retrievals >= 2  # it waited for the batch, polling
        facts = json.loads(log.read_text())
        assert facts["cache_hits"] == 12 and facts["completed"] == 0
        assert facts["batch"]["batch_ids"] == ["batch_1"] and facts["batch"]["completed"] == 12
        # Done: nothing is left waiting, and a rerun submits nothing.
        assert list(state_dir(cache).glob("*.json")) == []
        assert sampled_bytes(prompts, server, cache, FAST, tmp_path / "b.pq") == normal_table
        assert server.batches_created == 1


def test_the_batch_file_holds_only_the_calls_the_cache_lacks(
    prompts: pl.DataFrame, tmp_path: Path
) -> None:
    cache = tmp_path / "calls.sqlite"
    with OpenAIServer() as server:
        spec = ModelSpec.from_config(server.model_config("local"))
        # A normal run of one trial first: 4 of the 12 calls are then cached.
        sample_cell(prompts, spec, "naive", 1, CallOptions(cache_path=cache))
        report = fill_cache_by_batch(
            spec, sample_requests(prompts, 3), CallOptions(cache_path=cache), FAST
        )
        lines = server.batches["batch_1"].lines
    assert len(lines) == 8 and report.completed == 8

    def call(body: dict[str, Any]) -> str:
        return json.dumps([body["messages"], body["seed"]])

    assert not {call(line["body"]) for line in lines} & {call(b) for b in server.requests}
    # custom_id is the call key, the body what `complete` sends (model name, params, seed).
    assert all(len(line["custom_id"]) == 64 for line in lines)
    assert {line["body"]["model"] for line in lines} == {"test-model"}
    assert report.batch_price_from.startswith("config")


def test_a_partial_failure_resends_only_the_failed_lines(
    prompts: pl.DataFrame, normal_table: bytes, tmp_path: Path
) -> None:
    cache, log = tmp_path / "calls.sqlite", tmp_path / "run.log.json"
    # About a third of the lines fail with a 500 in their first batch only.
    with OpenAIServer(batch_faults=fail_first(1, "server_error", every=3)) as server:
        table = sampled_bytes(prompts, server, cache, FAST, tmp_path / "b.pq", log)
        first, second = server.batches["batch_1"], server.batches["batch_2"]
    assert table == normal_table
    assert server.batches_created == 2 and 0 < first.failed < 12
    error_file = server.files[str(first.error_file_id)]
    failed_ids = {json.loads(line)["custom_id"] for line in error_file.splitlines()}
    # The second batch is exactly the failed lines, nothing that had come back.
    assert [line["custom_id"] for line in second.lines] == sorted(
        failed_ids, key=[line["custom_id"] for line in first.lines].index
    )
    batch = json.loads(log.read_text())["batch"]
    assert batch["retried"] == first.failed and batch["lines_sent"] == 12 + first.failed


def test_lines_that_keep_failing_stop_the_run_after_the_last_round(
    prompts: pl.DataFrame, tmp_path: Path
) -> None:
    cache = tmp_path / "calls.sqlite"
    settings = BatchSettings(enabled=True, poll_interval_s=0.02, rounds=2)
    with OpenAIServer(batch_faults=fail_first(99, "server_error", every=3)) as server:
        spec = ModelSpec.from_config(server.model_config("local"))
        with pytest.raises(CallsFailed, match=r"failed after their retries \(\d+ batch line"):
            fill_cache_by_batch(
                spec, sample_requests(prompts, 3), CallOptions(cache_path=cache), settings
            )
        assert server.batches_created == 2  # bounded: two rounds, then it stops
        failed = server.batches["batch_1"].failed
        assert len(server.batches["batch_2"].lines) == failed


def test_a_refused_line_is_not_sent_again(prompts: pl.DataFrame, tmp_path: Path) -> None:
    with OpenAIServer(batch_faults=fail_first(99, "bad_request", every=3)) as server:
        spec = ModelSpec.from_config(server.model_config("local"))
        with pytest.raises(CallsFailed, match=r"batch line error \(400\)"):
            fill_cache_by_batch(
                spec,
                sample_requests(prompts, 3),
                CallOptions(cache_path=tmp_path / "c.sqlite"),
                FAST,
            )
        assert server.batches_created == 1


@pytest.mark.parametrize("fate", ["failed", "expired"])
def test_a_batch_that_ends_without_completing_is_reported_and_a_rerun_sends_the_rest(
    prompts: pl.DataFrame, normal_table: bytes, tmp_path: Path, fate: Any
) -> None:
    cache = tmp_path / "calls.sqlite"
    fates = {1: fate}
    with OpenAIServer(batch_fate=lambda n: fates.get(n, "completed")) as server:
        with pytest.raises(BatchFailed, match=f"batch batch_1 ended {fate} \\(batch_{fate}: "):
            sampled_bytes(prompts, server, cache, FAST, tmp_path / "b.pq")
        assert not (tmp_path / "b.pq").exists()
        assert list(state_dir(cache).glob("*.json")) == []  # nothing to resume
        assert sampled_bytes(prompts, server, cache, FAST, tmp_path / "b.pq") == normal_table
        rest = len(server.batches["batch_2"].lines)
    # An expired batch keeps what it finished (half here); a failed one answered nothing.
    assert rest == (12 if fate == "failed" else 6)


def test_a_provider_without_batch_jobs_gets_a_clear_error(tmp_path: Path) -> None:
    spec = ModelSpec(name="gemini_pro", model="gemini/gemini-3.1-pro-preview")
    with pytest.raises(LosonaError) as raised:
        fill_cache_by_batch(spec, [], CallOptions(cache_path=tmp_path / "c.sqlite"), FAST)
    message = str(raised.value)
    assert "sampling.batch=true" in message and "model 'gemini_pro'" in message
    assert "provider 'gemini'" in message and "openai, azure" in message


@pytest.mark.slow  # runs the stage script
def test_a_provider_without_batch_jobs_stops_the_stage_before_the_key_is_asked(
    workdir: Path,
) -> None:
    result = run_stage("sample", "model=gemini_pro", "condition=naive", "sampling.batch=true")
    assert result.returncode == 2
    assert "error: sampling.batch=true, but model 'gemini_pro'" in result.stderr
    assert "provider 'gemini'" in result.stderr and "GEMINI_API_KEY" not in result.stderr
    judge = {
        "name": "claude_opus",
        "kind": "llm",
        "batch": True,
        "model": {"name": "claude_opus", "model": "anthropic/claude-opus-4-8"},
    }
    with pytest.raises(LosonaError, match=r"judge.batch=true, .* provider 'anthropic'"):
        make_judge(judge, CallOptions(cache_path=workdir / "c.sqlite"))


def test_the_run_log_prices_the_batch_at_litellms_batch_prices(
    prompts: pl.DataFrame, tmp_path: Path
) -> None:
    with OpenAIServer() as server:
        # A model litellm prices (gpt-4o: batches at half its list price), served locally.
        node = server.model_config("local", model="openai/gpt-4o")
        del node["price"]
        spec = ModelSpec.from_config(node)
        report = fill_cache_by_batch(
            spec, sample_requests(prompts, 1), CallOptions(cache_path=tmp_path / "c.sqlite"), FAST
        )
    assert report.batch_price_from.startswith("litellm")
    assert report.cost_usd_list_price > 0
    assert report.cost_usd_batch_price == pytest.approx(report.cost_usd_list_price / 2)


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"batch": "yes"}, "'sampling.batch': expected true or false"),
        (
            {"batch": True, "batch_poll_s": 0},
            "'sampling.batch_poll_s': expected a finite number ab",
        ),
        (
            {"batch": True, "batch_rounds": 0},
            "'sampling.batch_rounds': expected an integer of at l",
        ),
    ],
)
def test_bad_batch_settings_are_refused(node: dict[str, Any], message: str) -> None:
    with pytest.raises(LosonaError, match=message):
        SamplingSettings.from_config({"trials": 3, "dry_run": False, "max_cost_usd": None} | node)


def test_a_judge_in_batch_mode_writes_the_same_verdicts(workdir: Path, tmp_path: Path) -> None:
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"}).head(3)
    ids = scenarios["scenario_id"].to_list()
    items = [(sid, t, "Yes." if t else "So sorry!") for sid in ids for t in (0, 1)]
    responses = responses_table(items)

    def verdicts(server: OpenAIServer, cache: Path, batch: bool) -> pl.DataFrame:
        config = {
            "name": "local_openai",
            "kind": "llm",
            "model": server.model_config("local_openai", seed_per_trial=False),
            "batch": batch,
            "batch_poll_s": 0.02,
        }
        judge = make_judge(
            config, CallOptions(cache_path=cache, run_log=tmp_path / "judge.log.json")
        )
        return judge_responses(
            scenarios,
            responses,
            judge,
            "local_openai",
            model="smollm2",
            condition="naive",
            origin="responses",
        )

    with OpenAIServer(reply=scripted_judge) as server:
        normal = verdicts(server, tmp_path / "normal.sqlite", batch=False)
        batched = verdicts(server, tmp_path / "batch.sqlite", batch=True)
        assert server.batches_created == 1 and len(server.batches["batch_1"].lines) == 6
    assert batched.equals(normal)
    assert json.loads((tmp_path / "judge.log.json").read_text())["batch"]["completed"] == 6


class Killed(Exception):
    """Stands for a SIGKILL in an in-process test."""


def test_a_batch_created_but_not_yet_recorded_is_found_again_not_resubmitted(
    prompts: pl.DataFrame, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    cache = tmp_path / "calls.sqlite"
    save = _BatchJob._save

    def save_without_batch_id(job: _BatchJob, state: _State) -> None:
        save(job, dataclasses.replace(state, batch_id=None))

    def killed(job: _BatchJob, state: _State) -> None:
        raise Killed

    with OpenAIServer() as server:
        spec = ModelSpec.from_config(server.model_config("local"))
        requests = sample_requests(prompts, 1)
        # Killed after the provider created the batch, before its id reached the record.
        with monkeypatch.context() as patched:
            patched.setattr(_BatchJob, "_save", save_without_batch_id)
            patched.setattr(_BatchJob, "_wait", killed)
            with pytest.raises(Killed):
                fill_cache_by_batch(spec, requests, CallOptions(cache_path=cache), FAST)
        [record] = [json.loads(p.read_text()) for p in state_dir(cache).glob("*.json")]
        assert record["input_file_id"] and record["batch_id"] is None
        report = fill_cache_by_batch(spec, requests, CallOptions(cache_path=cache), FAST)
        # Found by its job id in the provider's batch metadata, and collected.
        assert server.batches_created == 1 and report.resumed == ["batch_1"]
        assert report.completed == 4


@pytest.fixture
def kill_server() -> Iterator[OpenAIServer]:
    # Long enough that the stage is surely still waiting when it is killed.
    with OpenAIServer(batch_delay=4.0) as server:
        yield server


@pytest.mark.slow  # runs the stage script twice
def test_a_stage_killed_while_it_waits_resumes_its_batch_without_submitting_again(
    workdir: Path, prompts: pl.DataFrame, normal_table: bytes, kill_server: OpenAIServer
) -> None:
    configs = workdir / "my_conf"
    (configs / "model").mkdir(parents=True)
    node = kill_server.model_config("local")
    (configs / "model" / "local.yaml").write_text(yaml.safe_dump(node))
    cache = workdir / "calls.sqlite"
    overrides = [
        f"hydra.searchpath=[file://{configs}]",
        "model=local",
        "condition=naive",
        f"paths.call_cache={cache}",
        "sampling.batch=true",
        "sampling.batch_poll_s=0.05",
    ]
    stage = subprocess.Popen(
        [sys.executable, str(REPO / "stages" / "sample.py"), *overrides],
        cwd=workdir,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    recorded: dict[str, Any] = {}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not recorded.get("batch_id"):
        for path in state_dir(cache).glob("*.json"):
            recorded = json.loads(path.read_text())
        time.sleep(0.02)
    # The batch id is on disk before the stage waits: kill it while it polls.
    assert recorded.get("batch_id") == "batch_1", recorded
    while kill_server.batch_retrievals == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    os.kill(stage.pid, signal.SIGKILL)
    stage.wait()
    assert kill_server.batches["batch_1"].status == "in_progress"
    assert len(recorded["keys"]) == 12 and "api_key" not in json.dumps(recorded)

    resumed = run_stage("sample", *overrides)
    assert resumed.returncode == 0, resumed.stderr
    assert kill_server.batches_created == 1  # polled the same batch, never submitted again
    assert kill_server.request_count == 0
    out = workdir / "data" / "responses" / "local" / "naive.parquet"
    assert out.read_bytes() == normal_table
    batch = json.loads(out.with_suffix(".log.json").read_text())["batch"]
    assert batch["resumed"] == ["batch_1"] and batch["completed"] == 12
    assert "12 of them answered by batch job(s) batch_1" in resumed.stdout


def test_a_server_without_a_batch_api_leaves_no_record_and_names_the_way_out(
    prompts: pl.DataFrame, tmp_path: Path
) -> None:
    cache = tmp_path / "calls.sqlite"
    with OpenAIServer(batch_api=False) as server:
        spec = ModelSpec.from_config(server.model_config("local"))
        options = CallOptions(cache_path=cache)
        with pytest.raises(LosonaError) as refused:
            sample_cell(prompts, spec, "naive", 3, options, batch=FAST)
        message = str(refused.value)
        assert "could not upload the batch file (NotFoundError (404)" in message
        # Nothing was submitted: no promise of a job to resume, and no record of one.
        assert "Nothing was submitted." in message and "a rerun resumes" not in message
        assert f"{server.url} answers 404 to OpenAI's Batch API" in message
        assert "Set sampling.batch=false to call the model one call at a time." in message
        assert not list(state_dir(cache).glob("*.json"))
        # And so it is: without batch mode the same cell runs.
        sampled = sample_cell(prompts, spec, "naive", 3, options)
    assert sampled.responses.height == 12
