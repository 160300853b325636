"""Each cell's run facts: calls, tokens and list cost in the report; the rest on request.

The report shows what a rerun does not change (from the cells' calls files); what does
change (cache hits, latency, this run's bill) stays in the run logs, and
`python -m losona.run_logs` prints it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import GoldenRun, run_dvc

from losona.core.contracts import CALL_SCHEMA, table
from losona.core.files import write_json, write_parquet
from losona.models.runlog import record_table
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


SAMPLE_LOG = Path("data/responses/local/naive.log.json")
SAMPLE_TABLE = Path("data/responses/local/naive.parquet")
JUDGE_LOG = Path("data/judge_logs/scripted/local/naive.log.json")
JUDGE_TABLE = Path("data/verdicts/scripted/local/naive.parquet")
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


def logged_cell(log: Path, table: Path, facts: dict[str, Any] = LOG) -> None:
    """A cell's table and its run log, as a stage leaves them."""
    write_parquet(calls(2, (1, 1), 0.0), table)
    write_json(facts, log)
    record_table(log, table)


def test_the_run_logs_are_printed_a_line_a_cell(workdir: Path) -> None:
    logged_cell(SAMPLE_LOG, SAMPLE_TABLE)
    judged = LOG | {"requests": 20, "cache_hits": 0, "completed": 20}
    logged_cell(JUDGE_LOG, JUDGE_TABLE, judged)
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


def test_a_log_whose_table_has_changed_since_is_refused(
    workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `git checkout <rev>` and `dvc checkout` bring back a cell's table, not its run log.
    logged_cell(SAMPLE_LOG, SAMPLE_TABLE)
    logged_cell(JUDGE_LOG, JUDGE_TABLE)
    write_parquet(calls(5, (1, 1), 0.0), SAMPLE_TABLE)
    controls = Path("data/judge_logs/scripted/controls.log.json")
    write_json(LOG, controls)  # a log that names no table
    lines: list[str] = []
    assert run_logs([], out=lines.append) == 0
    assert [line.split()[:2] for line in lines[2:3]] == [["judge", "scripted"]]
    assert lines[3:] == [
        "Not shown: 2 run log(s) that are not the run of their table now:",
        "  data/responses/local/naive.log.json: its table data/responses/local/naive.parquet "
        "has changed since",
        "  data/judge_logs/scripted/controls.log.json: it names no table (written before run "
        "logs named theirs)",
        "git checkout and dvc checkout restore a table, never its run log (a log differs on "
        "every run, so DVC does not keep it); to log a cell anew, rerun it: dvc repro --force "
        "--single-item <its stage> (the run's calls answer it, with no new call)",
    ]
    # No log left that is its table's run: an error, naming each.
    JUDGE_TABLE.unlink()
    assert run_logs([], out=lines.append) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no run log here is the run of the table it describes:\n")
    assert "  data/judge_logs/scripted/local/naive.log.json: its table " in err
    assert "data/verdicts/scripted/local/naive.parquet is gone" in err


@pytest.mark.slow  # a dvc repro of the golden run's sample cell with K = 2, then dvc checkout
def test_a_checked_out_run_is_not_shown_with_the_last_runs_log(
    golden_run: GoldenRun, own_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The steps: a run, another with more trials, then the first checked out again,
    # on the machine of the first run (its second trial resumes from the first's prompts).
    repo = golden_run.copy(tmp_path / "repo")
    golden_run.lend_prompt_states(own_home)
    log = repo / "data" / "responses" / "smollm2" / "naive.log.json"
    assert json.loads(log.read_text())["requests"] == 2  # two scenarios, K = 1
    assert [p.name for p in repo.glob("data/**/*.log.json")] == [log.name]  # its one run log
    run = repo / "conf" / "run.yaml"
    run.write_text(run.read_text().replace("  trials: 1 ", "  trials: 2 "))
    # Only the run's one logged cell: the stages after it keep no run log to show.
    run_dvc("repro", "sample@smollm2-naive", cwd=repo)
    assert json.loads(log.read_text())["requests"] == 4
    subprocess.run(["git", "checkout", "--", "conf/run.yaml", "dvc.lock"], cwd=repo, check=True)
    run_dvc("checkout", cwd=repo)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(repo)
        assert run_logs([], out=print) == 2
    err = capsys.readouterr().err
    assert "  data/responses/smollm2/naive.log.json: its table " in err
    assert "data/responses/smollm2/naive.parquet has changed since" in err
