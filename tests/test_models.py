"""The model layer: configs, the call cache key, retries, concurrency, cost, scale-out.

Calls go to the local OpenAI-compatible test server; its request log shows what was sent.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import CONF_DIR

from losona.core.errors import LosonaError
from losona.models import CallFailed, CallOptions, Completion, ModelSpec, Request, complete, plan
from losona.models.call_cache import CallCache
from losona.models.complete import _InlineExecutor
from losona.models.prepare import prepare as _prepare
from losona.models.send import masked
from losona.testing.openai_server import (
    TRANSIENT_FAULTS,
    Fault,
    OpenAIServer,
    default_reply,
    fail_first,
)

PAPER_MODELS = {
    "gpt_5_5",
    "claude_opus",
    "claude_fable",
    "gemini_pro",
    "qwen_72b",
    "llama_70b",
    "mistral_medium",
    "gemma_27b",
}


def prompts(count: int, trials: int = 1) -> list[Request]:
    return [
        Request([{"role": "user", "content": f"prompt {i}"}], trial=t)
        for i in range(count)
        for t in range(trials)
    ]


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "calls.sqlite"


def spec_for(server: OpenAIServer, **settings: Any) -> ModelSpec:
    return ModelSpec.from_config(server.model_config(**settings))


def texts(completions: list[Completion]) -> list[str | None]:
    return [c.text for c in completions]


# --- configs ---------------------------------------------------------------------------


def test_a_minimal_node_gives_documented_defaults() -> None:
    spec = ModelSpec.from_config({"name": "j", "model": "openai/x", "params": {"temperature": 0}})
    assert (spec.display_name, spec.concurrency, spec.max_attempts) == ("j", 8, 6)
    assert spec.params == {"temperature": 0} and spec.price is None


@pytest.mark.parametrize(
    ("node", "message"),
    [
        ({"model": "openai/x"}, "'model.name': expected non-empty text, found nothing"),
        ({"name": "m"}, "'model.model': expected non-empty text"),
        (
            {"name": "m", "model": "openai/x", "temprature": 1},
            "'model.temprature': expected one of the settings [",
        ),
        (
            {"name": "m", "model": "openai/x", "concurrency": 0},
            "'model.concurrency': expected an integer of at least 1, found 0",
        ),
        (
            {"name": "m", "model": "openai/x", "concurrency": 2.5},
            "'model.concurrency': expected an integer",
        ),
        (
            {"name": "m", "model": "openai/x", "timeout_s": float("inf")},
            "'model.timeout_s': expected a finite number above 0, found inf",
        ),
        (
            {"name": "m", "model": "openai/x", "params": {"temperature": float("nan")}},
            "'model.params.temperature': expected a finite number, found nan",
        ),
        (
            {"name": "m", "model": "o/x", "api_base": "http://a", "endpoints": ["http://b"]},
            "not both",
        ),
        (
            {"name": "m", "model": "o/x", "endpoints": ["http://b", "http://b"]},
            "'model.endpoints': expected distinct endpoints, found ['http://b', 'http://b']",
        ),
        ({"name": "m", "model": "openai/x", "params": {"stream": True}}, "sets ['stream'] itself"),
        (
            {"name": "m", "model": "openai/x", "price": {"input_usd_per_mtok": 1}},
            "'model.price.output_usd_per_mtok': expected a finite number of at least 0, found no",
        ),
        ({"name": "m", "model": "o/x", "seed_per_trial": True, "params": {"seed": 1}}, "no fixed"),
    ],
)
def test_a_bad_config_names_the_setting(node: dict[str, Any], message: str) -> None:
    with pytest.raises(LosonaError, match=r"conf/model/m\.yaml") as error:
        ModelSpec.from_config(node, origin="conf/model/m.yaml")
    assert message in str(error.value)


def test_a_key_in_a_config_is_refused_and_never_echoed() -> None:
    secret = "sk-live-0123456789abcdef"
    with pytest.raises(LosonaError, match="never put an API key in a config"):
        ModelSpec.from_config({"name": "m", "model": "openai/x", "api_key": secret})
    with pytest.raises(LosonaError, match="the name of an environment variable") as error:
        ModelSpec.from_config({"name": "m", "model": "openai/x", "api_key_env": secret})
    assert secret not in str(error.value)


@pytest.mark.parametrize("at", [0, 280, 295, 299])
def test_no_part_of_the_key_shows_in_an_error_however_long(at: int) -> None:
    # An error's text is cut to 300 characters; a key across the cut must not show in part.
    secret = "sk-live-0123456789abcdef"
    shown = masked("x" * at + f" {secret} " + "y" * 400, secret)
    assert len(shown) <= 300
    assert not any(secret[:n] in shown for n in range(4, len(secret) + 1))


def test_a_missing_key_is_named_before_any_call(
    server: OpenAIServer, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("LOSONA_TEST_KEY", raising=False)
    spec = spec_for(server, api_key_env="LOSONA_TEST_KEY")
    with pytest.raises(LosonaError, match="environment variable LOSONA_TEST_KEY, which is not set"):
        complete(spec, prompts(3), CallOptions(cache_path=cache))
    assert server.request_count == 0


def model_configs() -> dict[str, dict[str, Any]]:
    return {
        p.stem: yaml.safe_load(p.read_text()) for p in sorted((CONF_DIR / "model").glob("*.yaml"))
    }


def test_the_paper_subjects_have_the_papers_sampling_settings() -> None:
    configs = model_configs()
    assert PAPER_MODELS | {"smollm2"} <= set(configs)
    for name in PAPER_MODELS:
        spec = ModelSpec.from_config(configs[name], origin=name)
        assert spec.name == name and spec.label and spec.api_key_env
        # Temperature 0.9, except the two models sampled at provider defaults (Section 6).
        expected = {} if name in ("gpt_5_5", "claude_fable") else {"temperature": 0.9}
        assert spec.params == expected, name
        # litellm knows each provider and accepts the parameters; each model has a price.
        assert _prepare(spec).rates.source in ("litellm", "config")


def test_every_model_config_is_named_after_its_file() -> None:
    for stem, node in model_configs().items():
        assert ModelSpec.from_config(node).name == stem


# --- the call cache key ----------------------------------------------------------------


def key(spec: ModelSpec, request: Request) -> str:
    return _prepare(spec).key_and_params(request)[0]


def test_the_key_covers_model_endpoint_params_messages_and_trial(
    server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = server.model_config(params={"temperature": 0.5})
    request = prompts(1)[0]
    reference = key(ModelSpec.from_config(base), request)
    variants = [
        base | {"model": "openai/other-model"},
        base | {"api_base": "http://127.0.0.1:1/v1"},
        base | {"params": {"temperature": 0.6}},
        base | {"params": {"temperature": 0.5, "max_tokens": 10}},
    ]
    keys = {key(ModelSpec.from_config(v), request) for v in variants}
    keys.add(key(ModelSpec.from_config(base), Request(request.messages, trial=1)))
    keys.add(key(ModelSpec.from_config(base), Request([{"role": "user", "content": "other"}])))
    assert reference not in keys and len(keys) == 6
    # Settings that do not change what is sent stay out of the key, and so does the key.
    monkeypatch.setenv("LOSONA_TEST_KEY", "first")
    same = base | {"concurrency": 1, "max_attempts": 2, "api_key_env": "LOSONA_TEST_KEY"}
    first = key(ModelSpec.from_config(same), request)
    monkeypatch.setenv("LOSONA_TEST_KEY", "second")
    assert key(ModelSpec.from_config(same), request) == first == reference


# --- calls -----------------------------------------------------------------------------


def test_results_come_in_request_order_and_a_rerun_makes_no_call(
    server: OpenAIServer, cache: Path
) -> None:
    spec = spec_for(server, concurrency=8)
    requests = prompts(20)
    first = complete(spec, requests, CallOptions(cache_path=cache))
    sent = [json.dumps(r["messages"]) for r in server.requests]
    assert all(c.ok and not c.cached and c.attempts == 1 for c in first)
    for request, completion in zip(requests, first, strict=True):
        body = next(b for b in server.requests if b["messages"] == list(request.messages))
        assert completion.text == default_reply(body)
    again = complete(spec, requests, CallOptions(cache_path=cache))
    assert texts(again) == texts(first) and all(c.cached for c in again)
    assert server.request_count == 20 and len(set(sent)) == 20


# A fresh process reruns from the cache: does it import litellm, and what does it log?
RERUN_FROM_CACHE = """
import json, sys
from losona.models import CallOptions, ModelSpec, Request, complete
config, cache, log = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3]
requests = [Request([{"role": "user", "content": f"prompt {i}"}]) for i in range(3)]
done = complete(ModelSpec.from_config(config), requests, CallOptions(cache_path=cache, run_log=log))
print(json.dumps({"cached": [c.cached for c in done], "litellm": "litellm" in sys.modules}))
"""


@pytest.mark.slow
def test_a_run_whose_calls_are_all_cached_never_imports_litellm(
    tmp_path: Path, cache: Path
) -> None:
    # Importing litellm takes seconds of every stage process; a rerun, or a check of a
    # published run, makes no call and needs none of it.
    with OpenAIServer() as server:
        config = server.model_config(price={"input_usd_per_mtok": 1, "output_usd_per_mtok": 2})
        complete(ModelSpec.from_config(config), prompts(3), CallOptions(cache_path=cache))
    rerun = subprocess.run(
        [sys.executable, "-c", RERUN_FROM_CACHE, json.dumps(config), str(cache), "log.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(rerun.stdout) == {"cached": [True] * 3, "litellm": False}
    facts = json.loads((tmp_path / "log.json").read_text())
    assert (facts["cache_hits"], facts["completed"], facts["cost_usd_this_run"]) == (3, 0, 0)
    assert facts["cost_usd_all_requests"] > 0  # the cached calls at list price, as kept
    # Never asked, the provider's price source and caching rule are not guessed at.
    assert facts["price_from"] is None and facts["prompt_cache"]["rule"] is None


def test_the_k_trials_differ_and_come_back_the_same(server: OpenAIServer, tmp_path: Path) -> None:
    spec = spec_for(server)
    requests = prompts(2, trials=3)
    first = complete(spec, requests, CallOptions(cache_path=tmp_path / "a.sqlite"))
    assert len(set(texts(first)[:3])) == 3  # three distinct samples of one prompt
    # From the cache, and from a cold cache (the seed comes from prompt and trial).
    assert texts(complete(spec, requests, CallOptions(cache_path=tmp_path / "a.sqlite"))) == texts(
        first
    )
    assert texts(complete(spec, requests, CallOptions(cache_path=tmp_path / "b.sqlite"))) == texts(
        first
    )


def test_identical_requests_in_a_batch_are_sent_once(server: OpenAIServer, cache: Path) -> None:
    requests = prompts(3) * 2
    results = complete(spec_for(server), requests, CallOptions(cache_path=cache))
    assert server.request_count == 3 and texts(results[:3]) == texts(results[3:])


@pytest.mark.parametrize("kind", TRANSIENT_FAULTS)
def test_every_transient_fault_is_survived_with_a_clean_runs_output(
    kind: Any, tmp_path: Path
) -> None:
    requests = prompts(8, trials=2)
    with OpenAIServer() as clean_server:
        clean = complete(
            spec_for(clean_server), requests, CallOptions(cache_path=tmp_path / "clean.sqlite")
        )
    faults = fail_first(2, kind, every=2, retry_after=0.05)
    with OpenAIServer(faults=faults, hang_s=5) as server:
        results = complete(
            spec_for(server, timeout_s=0.5), requests, CallOptions(cache_path=tmp_path / "c.sqlite")
        )
    assert texts(results) == texts(clean)
    assert server.faults_injected[kind] >= 2
    assert max(c.attempts for c in results) == 3
    # No call that got an answer was ever sent again.
    answered = [json.dumps(b, sort_keys=True) for b in server.answered]
    assert len(answered) == len(set(answered)) == len(requests)


def test_retry_after_is_honoured(server: OpenAIServer, cache: Path) -> None:
    server.faults = fail_first(1, "rate_limit", retry_after=1)
    started = time.monotonic()
    (result,) = complete(spec_for(server), prompts(1), CallOptions(cache_path=cache))
    assert result.ok and result.attempts == 2
    assert time.monotonic() - started >= 1.0  # the backoff alone would wait 0.01 s


@pytest.mark.parametrize(
    "header",
    [
        "soon",  # neither seconds nor a date: the backoff's wait
        "Wed, 21 Oct 2015 07:28:00 GMT",  # a date gone by: no wait
        "Wed, 21 Oct 2015 07:28:00 -0000",  # the same, read without a zone
    ],
)
def test_a_retry_after_gone_by_or_unreadable_keeps_the_call_going(
    server: OpenAIServer, cache: Path, header: str
) -> None:
    server.faults = fail_first(1, "rate_limit", retry_after=header)
    (result,) = complete(spec_for(server), prompts(1), CallOptions(cache_path=cache))
    assert result.ok and result.attempts == 2


def test_a_retry_after_date_without_a_zone_is_read_as_utc(
    server: OpenAIServer, cache: Path
) -> None:
    soon = datetime.now(UTC).replace(tzinfo=None) + timedelta(seconds=3)
    server.faults = fail_first(1, "rate_limit", retry_after=email.utils.format_datetime(soon))
    started = time.monotonic()
    (result,) = complete(spec_for(server), prompts(1), CallOptions(cache_path=cache))
    assert result.ok and result.attempts == 2
    assert 1.0 <= time.monotonic() - started < 10  # the date's wait (to the second), not 0.01 s


def test_a_call_that_keeps_failing_is_recorded_and_not_cached(
    server: OpenAIServer, cache: Path, tmp_path: Path
) -> None:
    def faults(body: dict[str, Any], seen: int) -> Fault | None:
        return Fault("unavailable") if body["messages"][0]["content"] == "prompt 1" else None

    server.faults = faults
    log = tmp_path / "run.log.json"
    results = complete(
        spec_for(server, max_attempts=3), prompts(3), CallOptions(cache_path=cache, run_log=log)
    )
    assert [c.ok for c in results] == [True, False, True]
    failed = results[1]
    assert failed.attempts == 3 and failed.text is None
    assert failed.error is not None and "ServiceUnavailableError (503)" in failed.error
    assert "after 3 attempts" in failed.error
    facts = json.loads(log.read_text())
    assert facts["failed"] == 1 and facts["completed"] == 2 and facts["attempts"] == 5
    # A rerun sends only the failed call.
    server.faults = None
    before = server.request_count
    assert all(c.ok for c in complete(spec_for(server), prompts(3), CallOptions(cache_path=cache)))
    assert server.request_count == before + 1


def test_a_bad_request_fails_at_once(server: OpenAIServer, cache: Path) -> None:
    server.faults = lambda body, seen: Fault("bad_request")
    (result,) = complete(spec_for(server), prompts(1), CallOptions(cache_path=cache))
    assert result.attempts == 1 and result.error and "(400)" in result.error


def test_a_refused_key_stops_the_run(server: OpenAIServer, cache: Path) -> None:
    server.faults = lambda body, seen: Fault("unauthorized")
    with pytest.raises(CallFailed, match=r"refused the call: AuthenticationError \(401\)"):
        complete(spec_for(server, concurrency=2), prompts(50), CallOptions(cache_path=cache))
    assert server.request_count <= 2


@pytest.mark.parametrize("concurrency", [1, 4])
def test_an_endpoint_where_nothing_listens_stops_the_run_at_once(
    cache: Path, tmp_path: Path, concurrency: int
) -> None:
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    with OpenAIServer() as template:
        spec = spec_for(template, api_base=url, concurrency=concurrency, max_attempts=6)
    log = tmp_path / "run.json"
    with pytest.raises(CallFailed, match=rf"could not connect to {re.escape(url)}: the first 3"):
        complete(spec, prompts(40), CallOptions(cache_path=cache, run_log=log))
    # Three refused attempts (and at most the others already in flight), not 40 x 6.
    assert json.loads(log.read_text())["attempts"] <= 3 + concurrency - 1


def test_concurrency_is_bounded(cache: Path) -> None:
    with OpenAIServer(latency=0.05) as server:
        complete(spec_for(server, concurrency=5), prompts(30), CallOptions(cache_path=cache))
    assert server.max_in_flight == 5


def test_calls_go_out_in_request_order_one_at_a_time(server: OpenAIServer, cache: Path) -> None:
    requests = prompts(4, trials=3)
    complete(spec_for(server, concurrency=1), requests, CallOptions(cache_path=cache))
    assert [b["messages"] for b in server.requests] == [list(r.messages) for r in requests]


def test_bypassing_the_cache_calls_again_but_keeps_the_first_answer(
    cache: Path,
) -> None:
    answers = iter(range(100))
    with OpenAIServer(reply=lambda body: f"answer {next(answers)}") as server:
        spec = spec_for(server)
        first = complete(spec, prompts(2), CallOptions(cache_path=cache))
        fresh = complete(spec, prompts(2), CallOptions(cache_path=cache, use_cache=False))
        again = complete(spec, prompts(2), CallOptions(cache_path=cache))
    assert texts(first) == ["answer 0", "answer 1"]
    assert texts(fresh) == ["answer 2", "answer 3"] and not any(c.cached for c in fresh)
    assert texts(again) == texts(first) and server.request_count == 4


def test_a_call_another_process_stored_first_is_answered_as_stored(cache: Path) -> None:
    # Two queued experiments sending one call at once: the cache keeps the first answer to
    # arrive, and both runs must build their files from that one, as any rerun will.
    request = prompts(1)[0]

    def reply(body: dict[str, Any]) -> str:
        with CallCache(cache) as other_worker:
            other_worker.put(stored_key, "m", Completion("theirs", "stop", 1, 1, 0.0, None, False))
        return "mine"

    with OpenAIServer(reply=reply) as server:
        spec = spec_for(server)
        stored_key = key(spec, request)
        (answer,) = complete(spec, [request], CallOptions(cache_path=cache))
        (fresh,) = complete(spec, [request], CallOptions(cache_path=cache, use_cache=False))
    assert answer.text == "theirs" and not answer.cached and server.request_count == 2
    assert fresh.text == "mine"  # the cache bypassed: the fresh answer, as it came


def test_cost_is_counted_and_the_cap_stops_the_run(
    server: OpenAIServer, cache: Path, tmp_path: Path
) -> None:
    # At $1 a token, a call is estimated at $17 (litellm counts 10 prompt tokens, plus
    # max_tokens 7) and costs $7 (the server's default reply: 2 prompt words, 5 reply words),
    # so the cap of $40 admits 4 calls: the 5th could pass it ($28 spent + $17).
    priced = {"price": {"input_usd_per_mtok": 1e6, "output_usd_per_mtok": 1e6}}
    spec = spec_for(server, concurrency=1, params={"max_tokens": 7}, **priced)
    log = tmp_path / "log.json"
    with pytest.raises(CallFailed, match=r"cost cap of \$40\.0000 would be passed") as stop:
        complete(spec, prompts(10), CallOptions(cache_path=cache, max_cost_usd=40, run_log=log))
    facts = json.loads(log.read_text())
    assert server.request_count == 4 and facts["cost_usd_this_run"] <= 40
    assert "(6 of 10 calls were not made)" in str(stop.value)
    # The cap counts this run's spend: cached calls cost nothing now.
    done = complete(spec, prompts(10), CallOptions(cache_path=cache, max_cost_usd=60))
    assert server.request_count == 10 and sum(c.cost_usd for c in done) > 60
    assert {round(c.cost_usd, 6) for c in done} == {7.0}  # 2 + 5 words per default reply


def test_a_cap_needs_a_price(server: OpenAIServer, cache: Path) -> None:
    node = server.model_config()
    del node["price"]
    with pytest.raises(LosonaError, match="max_cost_usd is set but nobody knows"):
        complete(
            ModelSpec.from_config(node), prompts(1), CallOptions(cache_path=cache, max_cost_usd=1)
        )


def test_a_plan_counts_calls_and_cached_calls_without_calling(
    server: OpenAIServer, cache: Path
) -> None:
    spec = spec_for(server, price={"input_usd_per_mtok": 1e6, "output_usd_per_mtok": 1e6})
    complete(spec, prompts(3), CallOptions(cache_path=cache))
    found = plan(spec, prompts(5), cache_path=cache)
    assert (found.requests, found.cached, found.to_call) == (5, 3, 2)
    assert found.estimated_cost_usd and found.estimated_cost_usd > 0
    assert "5 calls, 3 already cached, 2 to make" in found.describe()
    assert server.request_count == 3


def test_rejected_params_are_named_or_dropped_and_recorded(
    server: OpenAIServer, cache: Path, tmp_path: Path
) -> None:
    anthropic = {"name": "m", "model": "anthropic/claude-opus-4-8", "api_key_env": "K"}
    with pytest.raises(LosonaError, match=r"does not accept \['presence_penalty'\]"):
        _prepare(ModelSpec.from_config(anthropic | {"params": {"presence_penalty": 0.1}}))
    kept = _prepare(
        ModelSpec.from_config(
            anthropic | {"params": {"presence_penalty": 0.1}, "drop_params": ["presence_penalty"]}
        )
    )
    assert kept.params == {} and kept.dropped == ["presence_penalty"]
    # End to end: a dropped parameter never reaches the server and the run log says so.
    spec = spec_for(server, params={"temperature": 0.3, "top_p": 0.5}, drop_params=["top_p"])
    log = tmp_path / "log.json"
    complete(spec, prompts(2), CallOptions(cache_path=cache, run_log=log))
    assert all("top_p" not in b and b["temperature"] == 0.3 for b in server.requests)
    assert json.loads(log.read_text())["dropped_params"] == ["top_p"]


def test_the_run_log_counts_hits_and_misses_and_the_key_stays_secret(
    server: OpenAIServer, cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-must-never-be-written-4242"
    monkeypatch.setenv("LOSONA_TEST_KEY", secret)
    spec = spec_for(server, api_key_env="LOSONA_TEST_KEY")
    complete(spec, prompts(2), CallOptions(cache_path=cache))
    log = tmp_path / "log.json"
    complete(spec, prompts(5), CallOptions(cache_path=cache, run_log=log))
    facts = json.loads(log.read_text())
    assert (facts["cache_hits"], facts["cache_misses"], facts["completed"]) == (2, 3, 3)
    written = log.read_bytes() + b"".join(p.read_bytes() for p in tmp_path.glob("calls.sqlite*"))
    assert secret.encode() not in written


def test_calls_are_spread_over_several_endpoints(cache: Path) -> None:
    with OpenAIServer() as first, OpenAIServer() as second:
        node = first.model_config(endpoints=[first.url, second.url])
        del node["api_base"]
        results = complete(ModelSpec.from_config(node), prompts(40), CallOptions(cache_path=cache))
    assert all(r.ok for r in results)
    assert first.request_count > 0 and second.request_count > 0
    assert first.request_count + second.request_count == 40


def test_off_a_terminal_the_progress_is_lines_not_a_bar(
    server: OpenAIServer, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Under DVC there is no terminal: no bar's carriage returns, a line at the start and
    # at the end (and every 30 s between; tests/test_progress.py).
    options = CallOptions(cache_path=cache, progress="sample local/naive")
    complete(spec_for(server), prompts(3), options)
    err = capsys.readouterr().err
    assert "\r" not in err
    lines = err.splitlines()
    assert lines[0] == "sample local/naive: 3 calls: 0 from the call cache, 3 to make"
    assert lines[-1].startswith("sample local/naive: 3 of 3 calls made (failed 0, $")
    # Answered whole from the cache: nothing to report.
    complete(spec_for(server), prompts(3), options)
    assert capsys.readouterr().err == ""


def test_a_model_nobody_can_price_is_recorded_at_zero_with_a_warning(
    server: OpenAIServer, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    node = server.model_config()
    del node["price"]
    results = complete(ModelSpec.from_config(node), prompts(2), CallOptions(cache_path=cache))
    assert [r.cost_usd for r in results] == [0.0, 0.0]
    assert "litellm has no price for openai/test-model" in capsys.readouterr().err


# --- rate limits and fault names ---------------------------------------------------------

# How the run log names each transient fault: as it happened, not as litellm files it
# (a dropped connection and a malformed body both reach us as an InternalServerError 500).
FAULT_NAMES = {
    "rate_limit": "RateLimitError (429)",
    "server_error": "InternalServerError (500)",
    "unavailable": "ServiceUnavailableError (503)",
    "drop": "dropped connection",
    "hang": "Timeout (408)",
    "malformed": "malformed body",
    "empty": "empty reply (finish_reason stop)",
}


@pytest.mark.parametrize("kind", TRANSIENT_FAULTS)
def test_the_run_log_names_each_fault_as_it_happened(kind: Any, tmp_path: Path) -> None:
    log = tmp_path / "run.log.json"
    with OpenAIServer(faults=fail_first(1, kind, retry_after=0.01), hang_s=5) as server:
        spec = spec_for(server, timeout_s=0.5)
        results = complete(
            spec, prompts(3), CallOptions(cache_path=tmp_path / "c.sqlite", run_log=log)
        )
    assert all(r.ok for r in results)
    assert json.loads(log.read_text())["retried_errors"] == {FAULT_NAMES[kind]: 3}


def test_a_call_that_fails_names_its_fault_too(server: OpenAIServer, cache: Path) -> None:
    server.faults = lambda body, seen: Fault("malformed")
    (result,) = complete(
        spec_for(server, max_attempts=2), prompts(1), CallOptions(cache_path=cache)
    )
    assert result.error is not None and result.error.startswith("malformed body: ")


def test_rate_limits_are_waited_out_for_the_patience_not_an_attempt_count(
    server: OpenAIServer, cache: Path
) -> None:
    server.faults = fail_first(10, "rate_limit", retry_after=0.01)
    (result,) = complete(
        spec_for(server, max_attempts=2), prompts(1), CallOptions(cache_path=cache)
    )
    assert result.ok and result.attempts == 11  # ten 429s, well past max_attempts


def test_a_call_rate_limited_past_its_patience_fails_naming_it(
    server: OpenAIServer, cache: Path
) -> None:
    server.faults = lambda body, seen: Fault("rate_limit", retry_after=0.1)
    started = time.monotonic()
    (result,) = complete(
        spec_for(server, rate_limit_patience_s=0.5), prompts(1), CallOptions(cache_path=cache)
    )
    # Patience, not the retry count, ends it: some tries, at most one per Retry-After in the
    # half second, and done in seconds (the default patience would wait minutes). A loaded
    # machine makes each try slower, so fewer fit: the bounds allow for that.
    assert 0.3 < time.monotonic() - started < 10
    assert result.error is not None and "RateLimitError (429)" in result.error
    assert "rate_limit_patience_s is 0.5" in result.error and 2 <= result.attempts <= 6


def test_sends_in_flight_drop_under_rate_limits_and_recover(cache: Path) -> None:
    window = range(60, 140)  # the server's 60th to 139th requests are answered with 429

    def faults(body: dict[str, Any], seen: int) -> Fault | None:
        return Fault("rate_limit", 0.01) if server.request_count in window else None

    # Each answer takes 0.1 s, long enough for the client to refill every free slot before
    # the next answer even on a busy machine (at 0.02 s, CI once saw no more than 5 of 8).
    with OpenAIServer(latency=0.1, faults=faults) as server:
        results = complete(
            spec_for(server, concurrency=8), prompts(320), CallOptions(cache_path=cache)
        )
    assert all(r.ok for r in results)
    in_flight = server.in_flight_at_arrival  # counted by the server as each request arrived
    # Counted at arrival, sends in flight rise and fall in a saw-tooth as answers come back
    # in bursts, and a burst may not quite reach the top: hence >= 6.
    assert max(in_flight[20:60]) >= 6  # before: up to the configured concurrency (8)
    assert max(in_flight[110:140]) <= 2  # while every send is refused: cut to one or two
    recovered = in_flight[140 + 60 : len(in_flight) - 10]  # after, but before the queue drains
    assert recovered and max(recovered) >= 6


def test_the_cap_says_what_was_spent_once_the_calls_in_flight_settle(
    cache: Path, tmp_path: Path
) -> None:
    # Four calls in flight at $17 estimated each: the third reservation would pass $40 while
    # the first two are still out. Their $7 each must be in the message, as in the run log.
    priced = {"price": {"input_usd_per_mtok": 1e6, "output_usd_per_mtok": 1e6}}
    log = tmp_path / "log.json"
    with OpenAIServer(latency=0.2) as server:
        spec = spec_for(server, concurrency=4, params={"max_tokens": 7}, **priced)
        with pytest.raises(CallFailed) as stop:
            complete(spec, prompts(10), CallOptions(cache_path=cache, max_cost_usd=40, run_log=log))
    facts = json.loads(log.read_text())
    assert server.request_count == 2 and facts["cost_usd_this_run"] == 14.0
    assert "the cost cap of $40.0000 would be passed ($14.0000 spent in this run)" in str(
        stop.value
    )
    assert facts["stopped"].endswith("($14.0000 spent in this run)")


def test_the_loops_inline_executor_hands_a_setup_error_to_the_awaiting_caller() -> None:
    # litellm runs its request setup in the loop's default executor; an error there must
    # reach the call that awaits it, as from a worker thread, not vanish or stop the loop.
    def setup() -> None:
        raise ValueError(f"setup failed on {threading.current_thread().name}")

    async def run() -> None:
        loop = asyncio.get_running_loop()
        loop.set_default_executor(_InlineExecutor(max_workers=1))
        with pytest.raises(ValueError, match=f"on {threading.current_thread().name}$"):
            await loop.run_in_executor(None, setup)
        assert await loop.run_in_executor(None, lambda: 2 + 2) == 4

    asyncio.run(run())
