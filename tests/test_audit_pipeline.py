"""The audit as a user meets it: two judges under `dvc repro`, a labelling round trip, then
determinism against the server made unsteady.

On a temporary copy of the repo, the sweep is one model x two conditions and the judges
are the lexicon and `local_openai`, the scripted judge the test server serves (as
`python -m losona.testing.openai_server --judge` in docs/offline.md). The sampled responses
are written by the test and recorded with `dvc commit`: no model runs.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import polars as pl
import pytest
import yaml
from conftest import BASE_ROW, rerun_stages, run_dvc, run_layout
from test_judge import responses_table

from losona.core.catalog import load_catalog
from losona.core.contracts import Scenario
from losona.core.files import write_parquet
from losona.judges.base import JudgeCase
from losona.judges.lexicon import LexiconJudge
from losona.judges.prompt import judge_messages
from losona.judges.reply import parse_verdict
from losona.models import calls_table
from losona.testing.openai_server import OpenAIServer, default_reply
from losona.testing.scripted_judge import ScriptedJudge, template_copy

CONDITIONS = ("naive", "norm_informed")
PAIR = "lexicon_vs_local_openai"


def stages_run(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def audit_stage(repo: Path, *overrides: str) -> subprocess.CompletedProcess[str]:
    """`python stages/audit.py ...` in the copy, as a user types it there."""
    return subprocess.run(
        [sys.executable, "stages/audit.py", *overrides],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(reply=ScriptedJudge()) as running:
        yield running


@pytest.fixture
def repo(repo_copy: Path, server: OpenAIServer, tmp_path: Path) -> Path:
    """The copy with judges [lexicon, local_openai] over smollm2 x 2 conditions, sampled."""
    params = {
        "dataset": "bundled",
        "sweep": {
            "models": ["smollm2"],
            "conditions": list(CONDITIONS),
            "judges": ["lexicon", "local_openai"],
        },
    }
    (repo_copy / "params.yaml").write_text(yaml.safe_dump(params))
    judge = repo_copy / "conf" / "judge" / "local_openai.yaml"
    judge.write_text(re.sub(r"api_base: .*", f"api_base: {server.url}", judge.read_text()))
    paths_file = repo_copy / "conf" / "paths" / "default.yaml"
    paths = re.sub(
        r"call_cache: .*", f"call_cache: {tmp_path / 'calls.sqlite'}", paths_file.read_text()
    )
    paths_file.write_text(paths)
    (repo_copy / "dvc.lock").unlink(missing_ok=True)
    for stale in ("reports/metrics.json", "reports/audit/metrics.json"):
        (repo_copy / stale).unlink(missing_ok=True)

    run_dvc("repro", "render", cwd=repo_copy)
    scenarios = pl.read_parquet(repo_copy / "data" / "scenarios.parquet")
    for condition in CONDITIONS:
        items = [
            (row["scenario_id"], trial, text)
            for row in scenarios.iter_rows(named=True)
            for trial, text in enumerate(
                (
                    row["example_compliant_response"],
                    row["example_breaching_response"],
                    row["example_compliant_response"]
                    if condition == "norm_informed"
                    else "Sure, happy to help! Let me know if you need anything else.",
                )
            )
        ]
        out = repo_copy / "data" / "responses" / "smollm2" / f"{condition}.parquet"
        write_parquet(responses_table(items, condition=condition), out)
        # Written by hand, these responses rest on no model call: the cell's calls file is empty.
        calls = repo_copy / "data" / "calls" / "sample" / "smollm2" / f"{condition}.parquet"
        write_parquet(calls_table("", []), calls)
    # Both cells in one command: each DVC command costs seconds of DVC's start.
    run_dvc("commit", "--force", *(f"sample@smollm2-{c}" for c in CONDITIONS), cwd=repo_copy)
    return repo_copy


def verdicts(repo: Path, judge: str) -> pl.DataFrame:
    return pl.concat(
        pl.read_parquet(repo / "data" / "verdicts" / judge / "smollm2" / f"{c}.parquet")
        for c in CONDITIONS
    )


KEY = ["scenario_id", "subject_model", "condition", "trial"]


@pytest.mark.slow
def test_dvc_repro_audits_two_judges_a_labelling_round_trip_and_determinism(
    repo: Path, server: OpenAIServer
) -> None:
    first = run_dvc("repro", cwd=repo)
    assert {"audit", "plot", "aggregate", "judge@local_openai-smollm2-naive"} <= stages_run(
        first.stdout
    )
    assert "audit: lexicon vs local_openai: " in first.stdout

    # The agreement reported is the agreement of the two verdict files, computed here anew.
    both = verdicts(repo, "lexicon").join(verdicts(repo, "local_openai"), on=KEY, suffix="_b")
    expected = round(100 * (both["complies"] == both["complies_b"]).mean(), 1)
    metrics = json.loads((repo / "reports" / "audit" / "metrics.json").read_text())
    assert metrics["judge_pairs"][PAIR]["agreement"] == expected
    assert metrics["judge_pairs"][PAIR]["both_scored"] == both.height
    assert 50 < expected < 100  # the scripted judge overturns some of the rules' verdicts
    shown = json.loads(run_dvc("metrics", "show", "--json", cwd=repo).stdout)
    assert any("reports/audit/metrics.json" in json.dumps(v) for v in shown.values())
    page = (repo / "reports" / "index.html").read_text()
    assert '<section id="audit"><h2>Judge audit</h2>' in page
    # Named by their labels, the scripted judge marked as the test double it is.
    assert "Lexicon rules (offline) vs Scripted judge (local test server) [TEST DOUBLE]" in page
    assert stages_run(run_dvc("repro", cwd=repo).stdout) == set()

    # Export a sheet.
    exported = audit_stage(repo, "audit.export=true", "audit.sheet.items=30")
    assert exported.returncode == 0, exported.stderr
    labels_dir = repo / "data" / "labels"
    sheet = pl.read_csv(labels_dir / "sheet.csv", infer_schema=False)
    key = pl.read_csv(labels_dir / "sheet_key.csv", schema_overrides={"trial": pl.Int32})
    assert sheet.height == key.height == 30
    assert (labels_dir / "sheet.html").read_text().count('class="case"') == 30

    # A mistyped label stops the audit with a message, and leaves its outputs alone.
    before = (repo / "reports" / "audit" / "metrics.json").read_bytes()
    bad = sheet.with_columns(complies=pl.lit("yes"))
    bad.write_csv(labels_dir / "human.csv")
    refused = audit_stage(repo)
    assert refused.returncode == 2
    assert "Traceback" not in refused.stderr
    assert re.search(
        r"error: data/labels/human\.csv, line \d+: item 'r\w+', field 'complies': expected "
        "true or false, found 'yes'",
        refused.stderr,
    )
    assert (repo / "reports" / "audit" / "metrics.json").read_bytes() == before

    # People label: a response complies when it is the scenario's example compliant one.
    scenarios = pl.read_parquet(repo / "data" / "scenarios.parquet")
    compliant = set(scenarios["example_compliant_response"])
    labelled = sheet.with_columns(
        complies=pl.when(pl.col("response").is_in(compliant))
        .then(pl.lit("true"))
        .otherwise(pl.lit("false"))
    )
    labelled.write_csv(labels_dir / "human.csv")
    assert stages_run(run_dvc("repro", cwd=repo).stdout) == {"audit", "plot"}

    human = json.loads((repo / "reports" / "audit" / "metrics.json").read_text())["human"]
    people = key.join(labelled.select("item_id", "complies"), on="item_id")
    for judge in ("lexicon", "local_openai"):
        judged = people.join(verdicts(repo, judge), on=KEY, suffix="_judge")
        agree = (judged["complies"] == judged["complies_judge"].cast(pl.String)).mean()
        assert human[judge]["agreement"] == round(100 * agree, 1), judge
        assert human[judge]["scored"] == 30
    assert human["lexicon"]["agreement_low"] <= human["lexicon"]["agreement"]
    assert "Judge against people" in (repo / "reports" / "index.html").read_text()
    assert stages_run(run_dvc("repro", cwd=repo).stdout) == set()

    # Determinism as docs/judge-audit.md runs it: with the server made unsteady on purpose,
    # the LLM judge judges a subset again with fresh calls; the lexicon judge is not asked.
    assert isinstance(server.reply, ScriptedJudge)
    server.reply.flip_rate, server.reply.rng = 0.5, random.Random(0)
    sent = server.request_count
    redone = audit_stage(repo, "audit.determinism.repeats=2", "audit.determinism.items=6")
    assert redone.returncode == 0, redone.stderr
    assert server.request_count - sent == 2 * 6  # none answered from the call cache
    table = pl.read_csv(repo / "reports" / "audit" / "determinism.csv")
    by_judge = {row["judge"]: row for row in table.iter_rows(named=True)}
    assert by_judge["local_openai"]["method"] == "re-judged"
    assert (by_judge["local_openai"]["items"], by_judge["local_openai"]["repeats"]) == (6, 2)
    assert 0 < by_judge["local_openai"]["flipped_items"] <= 6
    assert by_judge["lexicon"]["items"] == 0
    flips = pl.read_csv(repo / "reports" / "audit" / "determinism_flips.csv")
    assert flips.height == by_judge["local_openai"]["flipped_items"]

    # Reproduce runs the audit again and names its re-judged figures as not rechecked: no
    # published call answers them. Every other value of the audit is rechecked.
    with contextlib.chdir(repo):
        layout = run_layout()
        check = rerun_stages(layout, json.loads(layout.provenance.read_text()), "audit")
    assert check.differences == [] and check.values > 0
    assert check.notes == [
        "reports/audit/determinism.csv: judges ['local_openai'] were re-judged by model calls; "
        "those figures are not rechecked"
    ]


# -- the scripted judge the docs' local server runs --------------------------------------------


def judge_case(response: str) -> JudgeCase:
    statement = load_catalog().norms["binary_answer_norm"].statement
    row = BASE_ROW | {"norm_statement": statement, "source": "test"}
    return JudgeCase.for_response(Scenario.from_row(row), response)


def body_for(response: str) -> dict[str, Any]:
    return {"model": "scripted-judge", "messages": judge_messages(judge_case(response))}


@pytest.mark.parametrize("response", ["Yes.", "Yes, I finished it at six this morning.", "No"])
def test_the_scripted_judge_agrees_with_the_rules_unless_told_otherwise(response: str) -> None:
    rules = LexiconJudge().judge([judge_case(response)])[0].complies
    assert parse_verdict(ScriptedJudge(disagree=0)(body_for(response))).complies == rules
    assert parse_verdict(ScriptedJudge(disagree=1)(body_for(response))).complies == (not rules)
    noisy = ScriptedJudge(disagree=0, flip_rate=1)
    assert parse_verdict(noisy(body_for(response))).complies == (not rules)


def test_the_scripted_judge_answers_anything_else_like_the_test_server() -> None:
    body = {"model": "subject", "messages": [{"role": "user", "content": "Your next message:"}]}
    assert ScriptedJudge()(body) == default_reply(body)


def test_the_template_copying_judge_copies_only_a_judges_prompt() -> None:
    body = {"model": "subject", "messages": [{"role": "user", "content": "Your next message:"}]}
    assert template_copy(body) == default_reply(body)
    copied = template_copy(body_for("Yes."))
    assert copied != default_reply(body_for("Yes.")) and '"..."' in copied


def post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("POST", f"{parts.path}/chat/completions", body=json.dumps(body))
        answer: dict[str, Any] = json.loads(connection.getresponse().read())
        return answer
    finally:
        connection.close()


@pytest.mark.slow  # starts a Python process
def test_the_local_judge_server_runs_from_the_command_line() -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "losona.testing.openai_server",
            "--port",
            "0",  # any free port, whatever LOSONA_TEST_SERVER_PORT the shell exports
            "--judge",
            "--disagree",
            "0",
        ],
        stdin=subprocess.DEVNULL,  # it serves until SIGTERM, not until stdin closes
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:")
        reply = post(url, body_for("Yes."))["choices"][0]["message"]["content"]
        assert parse_verdict(reply).complies is True
        reply = post(url, body_for("Yes, it finished at six."))["choices"][0]["message"]["content"]
        assert parse_verdict(reply).complies is False
    finally:
        child.terminate()
        assert child.wait(timeout=10) == 0
