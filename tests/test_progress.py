"""Progress off a terminal: a line when calls start, one at a steady interval, one at the end.

Under DVC a stage's standard error is no terminal, and a cell of the embedded model or a
CPU server used to stay silent for minutes. The lines say calls done of the total, cache
hits, failures and spend (the worker loop's postfix), the rate and the time left.
"""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import polars as pl
import yaml
from conftest import run_stage

from losona.files import write_parquet
from losona.models.progress import LineProgress, duration, progress_bar
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
    progress = LineProgress("sample m/naive", 10, 4, interval_s=0.05, stream=stream, clock=clock)
    with progress:
        # No call answered yet: the lines keep coming all the same (from a timer).
        time.sleep(0.18)
        clock.now += 20
        progress.update(2)
        progress.set_postfix_str("cached 4, failed 0, $0.0123")
        time.sleep(0.12)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "sample m/naive: 10 calls, 4 answered from the call cache, 6 to make"
    waiting = [line for line in lines if "no call answered yet" in line]
    assert len(waiting) >= 2, lines  # at the interval, while nothing moved
    assert waiting[0] == "sample m/naive: 4 of 10 calls done, no call answered yet, 0 s so far"
    # 2 calls made in 20 s: 0.10 calls/s, 4 to go: 40 s left.
    assert (
        "sample m/naive: 6 of 10 calls done (cached 4, failed 0, $0.0123), 0.10 calls/s, "
        "about 40 s left, 20 s so far"
    ) in lines
    assert lines[-1] == (
        "sample m/naive: 6 of 10 calls done (cached 4, failed 0, $0.0123), 0.10 calls/s in 20 s"
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
    assert lines[0] == "sample local/naive: 12 calls, 0 answered from the call cache, 12 to make"
    assert re.fullmatch(
        r"sample local/naive: 12 of 12 calls done \(cached 0, failed 0, \$0\.0000\), "
        r"[\d.]+ calls/s in \d+ s",
        lines[-1],
    ), lines
