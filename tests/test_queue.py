"""Queued DVC experiments share one call cache: no call is made twice across them.

On a temporary copy of the repo whose subject model and LLM judge are served by the local
test server, two experiments are queued and run by DVC's queue worker (`dvc queue
start`), each in its own temporary copy of the repo: the first samples and judges the
naive condition with the lexicon rules; the second changes the judge to an LLM and adds
a condition. Adding a condition changes the prompt table, so DVC reruns the naive sample
stage in the second experiment (DVC's own run cache cannot restore it); its calls come
from the call cache the first experiment filled. The server's request log shows every
subject call was sent once, and the shared cache file holds every call.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import run_dvc

from losona.core.catalog import load_catalog
from losona.testing.openai_server import OpenAIServer, body_digest
from losona.testing.scripted_judge import ScriptedJudge

pytestmark = pytest.mark.slow

QUEUE_TIMEOUT_S = 600


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    # Judge prompts get verdicts, anything else (the subject's prompts) the default reply.
    with OpenAIServer(reply=ScriptedJudge()) as running:
        yield running


def is_judge_call(body: dict[str, object]) -> bool:
    return body.get("model") == "scripted-judge"


EXAMPLE_REPLIES = {
    reply
    for norm in load_catalog().norms.values()
    for reply in (norm.example_compliant_response, norm.example_breaching_response)
}


def judged_message(body: dict[str, Any]) -> str:
    found = re.search(
        r"<<<BEGIN JUDGED MESSAGE \w+>>>\n(.*?)\n<<<END", body["messages"][1]["content"], re.S
    )
    assert found, "a judge prompt without a judged message"
    return found.group(1)


@pytest.fixture
def repo(repo_copy: Path, server: OpenAIServer, tmp_path: Path) -> Path:
    """The copy, committed: subject `local` and judge `scripted` on the server, one cell."""
    params = {
        "dataset": "bundled",
        "sweep": {"models": ["local"], "conditions": ["naive"], "judges": ["lexicon"]},
    }
    (repo_copy / "params.yaml").write_text(yaml.safe_dump(params))
    (repo_copy / "conf" / "model" / "local.yaml").write_text(
        yaml.safe_dump(server.model_config("local"))
    )
    judge = {
        "name": "scripted",
        "kind": "llm",
        "model": server.model_config(
            "scripted",
            model="openai/scripted-judge",
            seed_per_trial=False,
            params={"temperature": 0},
        ),
    }
    (repo_copy / "conf" / "judge" / "scripted.yaml").write_text(yaml.safe_dump(judge))
    paths_file = repo_copy / "conf" / "paths" / "default.yaml"
    cache = tmp_path / "cache" / "calls.sqlite"
    paths_file.write_text(re.sub(r"call_cache: .*", f"call_cache: {cache}", paths_file.read_text()))
    (repo_copy / "dvc.lock").unlink(missing_ok=True)
    git = ["git", "-c", "user.email=test@example.org", "-c", "user.name=test"]
    subprocess.run([*git, "add", "-A"], cwd=repo_copy, check=True, capture_output=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=repo_copy, check=True, capture_output=True)
    return repo_copy


def wait_for_queue(repo: Path) -> str:
    """Block until the queue has nothing queued or running; its final status table."""
    deadline = time.monotonic() + QUEUE_TIMEOUT_S
    while True:
        status = run_dvc("queue", "status", cwd=repo).stdout
        if not re.search(r"\b(Queued|Running)\b", status):
            return status
        assert time.monotonic() < deadline, f"the queue did not finish:\n{status}"
        time.sleep(2)


def test_two_queued_experiments_share_the_call_cache(
    repo: Path, server: OpenAIServer, tmp_path: Path
) -> None:
    experiments = {
        "rules": ["sweep.judges=[lexicon]"],
        "llm": ["sweep.judges=[scripted]", "sweep.conditions=[naive,norm_informed]"],
    }
    for name, params in experiments.items():
        settings = [arg for param in params for arg in ("-S", param)]
        run_dvc("exp", "run", "--queue", "-n", name, *settings, "aggregate", cwd=repo)
    run_dvc("queue", "start", "-j", "1", cwd=repo)
    status = wait_for_queue(repo)
    assert status.count("Success") == 2, status
    # The second experiment really sampled naive again: the calls were not DVC's to skip.
    assert "Running stage 'sample@local-naive'" in run_dvc("queue", "logs", "llm", cwd=repo).stdout

    subject = [b for b in server.answered if not is_judge_call(b)]
    judged = [b for b in server.answered if is_judge_call(b)]
    calls_per_condition = 44 * 3  # the bundled set, K = 3
    # naive once (both experiments need it) and norm_informed once, each call sent once
    assert len(subject) == 2 * calls_per_condition
    assert max(Counter(body_digest(b) for b in subject).values()) == 1
    # The LLM judge, in the second experiment: every subject reply, and its validity
    # controls (each norm's example replies, which the aggregate's judge health reads).
    on_replies = [b for b in judged if judged_message(b) not in EXAMPLE_REPLIES]
    assert len(on_replies) == 2 * calls_per_condition
    assert {judged_message(b) for b in judged} - {judged_message(b) for b in on_replies} == (
        EXAMPLE_REPLIES
    )
    assert max(Counter(body_digest(b) for b in judged).values()) == 1

    with sqlite3.connect(tmp_path / "cache" / "calls.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == len(subject) + len(judged)

    shown = json.loads(run_dvc("exp", "show", "--json", cwd=repo).stdout)
    results = {
        exp["name"]: exp["data"]["metrics"]["reports/metrics.json"]["data"]
        for row in shown
        for group in row.get("experiments") or []
        for exp in group["revs"]
    }
    assert set(results["rules"]) - {"settings"} == {"lexicon"}
    assert set(results["llm"]) - {"settings"} == {"scripted"}
    assert set(results["llm"]["scripted"]["models"]["local"]) == {"naive", "norm_informed"}
