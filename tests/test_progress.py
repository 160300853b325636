"""Progress off a terminal: a line when calls start, one at a steady interval, one at the end.

Under DVC a stage's standard error is no terminal, and a cell of the embedded model or a
CPU server used to stay silent for minutes. The lines say where the calls answered before
any is made came from (in the closing line's words), this run's calls made of those to
make, failures and spend (the worker loop's postfix), the rate and the time left, and which
cell and which round of a judge's calls they count.
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from conftest import run_stage

from losona.core.files import write_parquet
from losona.judges.run import judge_responses, make_judge
from losona.models import (
    CallOptions,
    CallStore,
    ModelSpec,
    PublishedCalls,
    Request,
    answer_sources,
    calls_table,
    complete,
    read_run_log,
)
from losona.models.progress import LineProgress, duration, progress_bar
from losona.models.published_calls import md5_file
from losona.prompts.render import render_prompts
from losona.scenarios.datasets import fetch_scenarios
from losona.testing.openai_server import OpenAIServer


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_come_at_a_steady_interval_with_rate_eta_cache_hits_and_spend() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = LineProgress(
        "sample m/naive",
        10,
        4,
        answered="3 from the run's published calls, 1 from the call cache",
        interval_s=0.05,
        stream=stream,
        clock=clock,
    )
    with progress:
        # No call answered yet: the lines keep coming all the same (from a timer).
        time.sleep(0.18)
        clock.now += 20
        progress.update(2)
        progress.set_postfix_str("failed 0, $0.0123")
        time.sleep(0.12)
    lines = stream.getvalue().splitlines()
    assert lines[0] == (
        "sample m/naive: 10 calls: 3 from the run's published calls, 1 from the call cache, "
        "6 to make"
    )
    waiting = [line for line in lines if "none answered yet" in line]
    assert len(waiting) >= 2, lines  # at the interval, while nothing moved
    # The 4 answered before count as none of this run's calls: 0 of the 6 to make.
    assert waiting[0] == "sample m/naive: 0 of 6 calls made, none answered yet, 0 s so far"
    # 2 calls made in 20 s: 0.10 calls/s, 4 to go: 40 s left.
    assert (
        "sample m/naive: 2 of 6 calls made (failed 0, $0.0123), 0.10 calls/s, "
        "about 40 s left, 20 s so far"
    ) in lines
    assert lines[-1] == (
        "sample m/naive: 2 of 6 calls made (failed 0, $0.0123), 0.10 calls/s in 20 s"
    )


def test_a_run_the_cache_answers_whole_prints_nothing() -> None:
    stream = io.StringIO()
    with LineProgress("judge", 5, 5, interval_s=0.01, stream=stream):
        time.sleep(0.05)
    assert stream.getvalue() == ""


def test_a_terminal_gets_the_bar_and_no_label_shows_nothing() -> None:
    assert isinstance(progress_bar("x", 3, 0), LineProgress)  # pytest's stderr is no terminal
    assert not isinstance(progress_bar(None, 3, 0), LineProgress)
    assert [duration(s) for s in (4.4, 200, 7300)] == ["4 s", "3 min 20 s", "2 h 01 min"]


@pytest.mark.slow  # starts a Python process
def test_the_sample_stage_under_a_pipe_says_how_far_it_is(workdir: Path) -> None:
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"}).head(4)
    write_parquet(render_prompts(scenarios, ["naive"]), workdir / "data" / "prompts.parquet")
    configs = workdir / "my_conf"
    (configs / "model").mkdir(parents=True)
    with OpenAIServer(latency=0.05) as server:
        node = server.model_config("local", concurrency=1)
        (configs / "model" / "local.yaml").write_text(yaml.safe_dump(node))
        result = run_stage(
            "sample",
            f"hydra.searchpath=[file://{configs}]",
            "model=local",
            "condition=naive",
            f"paths.call_cache={workdir / 'calls.sqlite'}",
        )
    assert result.returncode == 0, result.stderr
    assert pl.read_parquet(workdir / "data" / "responses" / "local" / "naive.parquet").height == 12
    lines = [line for line in result.stderr.splitlines() if line.startswith("sample local/naive")]
    assert lines[0] == "sample local/naive: 12 calls: 0 from the call cache, 12 to make"
    assert re.fullmatch(
        r"sample local/naive: 12 of 12 calls made \(failed 0, \$0\.0000\), "
        r"[\d.]+ calls/s in \d+ s",
        lines[-1],
    ), lines


def test_the_first_line_and_the_closing_line_agree_on_where_answers_came_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def requests(count: int) -> list[Request]:
        return [
            Request(messages=({"role": "user", "content": f"p{i}"},), trial=0) for i in range(count)
        ]

    with OpenAIServer() as server:
        spec = ModelSpec.from_config(server.model_config("m"))
        # A published run of 6 calls; this run asks them again and 4 more.
        made = complete(spec, requests(6), CallOptions(cache_path=tmp_path / "origin.sqlite"))
        path = tmp_path / "calls.parquet"
        write_parquet(calls_table(spec.model, made), path)
        store = CallStore(tmp_path / "mine.sqlite", PublishedCalls(path, md5_file(path), "x"))
        log = tmp_path / "run.log.json"
        options = CallOptions(cache_path=store, run_log=log, progress="sample m/naive")
        capsys.readouterr()
        complete(spec, requests(10), options)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == (
        "sample m/naive: 10 calls: 6 from the run's published calls, 0 from the call cache, "
        "4 to make"
    )
    assert lines[-1].startswith("sample m/naive: 4 of 4 calls made (failed 0, $")
    assert answer_sources(read_run_log(log)) == (
        "6 from the run's published calls, 0 from the call cache, 4 new calls"
    )


@pytest.mark.slow  # a judge on the test server
def test_a_judges_lines_name_its_cell_and_each_round(
    tmp_path: Path, scenario_row: Callable[..., dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    from test_judge import responses_table, scenarios_table
    from test_judge_llm import scripted_judge

    sid = scenario_row()["scenario_id"]
    # Two replies the scripted judge answers without JSON: a repair round of 2.
    sent = ["Yes.", "No.", "Nope, still running", "Yes, finished at 6."]
    responses = responses_table([(sid, trial, text) for trial, text in enumerate(sent)])
    with OpenAIServer(reply=scripted_judge) as server:
        node = server.model_config("scripted", seed_per_trial=False)
        judge = make_judge(
            {"name": "scripted", "kind": "llm", "model": node},
            CallOptions(cache_path=tmp_path / "calls.sqlite"),
        )
        capsys.readouterr()
        judge_responses(
            scenarios_table(scenario_row()),
            responses,
            judge,
            "scripted",
            model="smollm2",
            condition="naive",
            origin="responses.parquet",
        )
    lines = capsys.readouterr().err.splitlines()
    first, repair = (
        "judge scripted on smollm2/naive, first round",
        "judge scripted on smollm2/naive, repair round (2 replies it could not read asked again)",
    )
    assert lines[0] == f"{first}: 4 calls: 0 from the call cache, 4 to make"
    assert lines[1].startswith(f"{first}: 4 of 4 calls made (failed 0, $")
    assert lines[2] == f"{repair}: 2 calls: 0 from the call cache, 2 to make"
    assert lines[3].startswith(f"{repair}: 2 of 2 calls made (failed 0, $")


def test_a_run_stopped_midway_says_so_in_its_last_line() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = LineProgress("sample m/naive", 4, 0, stream=stream, clock=clock)
    with pytest.raises(KeyboardInterrupt), progress:
        clock.now += 10
        progress.update(1)
        raise KeyboardInterrupt
    assert stream.getvalue().splitlines()[-1] == (
        "sample m/naive: 1 of 4 calls made, 0.10 calls/s in 10 s, stopped before the end"
    )
