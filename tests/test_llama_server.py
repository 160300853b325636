"""The LLM judge and an api_base subject against a real server written by others.

llama.cpp's OpenAI-compatible server (`python -m llama_cpp.server`, from
`llama-cpp-python[server]`) serves the embedded model's GGUF on 127.0.0.1 for this module;
the judge and a subject reach it exactly as they would reach any served model: the
`openai/` provider with `api_base`, through the shared model layer.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from losona.core.contracts import scenarios_from_table
from losona.judges.base import NOT_A_VERDICT, JudgeCase, Judgement
from losona.judges.llm import STRUCTURED_ADVICE, LLMJudge
from losona.judges.reply import FIELDS, TEXT_FIELDS, ReplyContext, parse_verdict
from losona.models import CallOptions, CallsFailed, ModelSpec
from losona.prompts.render import render_prompts
from losona.sampling.sample import sample_cell
from losona.scenarios.datasets import fetch_scenarios

# One worker takes the whole module (make test's --dist loadgroup), so its module fixture
# (the llama.cpp server) is made once per test run, not once per worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("llama_server")]

# The documented llama.cpp server config (docs, "OpenAI-compatible servers").
MODELS_PAGE = Path(__file__).parent.parent / "docs" / "models.md"
# Room for a judge prompt, a repair round and the replies.
CONTEXT_TOKENS = 4096
START_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's server with the embedded model on 127.0.0.1; yields its api_base."""
    from losona.models.smollm2 import gguf_path

    port = free_port()
    # To a file, not a pipe: llama.cpp logs a lot while loading, and a full pipe would
    # block the server.
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = log_path.open("w")
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(gguf_path()),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(CONTEXT_TOKENS),
        ],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if child.poll() is not None:
                pytest.fail(f"llama_cpp.server exited: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                    json.load(answer)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("llama_cpp.server did not start in time")
                time.sleep(0.5)
        yield url
    finally:
        child.terminate()
        child.wait(timeout=30)
        log.close()


def served(url: str, name: str, **settings: Any) -> dict[str, Any]:
    """A model node for the served model: one call at a time (one llama.cpp slot)."""
    return {
        "name": name,
        "model": "openai/local-model",
        "api_base": url,
        "params": {"temperature": 0, "max_tokens": 200},
        "concurrency": 1,
        "timeout_s": 300,
        "max_attempts": 2,
        "backoff_s": 0.1,
        "price": {"input_usd_per_mtok": 0, "output_usd_per_mtok": 0},
    } | settings


def cases(n: int) -> list[JudgeCase]:
    """The compliant example replies of the first `n` bundled scenarios, as controls.

    A control is judged with no earlier messages, so its prompt is the shortest a judge
    gets (about 700 tokens): the 135M model reads it in seconds on two cores.
    """
    scenarios = scenarios_from_table(fetch_scenarios({"name": "bundled", "kind": "bundled"}))
    return [JudgeCase.control(s, s.example_compliant_response) for s in scenarios[:n]]


@pytest.mark.parametrize("structured_output", ["none", "json_object_schema"])
def test_the_llm_judge_against_llama_cpp(
    llama_server: str, tmp_path: Path, structured_output: str
) -> None:
    # The schema needs room to close its JSON object; without it, the reply is read (or
    # found unreadable) from its first 64 tokens, which keeps the test short.
    tokens = 200 if structured_output != "none" else 64
    spec = ModelSpec.from_config(
        served(llama_server, "llama_judge", params={"temperature": 0, "max_tokens": tokens})
    )
    judge = LLMJudge(
        spec,
        CallOptions(cache_path=tmp_path / "calls.sqlite", run_log=tmp_path / "judge.log.json"),
        structured_output=structured_output,
    )
    # Without the schema an unreadable reply costs a repair round (the conversation read
    # again): one case keeps that within a couple of minutes on a busy 2-core machine.
    n = 2 if structured_output != "none" else 1
    asked = cases(n)
    verdicts = judge.judge(asked)
    assert len(verdicts) == n
    for case, verdict in zip(asked, verdicts, strict=True):
        assert verdict.status in ("ok", *NOT_A_VERDICT)
        # Unscored exactly when the reply held no verdict, and then the raw replies are kept.
        assert (verdict.complies is None) == (verdict.status != "ok")
        if verdict.status == "ok":
            assert isinstance(verdict.complies, bool)
            # A scored verdict is the judge's own: read again, it passes every check.
            assert parse_verdict(json.dumps(verdict_object(verdict)), ReplyContext.of(case))
        else:
            assert verdict.evidence
    # The first replies as the server wrote them: a copy of the answer template (what this
    # model writes under the schema) never became a scored verdict.
    first_replies = [c.text or "" for c in judge.calls[0]]  # the first round, case by case
    for text, verdict in zip(first_replies, verdicts, strict=True):
        if template_copy(text):
            assert verdict.status != "ok", text
    sent = json.loads((tmp_path / "judge.log.json").read_text())["params_sent"]
    if structured_output == "json_object_schema":
        # With the schema, llama.cpp constrains the reply to the object's shape: every reply
        # holds one, so what is unscored was no verdict of the model's own, never unreadable.
        assert "unparseable" not in [v.status for v in verdicts]
        assert sent["response_format"]["type"] == "json_object"
        assert set(sent["response_format"]["schema"]["properties"]) == {
            "elicitor_uptake",
            "norm_requirement",
            "evidence",
            "reasoning",
            "complies",
        }
    else:
        assert "response_format" not in sent


def verdict_object(verdict: Judgement) -> dict[str, Any]:
    """A scored verdict as the JSON object of Appendix C."""
    return {field: getattr(verdict, field) for field in FIELDS}


def template_copy(text: str) -> bool:
    """Whether a reply is the answer template with its placeholders left in."""
    try:
        obj = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(obj, dict) and any(
        isinstance(obj.get(field), str) and set(obj[field].strip()) <= {".", "\u2026"}
        for field in TEXT_FIELDS
    )


def test_a_server_that_rejects_the_schema_gets_the_advice(
    llama_server: str, tmp_path: Path
) -> None:
    # llama-cpp-python's server takes response_format types "text" and "json_object" only,
    # and says so with an HTTP 500: the advice is the form it takes, not the one for a 400.
    spec = ModelSpec.from_config(served(llama_server, "llama_judge"))
    judge = LLMJudge(
        spec, CallOptions(cache_path=tmp_path / "calls.sqlite"), structured_output="json_schema"
    )
    with pytest.raises(CallsFailed) as refused:
        judge.judge(cases(1))
    message = str(refused.value)
    assert "InternalServerError (500)" in message and "response_format" in message
    assert "The server refused structured_output: json_schema with an HTTP 500" in message
    assert "Set structured_output: json_object_schema to keep the schema" in message
    assert STRUCTURED_ADVICE not in message  # the 400's advice


def documented_llamacpp_config() -> dict[str, Any]:
    """The docs' `conf/model/my_llamacpp.yaml` example (docs/models.md), as written there."""
    blocks = re.findall(r"```yaml\n(.*?)```", MODELS_PAGE.read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if b.startswith("# conf/model/my_llamacpp.yaml")]
    config: dict[str, Any] = yaml.safe_load(block)
    return config


def test_a_subject_samples_through_llama_cpp_as_the_docs_say(
    llama_server: str, tmp_path: Path
) -> None:
    config = documented_llamacpp_config()
    assert config["model"].startswith("openai/") and "api_base" in config
    # Written for llama-cpp-python's server, the one started here: one request at a time,
    # replies capped like the embedded model's, a label, and time for a slow CPU.
    assert config["concurrency"] == 1 and config["label"]
    assert config["params"]["max_tokens"] == 64 and config["timeout_s"] >= 600
    # Only the address differs: the documented server listens on 8080, ours on a free port.
    spec = ModelSpec.from_config(config | {"api_base": llama_server})
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"}).head(1)
    prompts = render_prompts(scenarios, ["naive"])
    log = tmp_path / "sample.log.json"
    responses = sample_cell(
        prompts, spec, "naive", 2, CallOptions(cache_path=tmp_path / "calls.sqlite", run_log=log)
    ).responses.collect()
    assert responses.height == 2
    assert responses["response"].null_count() == 0
    assert all(text.strip() for text in responses["response"].to_list())
    assert set(responses["subject_model"]) == {"my_llamacpp"}
    # seed_per_trial: each trial is its own call (its own seed), both answered.
    facts = json.loads(log.read_text())
    assert (facts["distinct_calls_needed"], facts["completed"], facts["failed"]) == (2, 2, 0)
