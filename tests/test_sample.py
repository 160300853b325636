"""The sample stage: K responses per prompt, byte-identical reruns, failures, kills, DVC.

Subjects are served by the local OpenAI-compatible test server; the stage script finds
their configs through an extra Hydra search path, as a user's own config folder would be.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from conftest import REPO, call_stage, run_dvc, run_stage
from omegaconf import DictConfig

from losona.core.config import SamplingSettings, chosen
from losona.core.contracts import RESPONSE_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import sha256_file, write_parquet
from losona.core.layout import RunLayout
from losona.models import CallOptions, CallPlan, ModelSpec
from losona.pipeline.sample import run_sample
from losona.prompts.render import render_prompts
from losona.sampling.sample import sample_cell
from losona.scenarios.datasets import fetch_scenarios
from losona.testing.openai_server import Fault, OpenAIServer, body_digest, rate_limited


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


@pytest.fixture
def prompts(workdir: Path) -> pl.DataFrame:
    """Six bundled scenarios rendered under two conditions, where the stage reads them."""
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"}).head(6)
    table = render_prompts(scenarios, ["naive", "norm_informed"])
    write_parquet(table, workdir / "data" / "prompts.parquet")
    return table


def sample_stage(
    workdir: Path, server: OpenAIServer, *overrides: str, name: str = "local", **settings: Any
) -> subprocess.CompletedProcess[str]:
    """The sample stage (model=<name> condition=naive) against the server, in this process."""
    configs = workdir / "my_conf"
    (configs / "model").mkdir(parents=True, exist_ok=True)
    node = server.model_config(name, **settings)
    (configs / "model" / f"{name}.yaml").write_text(yaml.safe_dump(node))
    return call_stage(
        "sample",
        f"hydra.searchpath=[file://{configs}]",
        f"model={name}",
        "condition=naive",
        f"paths.call_cache={workdir / 'calls.sqlite'}",
        *overrides,
    )


def responses_path(workdir: Path, name: str = "local") -> Path:
    return workdir / "data" / "responses" / name / "naive.parquet"


# --- the library function --------------------------------------------------------------


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (
            {"trials": 0, "dry_run": False, "max_cost_usd": None},
            "conf/config.yaml: 'sampling.trials': expected an integer of at least 1, found 0",
        ),
        ({"trials": -3, "dry_run": False, "max_cost_usd": None}, "sampling.trials"),
        ({"trials": "3", "dry_run": False, "max_cost_usd": None}, "sampling.trials"),
        ({"trials": 3, "dry_run": "no", "max_cost_usd": None}, "sampling.dry_run"),
        ({"trials": 3, "dry_run": False, "max_cost_usd": -1}, "sampling.max_cost_usd"),
        # NaN compares false with everything: it would pass `< 0` and never trip the cap.
        (
            {"trials": 3, "dry_run": False, "max_cost_usd": float("nan")},
            "'sampling.max_cost_usd': expected null or a finite, non-negative number of "
            "dollars, found nan",
        ),
        (
            {"trials": 3, "dry_run": False, "max_cost_usd": float("inf")},
            "'sampling.max_cost_usd': expected .* finite.*, found inf",
        ),
        (
            {"trials": 3, "dry_run": False, "max_cost_usd": None, "batch_poll_s": float("nan")},
            "'sampling.batch_poll_s': expected a finite number above 0, found nan",
        ),
    ],
)
def test_bad_sampling_settings_are_refused(node: dict[str, Any], message: str) -> None:
    with pytest.raises(LosonaError, match=message):
        SamplingSettings.from_config(node)


def test_k_responses_per_prompt_in_the_response_contract(
    prompts: pl.DataFrame, server: OpenAIServer, tmp_path: Path
) -> None:
    spec = ModelSpec.from_config(server.model_config("local"))
    table = sample_cell(
        prompts, spec, "naive", 3, CallOptions(cache_path=tmp_path / "c.sqlite")
    ).responses.collect()
    assert table.schema == RESPONSE_SCHEMA and table.height == 6 * 3
    assert table.equals(table.sort("scenario_id", "trial"))
    naive = prompts.filter(pl.col("condition") == "naive")
    assert table["scenario_id"].unique().sort().to_list() == naive["scenario_id"].to_list()
    assert set(table["subject_model"]) == {"local"}
    assert set(table["provider_model"]) == {"openai/test-model"}
    assert set(table["trial"]) == {0, 1, 2}
    hashes = dict(naive.select("scenario_id", "prompt_sha256").iter_rows())
    assert all(hashes[s] == h for s, h in table.select("scenario_id", "prompt_sha256").iter_rows())
    per_scenario = table.group_by("scenario_id").agg(pl.col("response").n_unique())
    assert per_scenario["response"].to_list() == [3] * 6  # the K trials are distinct samples
    assert table["finish_reason"].to_list() == ["stop"] * 18
    assert (table["prompt_tokens"] > 100).all() and (table["completion_tokens"] > 0).all()


def test_a_condition_that_was_not_rendered_is_refused(
    prompts: pl.DataFrame, server: OpenAIServer, tmp_path: Path
) -> None:
    spec = ModelSpec.from_config(server.model_config())
    with pytest.raises(LosonaError, match="no prompts for condition 'oracle'"):
        sample_cell(prompts, spec, "oracle", 3, CallOptions(cache_path=tmp_path / "c.sqlite"))
    assert server.request_count == 0


# --- the stage: its function in-process, its script as a user runs it ----------------------


def test_without_its_key_a_model_fails_at_once_naming_the_variable(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    # No prompt table either: the key is checked before any work.
    result = call_stage("sample", "model=claude_opus", "condition=style_adaptation")
    assert result.returncode == 2, result.stderr
    assert "environment variable ANTHROPIC_API_KEY, which is not set" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (workdir / "data").exists()


def sample_in_process(
    make_cfg: Callable[..., DictConfig], server: OpenAIServer, *overrides: str
) -> None:
    """What `sample_stage` runs, called in this process: the stage's function with the
    composed config, the server's model checked as a config option is."""
    cfg = make_cfg("condition=naive", f"paths.call_cache={Path.cwd() / 'calls.sqlite'}", *overrides)
    run_sample(
        chosen(cfg, "sampling"),
        RunLayout(chosen(cfg, "paths")),
        ModelSpec.from_config(server.model_config("local")),
        chosen(cfg, "condition"),
        functools.partial(chosen, cfg, "dataset"),
    )


def test_the_stage_writes_responses_and_reruns_byte_identically_from_the_cache(
    workdir: Path,
    prompts: pl.DataFrame,
    server: OpenAIServer,
    make_cfg: Callable[..., DictConfig],
    capsys: pytest.CaptureFixture[str],
) -> None:
    sample_in_process(make_cfg, server)
    out = responses_path(workdir)
    first = out.read_bytes()
    assert pl.read_parquet(out).height == 18 and server.request_count == 18
    printed = capsys.readouterr().out
    assert "18 responses (local, naive, 3 trials; 0 from the call cache, 18 new" in printed
    assert printed.rstrip().endswith(f"-> {out.relative_to(workdir)}")
    calls = workdir / "data" / "calls" / "sample" / "local" / "naive.parquet"
    assert pl.read_parquet(calls).height == 18  # the calls the table was built from
    log = out.with_suffix(".log.json")
    assert '"cache_misses": 18' in log.read_text()
    # The log names the table it describes: run_logs refuses it once the table has changed.
    assert json.loads(log.read_text())["table"] == {
        "path": out.relative_to(workdir).as_posix(),
        "sha256": sha256_file(out),
    }
    sample_in_process(make_cfg, server)
    assert out.read_bytes() == first and server.request_count == 18
    assert "18 from the call cache, 0 new calls" in capsys.readouterr().out
    assert '"cache_hits": 18' in log.read_text()  # the run log moves, the table does not
    # The sweep's K comes from the config: more trials add calls, reusing the first three.
    sample_in_process(make_cfg, server, "sampling.trials=4")
    assert server.request_count == 24


def test_failed_calls_exit_nonzero_write_nothing_and_a_rerun_sends_only_those(
    workdir: Path, prompts: pl.DataFrame, server: OpenAIServer
) -> None:
    # Every call of the first naive prompt (its three trials) fails.
    failing = prompts.filter(pl.col("condition") == "naive")["messages"][0][0]["content"]
    server.faults = lambda body, seen: (
        Fault("server_error") if body["messages"][0]["content"] == failing else None
    )
    result = sample_stage(workdir, server, max_attempts=2)
    assert result.returncode == 2
    assert (
        "3 of 18 calls to 'local' failed after their retries (3 InternalServerError (500)); "
        "nothing was written" in result.stderr
    )
    assert "3 x InternalServerError (500)" in result.stderr and "Traceback" not in result.stderr
    assert not responses_path(workdir).exists()
    assert server.request_count == 15 + 3 * 2
    server.faults = None
    assert sample_stage(workdir, server).returncode == 0
    assert server.request_count == 21 + 3  # only the three failed calls were sent again


@pytest.mark.slow  # 264 calls, half of their sends refused and retried
def test_a_run_with_half_its_sends_rate_limited_finishes_in_one_go(workdir: Path) -> None:
    # The bundled set under one condition, K = 6: 264 calls. With every send drawn 50:50,
    # a bound of 6 attempts would leave about 264 / 2**6 = 4 calls failed.
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"})
    write_parquet(render_prompts(scenarios, ["naive"]), workdir / "data" / "prompts.parquet")
    with OpenAIServer(faults=rate_limited(0.5, retry_after=0.02)) as server:
        result = sample_stage(workdir, server, "sampling.trials=6")
    assert result.returncode == 0, result.stderr
    log = json.loads(responses_path(workdir).with_suffix(".log.json").read_text())
    assert log["completed"] == 264 and log["failed"] == 0
    sends = collections.Counter(body_digest(body) for body in server.requests)
    assert max(sends.values()) > 6  # some calls were refused more often than 6 times
    assert server.faults_injected["rate_limit"] >= 200  # about as many as answers
    assert log["retried_errors"] == {"RateLimitError (429)": server.faults_injected["rate_limit"]}
    assert log["concurrency"]["cuts_on_429"] >= 1


def test_a_dry_run_counts_calls_and_cost_and_calls_nothing(
    workdir: Path, prompts: pl.DataFrame, server: OpenAIServer
) -> None:
    price = {"input_usd_per_mtok": 2.0, "output_usd_per_mtok": 8.0}
    result = sample_stage(workdir, server, "sampling.dry_run=true", price=price)
    assert result.returncode == 0, result.stderr
    assert "local: 18 calls, 0 already cached, 18 to make" in result.stdout
    cost = re.search(r"estimated cost \$(\d+\.\d{4}) \(", result.stdout)
    # Counted prompt tokens at $2/Mtok plus 500 expected completion tokens at $8/Mtok.
    assert cost and 18 * 500 * 8e-6 < float(cost.group(1)) < 18 * (1500 * 2 + 500 * 8) * 1e-6
    # The three prices: list, with the provider's prompt caching, with caching and batch.
    three = re.search(
        r"list \$(\d+\.\d{4}), with prompt caching \$(\d+\.\d{4}) \([+-]\d+\.\d%\), "
        r"with caching and batch \$(\d+\.\d{4}) \([+-]\d+\.\d%\) \(.*batch: (.*)\)",
        result.stdout,
    )
    assert three and three.group(1) == cost.group(1)
    assert float(three.group(2)) <= float(three.group(1))
    # A server of one's own may well have no Batch API: the dry run does not promise one.
    assert three.group(4) == (
        f"a server of your own: batch at its list price, batch mode only if {server.url} "
        "serves OpenAI's Batch API (/files, /batches), which vLLM, llama.cpp and Ollama do not"
    )
    assert server.request_count == 0 and not responses_path(workdir).exists()


def test_a_dry_run_without_a_condition_prices_every_cell_of_the_sweep_and_their_sum(
    workdir: Path, prompts: pl.DataFrame, server: OpenAIServer
) -> None:
    result = call_stage(
        "sample",
        "sampling.dry_run=true",
        "sweep.models=[gpt_5_5,claude_opus]",
        "sweep.conditions=[naive,norm_informed]",
        f"paths.call_cache={workdir / 'calls.sqlite'}",
    )
    assert result.returncode == 0, result.stderr
    cells = re.findall(
        r"\): (naive|norm_informed), (gpt_5_5|claude_opus): 18 calls.*\n"
        r"  list \$(\d+\.\d{4}), with prompt caching \$(\d+\.\d{4}).*"
        r"with caching and batch \$(\d+\.\d{4})",
        result.stdout,
    )
    assert {(c[0], c[1]) for c in cells} == {
        (condition, model)
        for condition in ("naive", "norm_informed")
        for model in ("gpt_5_5", "claude_opus")
    }
    total = re.search(
        r"the sweep, 4 cells: 72 calls, 0 already cached, 72 to make.*\n"
        r"  list \$(\d+\.\d{4}), with prompt caching \$(\d+\.\d{4}).*"
        r"with caching and batch \$(\d+\.\d{4})",
        result.stdout,
    )
    assert total, result.stdout
    for column in range(3):  # list, with caching, with caching and batch
        summed = sum(float(cell[2 + column]) for cell in cells)
        assert abs(float(total.group(1 + column)) - summed) < 0.0005
    assert float(total.group(3)) < float(total.group(1))  # both providers batch at half
    assert server.request_count == 0 and not (workdir / "data" / "responses").exists()


def test_the_sum_of_plans_leaves_out_an_unknown_price_and_says_so() -> None:
    priced = CallPlan("a", 10, 2, 1.0, "counted", 0.5, 0.25, "rules")
    unknown = CallPlan("b", 4, 0, None, "no price")
    total = CallPlan.total([priced, priced, unknown])
    assert (total.requests, total.cached, total.to_call) == (24, 4, 20)
    assert (total.estimated_cost_usd, total.with_caching_usd, total.with_batch_usd) == (
        2.0,
        1.0,
        0.5,
    )
    assert "1 cell(s) of unknown price left out" in total.describe()
    assert CallPlan.total([unknown]).estimated_cost_usd is None


@pytest.mark.slow  # starts a Python process
def test_the_config_must_be_named_after_its_file(
    workdir: Path, prompts: pl.DataFrame, server: OpenAIServer
) -> None:
    configs = workdir / "my_conf" / "model"
    configs.mkdir(parents=True)
    (configs / "mine.yaml").write_text(yaml.safe_dump(server.model_config("other")))
    result = run_stage(
        "sample", f"hydra.searchpath=[file://{configs.parent}]", "model=mine", "condition=naive"
    )
    assert result.returncode == 2
    expected = "conf/model/mine.yaml: 'model.name': expected the file's name 'mine', found 'other'"
    assert expected in result.stderr


def start_sampling(workdir: Path, server: OpenAIServer, stderr: int) -> subprocess.Popen[str]:
    """Start sampling 5 trials of the naive cell from `server`, in the background (to be
    killed or interrupted midway), into workdir's own call cache."""
    configs = workdir / "my_conf"
    (configs / "model").mkdir(parents=True, exist_ok=True)
    (configs / "model" / "local.yaml").write_text(
        yaml.safe_dump(server.model_config("local", concurrency=2))
    )
    return subprocess.Popen(
        [
            sys.executable,
            str(REPO / "stages" / "sample.py"),
            f"hydra.searchpath=[file://{configs}]",
            "model=local",
            "condition=naive",
            "sampling.trials=5",
            f"paths.call_cache={workdir / 'calls.sqlite'}",
        ],
        cwd=workdir,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
    )


@pytest.mark.slow
def test_a_run_killed_midway_resumes_without_resending_a_completed_call(
    workdir: Path, prompts: pl.DataFrame, tmp_path: Path
) -> None:
    with OpenAIServer(latency=0.05) as clean_server:
        assert sample_stage(workdir, clean_server, "sampling.trials=5").returncode == 0
    clean = responses_path(workdir).read_bytes()
    responses_path(workdir).unlink()
    (workdir / "calls.sqlite").unlink()

    with OpenAIServer(latency=0.05) as server:
        stage = start_sampling(workdir, server, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while len(server.answered) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(stage.pid, signal.SIGKILL)
        stage.wait()
        killed_after = len(server.requests)
        answered_before = {str(b) for b in server.answered}
        with sqlite3.connect(workdir / "calls.sqlite") as db:
            saved = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
        # Killed midway: some calls stored (all but those in flight), no table written.
        assert 0 < saved < 30 and not responses_path(workdir).exists()

        resumed = run_stage(
            "sample",
            f"hydra.searchpath=[file://{workdir / 'my_conf'}]",
            "model=local",
            "condition=naive",
            "sampling.trials=5",
            f"paths.call_cache={workdir / 'calls.sqlite'}",
        )
        assert resumed.returncode == 0, resumed.stderr
        second = server.requests[killed_after:]
    # Every call the cache held was skipped; every other call was sent exactly once.
    assert len(second) == 30 - saved
    assert len({str(b) for b in second}) == len(second)
    # At most the calls in flight at the kill (answered, not yet stored) went out twice.
    assert len(answered_before & {str(b) for b in second}) <= 2
    assert responses_path(workdir).read_bytes() == clean


def stages_run(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


@pytest.mark.slow
def test_changing_one_models_config_reruns_only_its_sample_stages(
    repo_copy: Path, tmp_path: Path
) -> None:
    with OpenAIServer() as server:
        for name in ("fake_a", "fake_b"):
            node = server.model_config(name)
            (repo_copy / "conf" / "model" / f"{name}.yaml").write_text(yaml.safe_dump(node))
        params = repo_copy / "params.yaml"
        params.write_text(
            "dataset: bundled\nsweep:\n  models: [fake_a, fake_b]\n"
            "  conditions: [naive, norm_informed]\n  judges: [lexicon]\n"
        )
        paths = repo_copy / "conf" / "paths" / "default.yaml"
        paths.write_text(
            re.sub(r"call_cache: .*", f"call_cache: {tmp_path / 'calls.sqlite'}", paths.read_text())
        )
        cells = {
            f"sample@{m}-{c}" for m in ("fake_a", "fake_b") for c in ("naive", "norm_informed")
        }
        assert stages_run(run_dvc("repro", "sample", cwd=repo_copy).stdout) == {
            "preflight",
            "fetch",
            "render",
            *cells,
        }
        calls = server.request_count
        table = repo_copy / "data" / "responses" / "fake_a" / "naive.parquet"
        before = table.read_bytes()

        config = repo_copy / "conf" / "model" / "fake_a.yaml"
        config.write_text(config.read_text().replace("concurrency: 4", "concurrency: 3"))
        rerun = stages_run(run_dvc("repro", "sample", cwd=repo_copy).stdout)
        assert rerun == {"sample@fake_a-naive", "sample@fake_a-norm_informed"}
        # Served from the call cache: no call, and the same bytes, so DVC stops there.
        assert server.request_count == calls and table.read_bytes() == before
        assert stages_run(run_dvc("repro", "sample", cwd=repo_copy).stdout) == set()


def test_a_dry_run_before_any_run_renders_in_memory_writes_nothing_and_prices_as_after_render(
    workdir: Path,
) -> None:
    # A fresh work dir: no data/, no call cache. The README's first step for a new model.
    cache = workdir / "cache" / "calls.sqlite"
    dry_run = (
        "sample",
        "sampling.dry_run=true",
        "sweep.models=[gpt_5_5]",
        "sweep.conditions=[naive,norm_informed]",
        "dataset.limit=4",
        f"paths.call_cache={cache}",
    )
    before = call_stage(*dry_run)
    assert before.returncode == 0, before.stderr
    assert before.stdout.splitlines()[0] == (
        "sample (dry run): no data/prompts.parquet yet, so the prompts are rendered in memory "
        "from the dataset 'bundled'; nothing is written"
    )
    assert "the sweep, 2 cells: 24 calls, 0 already cached, 24 to make" in before.stdout
    assert sorted(p.name for p in workdir.iterdir()) == ["conf", "params.yaml"]

    # After fetch and render the same dry run prices the very same prompts.
    for stage in ("fetch", "render"):
        made = call_stage(stage, "dataset.limit=4", "sweep.conditions=[naive,norm_informed]")
        assert made.returncode == 0, made.stderr
    after = call_stage(*dry_run)
    assert after.returncode == 0, after.stderr
    assert after.stdout.splitlines() == before.stdout.splitlines()[1:]


@pytest.mark.slow  # runs the stage script against a slow server
def test_ctrl_c_stops_a_stage_with_one_line_naming_the_calls_kept(
    workdir: Path, prompts: pl.DataFrame
) -> None:
    with OpenAIServer(latency=0.05) as server:
        cache = workdir / "calls.sqlite"
        stage = start_sampling(workdir, server, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while len(server.answered) < 6 and time.monotonic() < deadline:
            time.sleep(0.01)
        stage.send_signal(signal.SIGINT)  # what Ctrl-C sends
        _, err = stage.communicate(timeout=60)
    assert stage.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    with sqlite3.connect(cache) as db:
        saved = db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    assert 0 < saved < 30 and not responses_path(workdir).exists()
    assert err.splitlines()[-1] == (
        f"interrupted: stopped by Ctrl-C; {saved} completed calls are kept in the call cache "
        f"({cache}) and will not be paid again: run the stage again to go on"
    )
