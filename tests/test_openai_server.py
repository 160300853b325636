"""The local OpenAI-compatible test server: replies, faults on schedule, logs."""

from __future__ import annotations

import ast
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from docs_blocks import port_to_ourselves

from losona.core.config import config_record, option
from losona.core.contracts import scenarios_from_table
from losona.judges.base import JudgeCase
from losona.judges.lexicon import LexiconJudge
from losona.judges.prompt import judge_messages
from losona.scenarios.datasets import fetch_scenarios
from losona.testing.openai_server import (
    AIOHTTP_MISSING,
    Fault,
    OpenAIServer,
    default_reply,
    fail_first,
)
from losona.testing.openai_server.__main__ import main as serve_main
from losona.testing.openai_server.port import (
    CONFIG_PORT,
    PORT_VARIABLE,
    export_line,
    taken_message,
)
from losona.testing.scripted_judge import ScriptedJudge


def post(url: str, body: dict[str, Any], timeout: float = 5.0) -> tuple[int, dict[str, str], bytes]:
    """POST a chat completion; (status, headers, raw body)."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    try:
        connection.request(
            "POST",
            f"{parts.path}/chat/completions",
            body=json.dumps(body),
            headers={"Content-Type": "application/json"},
        )
        response = connection.getresponse()
        return response.status, dict(response.headers), response.read()
    finally:
        connection.close()


def body(text: str, seed: int | None = None) -> dict[str, Any]:
    return {"model": "test", "messages": [{"role": "user", "content": text}], "seed": seed}


def test_answers_deterministically_per_prompt_and_seed_with_usage() -> None:
    with OpenAIServer() as server:
        assert server.url.startswith("http://127.0.0.1:")
        replies = [json.loads(post(server.url, body("hello there", seed))[2]) for seed in (1, 2, 1)]
    texts = [r["choices"][0]["message"]["content"] for r in replies]
    assert texts[0] == texts[2] != texts[1]
    assert texts[0] == default_reply(body("hello there", 1))
    assert replies[0]["usage"] == {
        "prompt_tokens": 2,
        "completion_tokens": len(texts[0].split()),
        "total_tokens": 2 + len(texts[0].split()),
        # As OpenAI reports it; a prompt this short is never cached (tests/test_prompt_caching.py).
        "prompt_tokens_details": {"cached_tokens": 0},
    }
    assert server.request_count == 3
    assert server.requests == [body("hello there", s) for s in (1, 2, 1)]
    assert server.answered == server.requests


def test_a_reply_hook_scripts_the_answers() -> None:
    with OpenAIServer(reply=lambda b: b["messages"][-1]["content"].upper()) as server:
        reply = json.loads(post(server.url, body("shout"))[2])
    assert reply["choices"][0]["message"]["content"] == "SHOUT"


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("rate_limit", 429),
        ("server_error", 500),
        ("unavailable", 503),
        ("bad_request", 400),
        ("unauthorized", 401),
    ],
)
def test_error_faults_answer_with_their_status(kind: Any, status: int) -> None:
    with OpenAIServer(faults=lambda b, seen: Fault(kind, retry_after=7)) as server:
        got, headers, _ = post(server.url, body("x"))
    assert got == status
    assert (headers.get("Retry-After") == "7") == (kind == "rate_limit")
    assert server.answered == [] and server.faults_injected == {kind: 1}


def test_malformed_and_empty_bodies() -> None:
    with OpenAIServer(faults=fail_first(1, "malformed")) as server:
        status, _, raw = post(server.url, body("x"))
        assert status == 200
        with pytest.raises(json.JSONDecodeError):
            json.loads(raw)
    with OpenAIServer(faults=fail_first(1, "empty")) as server:
        reply = json.loads(post(server.url, body("x"))[2])
    assert reply["choices"][0]["message"]["content"] == ""
    assert server.answered == []


def test_a_drop_closes_the_connection_and_a_hang_outlasts_the_client() -> None:
    dropped = pytest.raises((http.client.RemoteDisconnected, ConnectionError))
    with OpenAIServer(faults=fail_first(1, "drop")) as server, dropped:
        post(server.url, body("x"))
    with OpenAIServer(faults=fail_first(1, "hang"), hang_s=30) as server:
        started = time.monotonic()
        with pytest.raises((TimeoutError, socket.timeout)):
            post(server.url, body("x"), timeout=0.3)
    # Leaving the block cancelled the hanging handler instead of waiting 30 s for it.
    assert time.monotonic() - started < 5


def test_faults_follow_the_schedule_per_distinct_request() -> None:
    plan = fail_first(2, "server_error", every=2)
    chosen = [i for i in range(20) if plan(body(f"p{i}"), 0) is not None]
    assert 0 < len(chosen) < 20  # about one request in two is picked, deterministically
    with OpenAIServer(faults=plan) as server:
        statuses = [post(server.url, body(f"p{chosen[0]}"))[0] for _ in range(3)]
        other = next(i for i in range(20) if i not in chosen)
        assert post(server.url, body(f"p{other}"))[0] == 200
    assert statuses == [500, 500, 200]  # the first two attempts fail, the third is answered
    assert server.request_count == 4


def test_counts_requests_in_flight() -> None:
    import threading

    with OpenAIServer(latency=0.3) as server:
        threads = [threading.Thread(target=post, args=(server.url, body(f"{i}"))) for i in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert server.max_in_flight == 3 and server.in_flight == 0


def serve(*args: str) -> tuple[subprocess.Popen[str], str]:
    """The server in its own process with standard input closed; (process, api_base)."""
    child = subprocess.Popen(
        # Any free port, whatever LOSONA_TEST_SERVER_PORT the user's shell exports.
        [sys.executable, "-m", "losona.testing.openai_server", "--port", "0", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    return child, child.stdout.readline().strip()


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.slow  # starts a Python process
def test_the_command_line_server_serves_with_stdin_closed_until_signalled(stop: int) -> None:
    child, url = serve()
    try:
        time.sleep(0.5)  # it used to exit as soon as standard input closed
        assert child.poll() is None
        status, _, _ = post(url, body("still there?"))
        assert status == 200
    finally:
        child.send_signal(stop)
        assert child.wait(timeout=10) == 0


@pytest.mark.slow  # starts a Python process
def test_the_command_line_server_stops_after_its_lifetime() -> None:
    started = time.monotonic()
    child, url = serve("--lifetime", "1.5")
    try:
        assert post(url, body("within the lifetime"))[0] == 200
        assert child.wait(timeout=10) == 0
        assert time.monotonic() - started >= 1.5
        with pytest.raises(OSError):
            post(url, body("after it"), timeout=1.0)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_the_scripted_judge_applies_the_norm_rules_only_as_the_docs_say() -> None:
    # docs/offline.md: beyond the messages it overturns, the scripted judge disagrees with
    # the lexicon judge on replies that take up no elicitor, which only the lexicon judge
    # checks. A reply of SmolLM2's on the offline default, off-topic for its scenario:
    scenarios = scenarios_from_table(fetch_scenarios({"name": "bundled", "kind": "bundled"}))
    (scenario,) = [
        s for s in scenarios if s.scenario_id == "achievement_announcement__banned_enthusiasm_norm"
    ]
    case = JudgeCase.for_response(scenario, "What do I get?")
    (rules,) = LexiconJudge().judge([case])
    assert rules.complies is False and (rules.elicitor_uptake or "").startswith("none (off_topic)")
    scripted = json.loads(ScriptedJudge(disagree=0.0)({"messages": judge_messages(case)}))
    assert scripted["complies"] is True and "overturned" not in scripted["reasoning"]
    page = (Path(__file__).parent.parent / "docs" / "offline.md").read_text(encoding="utf-8")
    assert "fixed 10%" not in page and "not the lexicon judge's" in page


# --- its port, and where the shipped configs look for it ----------------------------------


def command_line_server(*args: str, port_variable: str | None = None) -> subprocess.Popen[str]:
    """`python -m losona.testing.openai_server ARGS`, with LOSONA_TEST_SERVER_PORT as given."""
    env = {k: v for k, v in os.environ.items() if k != PORT_VARIABLE}
    if port_variable is not None:
        env[PORT_VARIABLE] = port_variable
    return subprocess.Popen(
        [sys.executable, "-m", "losona.testing.openai_server", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.mark.slow  # starts a Python process
def test_a_taken_port_is_one_line_naming_it_and_the_variable_not_a_traceback() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = holder.getsockname()[1]
        child = command_line_server("--port", str(taken), "--judge")
        out, err = child.communicate(timeout=60)
    assert child.returncode == 2
    assert out == ""
    assert err.splitlines() == [taken_message(taken)]
    assert f"error: port {taken} on 127.0.0.1 is already in use" in err
    assert PORT_VARIABLE in err and "--port 0" in err


@pytest.mark.slow  # starts a Python process
def test_a_free_port_comes_with_the_export_line_that_points_the_configs_at_it() -> None:
    child = command_line_server("--port", "0", "--lifetime", "30")
    try:
        assert child.stdout is not None and child.stderr is not None
        url = child.stdout.readline().strip()
        port = int(urlsplit(url).port or 0)
        assert port not in (0, CONFIG_PORT)
        assert child.stderr.readline().strip() == export_line(port)
        assert export_line(port).startswith(f"export LOSONA_TEST_SERVER_PORT={port}   #")
    finally:
        child.terminate()
        child.communicate(timeout=10)


@pytest.mark.slow  # starts a Python process
def test_the_server_and_the_configs_take_the_port_from_one_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = command_line_server("--judge", "--lifetime", "30", port_variable=str(port))
    try:
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        assert url == f"http://127.0.0.1:{port}/v1"
        monkeypatch.setenv(PORT_VARIABLE, str(port))
        assert option("judge", "local_openai").model.api_base == url
        assert option("model", "local_openai").api_base == url
    finally:
        child.terminate()
        _, err = child.communicate(timeout=10)
    assert "export" not in err  # the configs already look there


@pytest.mark.slow  # starts a Python process
def test_asked_for_no_port_it_listens_where_the_configs_look() -> None:
    # docs/dynamic.md starts it so, and the shipped configs then find it.
    with port_to_ourselves(CONFIG_PORT):
        child = command_line_server("--group", "--lifetime", "30")
        try:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == f"http://127.0.0.1:{CONFIG_PORT}/v1"
        finally:
            child.terminate()
            _, err = child.communicate(timeout=10)
    assert "export" not in err


def test_unset_the_configs_keep_the_address_they_always_had(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # So a run's recorded configs, call keys and published calls are what they were.
    monkeypatch.delenv(PORT_VARIABLE, raising=False)
    judge = config_record(option("judge", "local_openai"))
    assert judge["model"]["api_base"] == "http://127.0.0.1:8765/v1"
    assert config_record(option("model", "local_openai"))["api_base"] == (
        "http://127.0.0.1:8765/v1"
    )


@pytest.mark.slow  # starts a Python process
def test_a_variable_that_is_no_port_is_refused_in_one_line() -> None:
    child = command_line_server(port_variable="eighty")
    _, err = child.communicate(timeout=60)
    assert child.returncode == 2
    assert err.splitlines()[-1].endswith(
        "error: LOSONA_TEST_SERVER_PORT='eighty': expected a port number, 0 to 65535"
    )


def test_a_lifetime_that_is_not_positive_is_refused_before_serving(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as refused:
        serve_main(["--lifetime", "0"])
    assert refused.value.code == 2
    assert "--lifetime: expected a positive number of seconds, found 0.0" in capsys.readouterr().err


# --- behind the `testing` extra ------------------------------------------------------------

REPO = Path(__file__).parent.parent


def test_aiohttp_is_the_testing_extras_and_dev_includes_it() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    names = [spec.split(">")[0].split("=")[0].strip() for spec in project["dependencies"]]
    assert "aiohttp" not in names
    assert project["optional-dependencies"]["testing"] == ["aiohttp>=3.9"]
    assert "losona[testing]" in project["optional-dependencies"]["dev"]


def imported_modules(path: Path) -> set[str]:
    """Every module a Python file imports, by its full dotted name."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def test_a_plain_install_imports_aiohttp_only_for_the_test_server() -> None:
    # The pipeline (its package outside losona/testing, and the stage scripts) neither
    # imports aiohttp nor the test server, which needs it.
    code = [p for p in (REPO / "losona").rglob("*.py") if "testing" not in p.parts]
    code += list((REPO / "stages").glob("*.py"))
    assert len(code) > 50
    offending = {
        str(path.relative_to(REPO)): sorted(
            name
            for name in imported_modules(path)
            if name.split(".")[0] == "aiohttp" or name.startswith("losona.testing")
        )
        for path in code
    }
    assert not {path: names for path, names in offending.items() if names}


@pytest.mark.slow  # starts a Python process
def test_without_aiohttp_the_command_says_what_to_install(tmp_path: Path) -> None:
    # An aiohttp that cannot be imported, as in a plain install without the extra.
    (tmp_path / "aiohttp").mkdir()
    (tmp_path / "aiohttp" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'aiohttp'\", name='aiohttp')\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "losona.testing.openai_server", "--port", "0"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [f"error: {AIOHTTP_MISSING}"]
    assert "pip install 'losona[testing]'" in done.stderr
