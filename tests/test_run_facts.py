"""Each cell's run facts: calls, tokens and list cost in the report; the rest on request.

The report shows what a rerun does not change (from the cells' calls files); what does
change (cache hits, latency, this run's bill) stays in the run logs, and
`python -m losona.run_logs` prints it.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from losona.contracts import CALL_SCHEMA, table
from losona.files import write_json, write_parquet
from losona.report.run_facts import cell_calls, facts_section
from losona.report.run_logs import main as run_logs


def calls(n: int, tokens: tuple[int, int], cost: float) -> pl.DataFrame:
    rows = [
        {
            "key": f"k{n}-{i}",
            "model": "openai/m",
            "text": "hi",
            "finish_reason": "stop",
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "cost_usd": cost,
        }
        for i in range(n)
    ]
    return table(rows, CALL_SCHEMA, sort_by=["key"])


def test_each_cell_shows_its_calls_tokens_and_list_cost(tmp_path: Path) -> None:
    root = tmp_path / "calls"
    write_parquet(calls(6, (100, 10), 0.001), root / "sample" / "local" / "naive.parquet")
    write_parquet(
        calls(6, (300, 40), 0.002), root / "judge" / "scripted" / "local" / "naive.parquet"
    )
    write_parquet(calls(0, (0, 0), 0.0), root / "judge" / "lexicon" / "local" / "naive.parquet")
    write_parquet(calls(4, (200, 30), 0.0), root / "judge_controls" / "scripted.parquet")
    found = cell_calls(root)
    assert found.rows() == [
        ("sample", None, "local", "naive", 6, 600, 60, 0.006),
        ("judge", "lexicon", "local", "naive", 0, 0, 0, 0.0),
        ("judge", "scripted", "local", "naive", 6, 1800, 240, 0.012),
        ("judge_controls", "scripted", None, None, 4, 800, 120, 0.0),
    ]
    labels = {"local": "Test server [TEST DOUBLE]", "naive": "Naive", "scripted": "Scripted"}
    body = facts_section(found, labels).body
    # In the reports' order (the labels'), not the files': naive before elicitor-only.
    write_parquet(calls(1, (1, 1), 0.0), root / "sample" / "local" / "elicitor_only.parquet")
    ordered = facts_section(cell_calls(root), labels | {"elicitor_only": "Elicitor-only"}).body
    assert ordered.index("/ Naive") < ordered.index("/ Elicitor-only")
    assert "sample: Test server [TEST DOUBLE] / Naive" in body
    assert "judge Scripted: Test server [TEST DOUBLE] / Naive" in body
    assert "validity controls: Scripted" in body
    assert "1,800" in body and "0.0180" in body  # the judge's prompt tokens; every cell's cost
    assert "python -m losona.run_logs" in body


LOG = {
    "requests": 18,
    "cache_hits": 12,
    "completed": 6,
    "failed": 0,
    "prompt_tokens_this_run": 600,
    "completion_tokens_this_run": 60,
    "latency_s": {"p50": 0.41, "p95": 1.2},
    "cost_usd_this_run": 0.0042,
    "wall_s": 3.5,
    "started_at": "2026-06-01T10:00:00+00:00",
}


def test_the_run_logs_are_printed_a_line_a_cell(workdir: Path) -> None:
    write_json(LOG, workdir / "data" / "responses" / "local" / "naive.log.json")
    judged = LOG | {"requests": 20, "cache_hits": 0, "completed": 20}
    write_json(judged, workdir / "data" / "judge_logs" / "scripted" / "local" / "naive.log.json")
    lines: list[str] = []
    assert run_logs([], out=lines.append) == 0
    assert lines[0].startswith("Each cell's last run, from its run log")
    header, sample, judge = lines[1:]
    assert header.split()[:4] == ["cell", "requests", "cache", "hits"]
    assert sample.split() == [
        "sample", "local/naive", "18", "12", "6", "0", "600", "60", "0.41/1.20", "0.0042",
        "3.50", "2026-06-01T10:00:00+00:00",
    ]  # fmt: skip
    assert judge.split()[:6] == ["judge", "scripted", "local/naive", "20", "0", "20"]


def test_no_run_log_is_an_error_that_says_what_to_run(workdir: Path, capsys: object) -> None:
    assert run_logs([], out=print) == 2
    assert "run the pipeline first (dvc repro)" in capsys.readouterr().err  # type: ignore[attr-defined]


def test_a_broken_run_log_is_named(workdir: Path, capsys: object) -> None:
    path = workdir / "data" / "responses" / "local" / "naive.log.json"
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert run_logs([], out=print) == 2
    err = capsys.readouterr().err  # type: ignore[attr-defined]
    assert "data/responses/local/naive.log.json: not a readable run log" in err
    assert json.loads(json.dumps(LOG))  # the fixture itself is fine
