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

from losona.contracts import scenarios_from_table
from losona.datasets import fetch_scenarios
from losona.judges.base import JudgeCase
from losona.judges.llm import LLMJudge
from losona.models import ModelSpec
from losona.render import render_prompts
from losona.sample import sample_responses

pytestmark = pytest.mark.slow

README = Path(__file__).parent.parent / "README.md"
# Longer than the longest judge prompt (about 1,600 tokens) plus a repair round and reply.
CONTEXT_TOKENS = 4096
START_TIMEOUT_S = 120


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    """llama.cpp's server with the embedded model on 127.0.0.1; yields its api_base."""
    from losona.models.smollm2 import gguf_path

    port = free_port()
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
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if child.poll() is not None:
                assert child.stderr is not None
                pytest.fail(f"llama_cpp.server exited: {child.stderr.read()[-2000:]}")
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


def served(url: str, name: str, **settings: Any) -> dict[str, Any]:
    """A model node for the served model: one call at a time (one llama.cpp slot)."""
    return {
        "name": name,
        "model": "openai/local-model",
        "api_base": url,
        "params": {"temperature": 0, "max_tokens": 400},
        "concurrency": 1,
        "timeout_s": 300,
        "max_attempts": 2,
        "backoff_s": 0.1,
        "price": {"input_usd_per_mtok": 0, "output_usd_per_mtok": 0},
    } | settings


def cases(n: int) -> list[JudgeCase]:
    """The compliant example replies of the first `n` bundled scenarios, in their chats."""
    scenarios = scenarios_from_table(fetch_scenarios({"name": "bundled", "kind": "bundled"}))
    return [JudgeCase.for_response(s, s.example_compliant_response) for s in scenarios[:n]]


@pytest.mark.parametrize("structured_output", ["none", "json_schema"])
def test_the_llm_judge_against_llama_cpp(
    llama_server: str, tmp_path: Path, structured_output: str
) -> None:
    spec = ModelSpec.from_config(served(llama_server, "llama_judge"))
    judge = LLMJudge(
        spec,
        cache_path=tmp_path / "calls.sqlite",
        run_log=tmp_path / "judge",
        structured_output=structured_output,
    )
    verdicts = judge.judge(cases(2))
    assert len(verdicts) == 2
    for verdict in verdicts:
        assert verdict.status in ("ok", "unparseable")
        # Unscored exactly when unparseable, and then the raw replies are kept.
        assert (verdict.complies is None) == (verdict.status == "unparseable")
        if verdict.status == "ok":
            assert isinstance(verdict.complies, bool)
            assert all(
                value is None or isinstance(value, str)
                for value in (verdict.elicitor_uptake, verdict.norm_requirement, verdict.reasoning)
            )
        else:
            assert verdict.evidence
    sent = json.loads((tmp_path / "judge.log.json").read_text())["params_sent"]
    if structured_output == "json_schema":
        # With the schema, llama.cpp constrains the reply: every one parses.
        assert [v.status for v in verdicts] == ["ok", "ok"]
        assert sent["response_format"]["type"] == "json_schema"
        assert set(sent["response_format"]["json_schema"]["schema"]["properties"]) == {
            "elicitor_uptake",
            "norm_requirement",
            "evidence",
            "reasoning",
            "complies",
        }
    else:
        assert "response_format" not in sent


def readme_llamacpp_config() -> dict[str, Any]:
    """The README's `conf/model/my_llamacpp.yaml` example, as written there."""
    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    (block,) = [b for b in blocks if b.startswith("# conf/model/my_llamacpp.yaml")]
    config: dict[str, Any] = yaml.safe_load(block)
    return config


def test_a_subject_samples_through_llama_cpp_as_the_readme_says(
    llama_server: str, tmp_path: Path
) -> None:
    config = readme_llamacpp_config()
    assert config["model"].startswith("openai/") and "api_base" in config
    # Only the address differs: the README's server listens on 8080, ours on a free port.
    params = {**config["params"], "max_tokens": 48}  # a chat message; keeps the test short
    spec = ModelSpec.from_config(config | {"api_base": llama_server, "params": params})
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"}).head(2)
    prompts = render_prompts(scenarios, ["naive"])
    log = tmp_path / "sample.log.json"
    responses = sample_responses(
        prompts, spec, "naive", 2, cache_path=tmp_path / "calls.sqlite", run_log=log
    )
    assert responses.height == 4
    assert responses["response"].null_count() == 0
    assert all(text.strip() for text in responses["response"].to_list())
    assert set(responses["subject_model"]) == {"my_llamacpp"}
    # seed_per_trial: each trial is its own call (its own seed), all four answered.
    facts = json.loads(log.read_text())
    assert (facts["distinct_calls_needed"], facts["completed"], facts["failed"]) == (4, 4, 0)
