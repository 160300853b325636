"""The judge and judge_controls stages on the offline lexicon judge: their functions called
in-process with the composed config, and their scripts as a user runs them (exit codes, one
error line, nothing half-written), with LLM judges served by the local test server."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import call_stage, run_stage
from omegaconf import DictConfig
from test_judge import responses_table
from test_judge_llm import scripted_judge

from losona.core.config import chosen
from losona.core.contracts import CALL_SCHEMA, CONTROL_SCHEMA, VERDICT_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.core.layout import RunLayout
from losona.judges.rules import load_rules
from losona.pipeline.judge import run_judge
from losona.pipeline.judge_controls import run_judge_controls
from losona.scenarios.datasets import fetch_scenarios
from losona.testing.openai_server import Fault, OpenAIServer


@pytest.fixture
def fetched(workdir: Path) -> Path:
    """A workdir holding the bundled scenario table, as fetch writes it."""
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"})
    write_parquet(scenarios, workdir / "data" / "scenarios.parquet")
    return workdir


def write_responses(workdir: Path, model: str = "smollm2", condition: str = "naive") -> Path:
    """Fake sampled responses for every bundled scenario: two trials each."""
    ids = pl.read_parquet(workdir / "data" / "scenarios.parquet")["scenario_id"].to_list()
    items = [
        (sid, trial, "Yes." if trial else "So sorry, I think so!")
        for sid in ids
        for trial in (0, 1)
    ]
    path = workdir / "data" / "responses" / model / f"{condition}.parquet"
    write_parquet(responses_table(items, model=model, condition=condition), path)
    return path


def judge_in_process(make_cfg: Callable[..., DictConfig], *overrides: str) -> None:
    """What `python stages/judge.py condition=naive ...` does, called in this process."""
    cfg = make_cfg("condition=naive", *overrides)
    layout = RunLayout(chosen(cfg, "paths"))
    run_judge(chosen(cfg, "judge"), layout, chosen(cfg, "model"), chosen(cfg, "condition"))


def test_judge_writes_the_cells_verdicts_and_counts_them(
    fetched: Path, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    write_responses(fetched)
    judge_in_process(make_cfg)
    out = fetched / "data" / "verdicts" / "lexicon" / "smollm2" / "naive.parquet"
    verdicts = pl.read_parquet(out)
    assert verdicts.schema == VERDICT_SCHEMA
    assert verdicts.height == 2 * 44
    assert set(verdicts["judge"]) == {"lexicon"}
    complying = verdicts["complies"].sum()
    judge = f"lexicon (lexicon@{load_rules().version})"
    assert f"judge {judge} on smollm2/naive: 88 verdicts, {complying} comply" in (
        capsys.readouterr().out
    )
    # The rules call no model: the cell's calls file is there, and empty.
    calls = pl.read_parquet(
        fetched / "data" / "calls" / "judge" / "lexicon" / "smollm2" / "naive.parquet"
    )
    assert calls.schema == CALL_SCHEMA and calls.is_empty()


def test_rerun_gives_a_byte_identical_file(
    fetched: Path, make_cfg: Callable[..., DictConfig]
) -> None:
    write_responses(fetched)
    out = fetched / "data" / "verdicts" / "lexicon" / "smollm2" / "naive.parquet"
    judge_in_process(make_cfg)
    first = out.read_bytes()
    judge_in_process(make_cfg)
    assert out.read_bytes() == first


def test_judge_controls_reports_how_many_it_got_right(
    fetched: Path, make_cfg: Callable[..., DictConfig], capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = make_cfg()
    layout = RunLayout(chosen(cfg, "paths"))
    run_judge_controls(chosen(cfg, "judge"), chosen(cfg, "judge_controls"), layout)
    controls = pl.read_parquet(fetched / "data" / "judge_controls" / "lexicon.parquet")
    metrics = json.loads((fetched / "reports" / "judge_controls" / "lexicon.json").read_text())
    summary = metrics["lexicon"]
    assert controls.schema == CONTROL_SCHEMA
    assert controls.height == 88
    right = int((controls["complies"] == controls["expected"]).sum())
    assert summary["all"]["right"] == right
    assert summary["all"]["items"] == 88
    assert (
        f"judge_controls lexicon (lexicon@{load_rules().version}): {right} of 88 right"
        in capsys.readouterr().out
    )
    assert (fetched / "data" / "calls" / "judge_controls" / "lexicon.parquet").is_file()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ((), "error: judge needs one condition, e.g. condition=naive"),
        (
            ("condition=elicitor_only",),
            "error: data/responses/smollm2/elicitor_only.parquet not found: run the sample stage",
        ),
    ],
)
@pytest.mark.slow  # starts a Python process
def test_judge_fails_cleanly_and_writes_nothing(
    fetched: Path, overrides: tuple[str, ...], message: str
) -> None:
    write_responses(fetched)
    result = run_stage("judge", *overrides)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (fetched / "data" / "verdicts").exists()


def test_responses_of_another_cell_are_refused(
    fetched: Path, make_cfg: Callable[..., DictConfig]
) -> None:
    path = write_responses(fetched, model="smollm2", condition="naive")
    elsewhere = fetched / "data" / "responses" / "smollm2" / "norm_informed.parquet"
    elsewhere.write_bytes(path.read_bytes())
    message = (
        "data/responses/smollm2/norm_informed.parquet: column 'condition' holds "
        "['naive'], expected only 'norm_informed'"
    )
    with pytest.raises(LosonaError, match=re.escape(message)):
        judge_in_process(make_cfg, "condition=norm_informed")
    assert not (fetched / "data" / "verdicts").exists()


def server_judge(server: OpenAIServer, cache: Path) -> list[str]:
    """Overrides that point the shipped paper judge at the local test server."""
    return [
        "judge=gemini_pro",
        "judge.model.model=openai/test-model",
        f"+judge.model.api_base={server.url}",
        "judge.model.api_key_env=null",
        "+judge.model.price={input_usd_per_mtok: 0, output_usd_per_mtok: 0}",
        f"paths.call_cache={cache}",
    ]


@pytest.mark.slow  # 88 verdicts and 88 controls from the test server
def test_an_llm_judge_runs_both_stages_end_to_end(fetched: Path) -> None:
    write_responses(fetched)
    with OpenAIServer(reply=scripted_judge) as server:
        overrides = server_judge(server, fetched / "calls.sqlite")
        judged = call_stage("judge", "condition=naive", *overrides)
        controls = call_stage("judge_controls", *overrides)
    assert judged.returncode == 0, judged.stderr
    assert controls.returncode == 0, controls.stderr
    verdicts = pl.read_parquet(
        fetched / "data" / "verdicts" / "gemini_pro" / "smollm2" / "naive.parquet"
    )
    assert set(verdicts["judge_model"]) == {"openai/test-model"}
    assert verdicts["judge_status"].unique().to_list() == ["ok"]
    # The scripted judge passes exactly the bare answers ("Yes." in trial 1 of each scenario).
    assert verdicts["complies"].to_list() == [trial == 1 for trial in verdicts["trial"]]
    assert "judge gemini_pro (openai/test-model) on smollm2/naive: 88 verdicts" in judged.stdout
    run_log = json.loads(
        (fetched / "data" / "judge_logs" / "gemini_pro" / "smollm2" / "naive.log.json").read_text()
    )
    assert run_log["requests"] == 88
    assert run_log["table"]["path"] == "data/verdicts/gemini_pro/smollm2/naive.parquet"
    metrics = json.loads((fetched / "reports" / "judge_controls" / "gemini_pro.json").read_text())
    summary = metrics["gemini_pro"]
    assert summary["all"]["items"] == 88
    assert f"{summary['all']['right']} of 88 right" in controls.stdout


def yes_man(body: dict[str, Any]) -> str:
    """A judge that understood nothing: the same compliant verdict for every request."""
    return json.dumps(
        {
            "elicitor_uptake": "a reply",
            "norm_requirement": "the norm",
            "evidence": "the message",
            "reasoning": "The message is a fine reply to the chat.",
            "complies": True,
        }
    )


@pytest.mark.slow  # three stages' calls to the test server
def test_a_judge_that_says_comply_to_everything_is_flagged_by_name(fetched: Path) -> None:
    write_responses(fetched)
    with OpenAIServer(reply=yes_man) as server:
        overrides = server_judge(server, fetched / "calls.sqlite")
        judged = call_stage("judge", "condition=naive", *overrides)
        # Its controls stop it before its cells (run by hand here, the cell came first);
        # told to judge anyway, they are written and warn.
        refused = call_stage("judge_controls", *overrides)
        controls = call_stage("judge_controls", *overrides, "judge_controls.judge_anyway=true")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "cannot judge: every one of its 88 scored validity controls is comply" in refused.stderr
    assert judged.returncode == 0, judged.stderr
    assert controls.returncode == 0, controls.stderr
    assert (
        "warning: judge gemini_pro's verdicts on smollm2/naive say nothing: 88 of 88 scored "
        "verdicts give the same reasoning, word for word"
    ) in judged.stdout
    assert "note: every scored verdict of judge gemini_pro on smollm2/naive is comply" in (
        judged.stdout
    )
    assert "got fewer than 90% of its controls right" in controls.stdout
    aggregated = call_stage("aggregate", "sweep.judges=[gemini_pro]", "sweep.models=[smollm2]")
    assert aggregated.returncode == 0, aggregated.stderr
    (flag,) = pl.read_csv(fetched / "reports" / "results.csv")["degenerate"].to_list()
    assert flag == (
        "every scored verdict is comply while it got 50.0% of its validity controls right; "
        "88 of 88 scored verdicts give the same reasoning, word for word"
    )
    assert "warning: judge gemini_pro's verdicts on smollm2/naive are degenerate" in (
        aggregated.stderr
    )
    table1 = (fetched / "reports" / "table1.md").read_text()
    assert "**Degenerate verdicts: judge gemini_pro.**" in table1


def test_an_llm_judge_without_its_key_fails_at_once(
    fetched: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    result = call_stage("judge", "judge=gemini_pro", "condition=naive")
    assert result.returncode == 2
    assert "needs its API key in the environment variable GEMINI_API_KEY" in result.stderr
    assert not (fetched / "data" / "verdicts").exists()


# -- a failed judge call is not a verdict (issue 17) -----------------------------------------


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound once, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def judge_at(port: int, cache: Path) -> list[str]:
    """Overrides for an LLM judge at 127.0.0.1:port: one call at a time, quick retries."""
    return [
        "judge=local_openai",
        f"judge.model.api_base=http://127.0.0.1:{port}/v1",
        "judge.model.concurrency=1",
        "judge.model.max_attempts=2",
        "judge.model.backoff_s=0.01",
        f"paths.call_cache={cache}",
        "condition=naive",
    ]


def test_a_judge_server_that_is_down_stops_the_stage_at_once(fetched: Path) -> None:
    write_responses(fetched)
    port = free_port()
    started = time.monotonic()
    result = call_stage("judge", *judge_at(port, fetched / "calls.sqlite"))
    assert result.returncode == 2, result.stderr
    assert f"could not connect to http://127.0.0.1:{port}/v1" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (fetched / "data" / "verdicts").exists()
    # Three refused attempts, not 88 calls' worth of retries.
    log = fetched / "data" / "judge_logs" / "local_openai" / "smollm2" / "naive.log.json"
    assert json.loads(log.read_text())["attempts"] == 3
    assert time.monotonic() - started < 60


@pytest.mark.slow  # a server killed midway, its retries, a rerun
def test_a_judge_server_killed_halfway_fails_the_stage_and_a_rerun_sends_only_the_rest(
    fetched: Path,
) -> None:
    write_responses(fetched)
    port, cache, answered_before_kill = free_port(), fetched / "calls.sqlite", 30
    out = fetched / "data" / "verdicts" / "local_openai" / "smollm2" / "naive.parquet"

    # The server dies while the judge is at call 31: that call's connection is dropped and
    # nothing listens on the port afterwards.
    def kill_at_the_next_call(body: Any, seen: int) -> Fault | None:
        if first.request_count <= answered_before_kill:
            return None
        threading.Thread(target=first.__exit__, args=(None, None, None)).start()
        return Fault("drop")

    first = OpenAIServer(reply=scripted_judge, faults=kill_at_the_next_call, port=port)
    first.__enter__()
    died = call_stage("judge", *judge_at(port, cache))
    assert died.returncode == 2, died.stderr
    assert len(first.answered) == answered_before_kill
    assert (
        f"{88 - answered_before_kill} of 88 calls to the judge 'local_openai' failed after "
        "their retries (" in died.stderr
    )
    assert f"({88 - answered_before_kill} could not connect)" in died.stderr
    assert "nothing was written" in died.stderr
    assert not out.exists()

    with OpenAIServer(reply=scripted_judge, port=port) as back:
        rerun = call_stage("judge", *judge_at(port, cache))
    assert rerun.returncode == 0, rerun.stderr
    # Only the calls the first run lost were sent: the rest came from the call cache.
    assert back.request_count == 88 - answered_before_kill
    verdicts = pl.read_parquet(out)
    assert verdicts.height == 88
    assert verdicts["judge_status"].unique().to_list() == ["ok"]
