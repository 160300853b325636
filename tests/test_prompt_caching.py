"""Provider prompt caching: the rules, the order calls go out in, the markers, the bill.

All offline: the test server reports cached prompt tokens as OpenAI does, and answers
Anthropic's Messages API with its cache_control semantics, so litellm's real requests
and responses are exercised end to end.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import polars as pl
import pytest

import losona.judges.llm as llm
from losona.core.contracts import PROMPT_SCHEMA, scenarios_from_table, table
from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.judges.base import JudgeCase
from losona.judges.llm import LLMJudge
from losona.judges.prompt import judge_messages
from losona.judges.run import judge_responses
from losona.models import CallOptions, Completion, ModelSpec, Request, call_key, complete
from losona.models.pricing import Usage, estimate, rates_for, usage_of
from losona.models.prompt_caching import (
    NO_REUSE,
    OPENAI,
    OWN_SERVER,
    CacheRule,
    cache_rule,
    content_words,
    plan_reuse,
)
from losona.prompts.render import render_prompts
from losona.sampling.sample import sample_cell
from losona.scenarios.datasets import fetch_scenarios
from losona.testing.openai_server import OpenAIServer
from losona.testing.scripted_judge import ScriptedJudge

# Above every minimum cached prefix, counted in the server's words or in real tokens.
LONG = " ".join(f"w{i}" for i in range(1300))
PRICE = {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0, "cached_input_usd_per_mtok": 0.1}
ANTHROPIC = CacheRule("Anthropic", markers=True, min_tokens=1024)


@pytest.fixture(scope="module")
def bundled() -> pl.DataFrame:
    """The bundled scenario table, loaded once."""
    return fetch_scenarios({"name": "bundled", "kind": "bundled"})


def user(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": text}]


def judged(system: str, shared: str, response: str) -> list[dict[str, str]]:
    """A judge-shaped conversation: fixed instructions, the scenario, then the response."""
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"{shared}\n<<<{response}>>>\nRespond with JSON."},
    ]


# --- the rules and the plan ----------------------------------------------------------------


def test_the_rules_follow_each_providers_minimum_and_steps() -> None:
    assert cache_rule("openai", "openai/gpt-5.5") == OPENAI
    assert [OPENAI.cached(n) for n in (1000, 1024, 1100, 1300)] == [0, 1024, 1024, 1280]
    opus = cache_rule("anthropic", "anthropic/claude-opus-4-8")
    assert opus is not None and opus.markers and opus.min_tokens == 1024
    assert cache_rule("anthropic", "anthropic/claude-fable-5").min_tokens == 512  # type: ignore[union-attr]
    assert cache_rule("anthropic", "anthropic/claude-opus-4-6").min_tokens == 4096  # type: ignore[union-attr]
    gemini = cache_rule("gemini", "gemini/gemini-3.1-pro-preview")
    assert gemini is not None and not gemini.markers and gemini.min_tokens == 4096
    assert cache_rule("gemini", "gemini/gemma-3-27b-it") is None
    assert cache_rule("deepinfra", "deepinfra/Qwen/Qwen2.5-72B-Instruct") is None
    assert cache_rule("openai", "openai/mine", own_server=True) == OWN_SERVER


def test_a_prompts_trials_reuse_its_first_call_and_a_scenarios_responses_its_first() -> None:
    one, two = LONG + " one", "two " + LONG
    plans = plan_reuse([user(one)] * 3 + [user(two)] * 3, content_words, OPENAI)
    assert [p.parent for p in plans] == [None, 0, 0, None, 3, 3]
    assert plans[1].cached_tokens == OPENAI.cached(1301) == 1280 and plans[0] == NO_REUSE

    judge = [judged("rules", LONG, r) for r in ("yes", "no way", "maybe so")]
    plans = plan_reuse(judge, content_words, OPENAI)
    assert [p.parent for p in plans] == [None, 0, 0]
    shared = len(content_words(judge[0])) - 4  # all but "<<<yes>>>" and the closing line
    assert plans[1].cached_tokens == OPENAI.cached(shared)

    short = plan_reuse([user("a short prompt")] * 3, content_words, OPENAI)
    assert short == [NO_REUSE] * 3  # below the minimum: nothing to wait for, nothing cached
    assert plan_reuse([user(one)] * 3, content_words, None) == [NO_REUSE] * 3


def test_anthropic_marks_only_what_another_call_of_the_run_reads() -> None:
    plans = plan_reuse([user(LONG)] * 3 + [user("alone " + LONG)], content_words, ANTHROPIC)
    leader, *followers, alone = plans
    assert leader.markers == (0,) and leader.written_tokens == 1300 and leader.cached_tokens == 0
    assert all(
        f.parent == 0 and f.cached_tokens == 1300 and not f.written_tokens for f in followers
    )
    assert alone == NO_REUSE  # no other call reads it: no marker, no 1.25x write

    # A judge prompt: the instructions are shared by every call, the rest by none.
    judge = [judged(LONG, f"scenario {i}", "yes") for i in range(3)]
    first, *rest = plan_reuse(judge, content_words, ANTHROPIC)
    assert first.markers == (0,) and first.written_tokens == 1300
    assert all(r.markers == (0,) and r.cached_tokens == 1300 and r.parent == 0 for r in rest)


# --- prices --------------------------------------------------------------------------------


def test_three_prices_from_litellms_map_and_from_a_config() -> None:
    info = {
        "input_cost_per_token": 5e-06,
        "output_cost_per_token": 3e-05,
        "cache_read_input_token_cost": 5e-07,
        "input_cost_per_token_batches": 2.5e-06,
        "output_cost_per_token_batches": 1.5e-05,
        "cache_read_input_token_cost_batches": 2.5e-07,
    }
    spec = ModelSpec.from_config({"name": "gpt", "model": "openai/gpt-5.5"})
    rates = rates_for(spec, "openai", False, info)
    usage = Usage(2000, 100, cache_read_tokens=1024)
    assert rates.list_cost(usage) == pytest.approx(2000 * 5e-06 + 100 * 3e-05)
    assert rates.cost(usage) == pytest.approx(976 * 5e-06 + 1024 * 5e-07 + 100 * 3e-05)
    assert rates.batch_cost(usage) == pytest.approx(976 * 2.5e-06 + 1024 * 2.5e-07 + 100 * 1.5e-05)
    assert rates.batch_basis == "litellm's batch prices"

    anthropic = rates_for(
        ModelSpec.from_config({"name": "c", "model": "anthropic/claude-opus-4-8"}),
        "anthropic",
        False,
        {"input_cost_per_token": 5e-06, "output_cost_per_token": 2.5e-05,
         "cache_read_input_token_cost": 5e-07, "cache_creation_input_token_cost": 6.25e-06},
    )  # fmt: skip
    written = Usage(2000, 0, cache_write_tokens=1500)
    assert anthropic.cost(written) == pytest.approx(500 * 5e-06 + 1500 * 6.25e-06)
    assert anthropic.cost(written) > anthropic.list_cost(written)  # a write costs 1.25x
    assert anthropic.batch_cost(written) == pytest.approx(anthropic.cost(written) / 2)
    assert anthropic.batch_basis.startswith("half price (Anthropic documents a 50% batch")

    mine = ModelSpec.from_config({"name": "m", "model": "openai/m", "api_base": "http://x/v1",
                                  "price": PRICE})  # fmt: skip
    rates = rates_for(mine, "openai", True, None)
    assert rates.cost(Usage(1000, 10, cache_read_tokens=1000)) == pytest.approx((100 + 20) / 1e6)
    assert rates.batch is None
    assert rates.batch_basis == "a server of your own: batch at its list price"
    # A config's list price: input and output tokens at the config's prices per million.
    assert rates.list_cost(Usage(7, 3)) == pytest.approx((7 * 1.0 + 3 * 2.0) / 1e6)

    found = estimate(rates, [1000, 1000], 10, plan_reuse([user(LONG)] * 2, content_words, OPENAI))
    assert found.list_usd > found.caching_usd and found.reusing == 1


def test_cached_tokens_are_read_as_litellm_reports_each_provider() -> None:
    # Imported here: losona.models must be imported first, so that litellm uses its own
    # price map rather than fetching one.
    from litellm.types.utils import Usage as LitellmUsage

    openai = LitellmUsage(
        prompt_tokens=2000, completion_tokens=5, prompt_tokens_details={"cached_tokens": 1280}
    )
    assert usage_of(SimpleNamespace(usage=openai)) == Usage(2000, 5, 1280, 0)
    anthropic = LitellmUsage(
        prompt_tokens=2000,
        completion_tokens=5,
        cache_read_input_tokens=700,
        cache_creation_input_tokens=1200,
    )
    assert usage_of(SimpleNamespace(usage=anthropic)) == Usage(2000, 5, 700, 1200)
    assert usage_of(SimpleNamespace(usage=None)) == Usage(0, 0)


def test_a_price_may_name_a_cached_input_price_and_prompt_caching_is_a_switch() -> None:
    spec = ModelSpec.from_config({"name": "m", "model": "openai/m", "price": PRICE})
    assert spec.price is not None and spec.price.cached_input_usd_per_mtok == 0.1
    assert spec.prompt_caching is True
    with pytest.raises(LosonaError, match=r"'model\.prompt_caching': expected true or false"):
        ModelSpec.from_config({"name": "m", "model": "openai/m", "prompt_caching": "yes"})
    with pytest.raises(LosonaError, match=r"'model.price.x': expected one of the settings \["):
        ModelSpec.from_config({"name": "m", "model": "openai/m", "price": PRICE | {"x": 1}})
    # Caching is billing only: the switch is not part of any call's key.
    off = ModelSpec.from_config({"name": "m", "model": "openai/m", "prompt_caching": False})
    request = Request(user("hello"), trial=2)
    assert call_key(spec, request) == call_key(off, request)


# --- the test server -------------------------------------------------------------------------


def test_the_test_server_reports_the_prefix_an_earlier_answered_prompt_shares() -> None:
    def send(url: str, text: str) -> int:
        body = json.dumps({"model": "m", "messages": user(text)}).encode()
        post = urllib.request.Request(
            f"{url}/chat/completions", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(post) as answer:
            usage = json.load(answer)["usage"]
        assert usage["prompt_tokens"] == len(text.split())
        return int(usage["prompt_tokens_details"]["cached_tokens"])

    with OpenAIServer() as server:
        assert send(server.url, LONG + " a") == 0
        assert send(server.url, LONG + " b") == 1280  # 1,300 shared words, in 128-word steps
        assert send(server.url, "x " + LONG) == 0  # differs at the first word
        assert send(server.url, "short") == 0
        server.forget_prompts()
        assert send(server.url, LONG + " a") == 0


# --- sample and judge runs -------------------------------------------------------------------


@pytest.fixture
def long_prompts(bundled: pl.DataFrame) -> pl.DataFrame:
    """Four bundled scenarios under naive, each prompt lengthened past every minimum."""
    scenarios = bundled.head(4)
    rows = render_prompts(scenarios, ["naive"]).to_dicts()
    for row in rows:
        row["messages"] = [m | {"content": m["content"] + "\n" + LONG} for m in row["messages"]]
    return table(rows, PROMPT_SCHEMA, sort_by=["scenario_id", "condition"])


def test_a_sample_run_records_cached_tokens_and_a_bill_below_list(
    long_prompts: pl.DataFrame, tmp_path: Path
) -> None:
    tables = {}
    with OpenAIServer() as server:  # one server, one address: the calls' keys name it
        for caching in (True, False):
            server.forget_prompts()
            server.cached_tokens.clear()
            node = server.model_config("local", price=PRICE, prompt_caching=caching)
            log = tmp_path / f"{caching}.log.json"
            sampled = sample_cell(
                long_prompts,
                ModelSpec.from_config(node),
                "naive",
                3,
                CallOptions(cache_path=tmp_path / f"{caching}.sqlite", run_log=log),
            )
            facts = json.loads(log.read_text())
            if caching:
                # Each prompt's second and third trial went out after its first was answered.
                assert server.cached_tokens.count(0) == 4
                cache = facts["prompt_cache"]
                assert cache["calls_with_cache_hits"] == 8
                assert cache["calls_sent_after_the_call_they_reuse"] == 8
                assert cache["cache_read_tokens_this_run"] == sum(server.cached_tokens) > 8 * 1024
                assert facts["cost_usd_this_run"] < 0.5 * facts["list_cost_usd_this_run"]
                assert facts["list_cost_usd_this_run"] == pytest.approx(
                    sampled.responses.collect()["cost_usd"].sum()
                )
            else:
                assert facts["prompt_cache"]["rule"] == "off (prompt_caching: false)"
            write_parquet(sampled.responses, tmp_path / f"{caching}.parquet")
            write_parquet(sampled.calls, tmp_path / f"{caching}.calls.parquet")
            tables[caching] = [
                (tmp_path / f"{caching}{suffix}.parquet").read_bytes() for suffix in ("", ".calls")
            ]
    # The response table and the calls (keys included) do not depend on caching.
    assert tables[True] == tables[False]


def test_a_judge_run_records_cached_tokens_and_a_bill_below_list(
    bundled: pl.DataFrame, tmp_path: Path
) -> None:
    scenarios = bundled.head(4)
    ids = scenarios["scenario_id"].to_list()
    # Rows out of order: the judge still sends a scenario's responses together.
    rows = [
        {"scenario_id": sid, "condition": "naive", "subject_model": "m", "provider_model": "t/m",
         "trial": trial, "prompt_sha256": "0" * 64, "response": f"Reply {trial} to {sid}.",
         "finish_reason": "stop", "prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 0.0}
        for trial in (2, 0, 1) for sid in reversed(ids)
    ]  # fmt: skip
    from losona.core.contracts import RESPONSE_SCHEMA

    responses = pl.DataFrame(rows, schema=RESPONSE_SCHEMA)
    with OpenAIServer(reply=ScriptedJudge()) as server:
        node = server.model_config("judge", price=PRICE, seed_per_trial=False, concurrency=8)
        judge = LLMJudge(
            ModelSpec.from_config(node),
            CallOptions(cache_path=tmp_path / "c.sqlite", run_log=tmp_path / "j.log.json"),
        )
        verdicts = judge_responses(
            scenarios, responses, judge, "judge", model="m", condition="naive", origin="test"
        )
        order = [judged_scenario(body, scenarios) for body in server.requests]
    assert verdicts.height == 12
    # The first response to each scenario is answered before the other two are sent.
    assert server.cached_tokens.count(0) == 4 and len(server.cached_tokens) == 12
    for sid in ids:
        first = order.index(sid)
        assert server.cached_tokens[first] == 0
    facts = json.loads((tmp_path / "j.log.json").read_text())
    assert facts["prompt_cache"]["calls_with_cache_hits"] == 8
    assert facts["prompt_cache"]["cache_read_tokens_this_run"] == sum(server.cached_tokens) > 0
    assert facts["cost_usd_this_run"] < facts["list_cost_usd_this_run"]


def judged_scenario(body: dict[str, Any], scenarios: pl.DataFrame) -> str:
    prompt = body["messages"][1]["content"]
    return next(
        s.scenario_id
        for s in scenarios_from_table(scenarios)
        if f"FINAL ELICITOR TURN\n\n{s.elicitor_actor}: {s.elicitor_content}" in prompt
    )


def test_the_judge_sends_every_response_to_a_scenario_together(
    bundled: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenarios = bundled.head(3)
    sent: list[Request] = []

    def fake_complete(
        spec: ModelSpec, requests: list[Request], *_: Any, **__: Any
    ) -> list[Completion]:
        sent.extend(requests)
        verdict = '{"elicitor_uptake": "", "norm_requirement": "", "evidence": "", ' \
            '"reasoning": "a bare reply", "complies": true}'  # fmt: skip
        return [Completion(verdict, "stop", 1, 1, 0.0, None, False) for _ in requests]

    monkeypatch.setattr(llm, "complete", fake_complete)
    ids = scenarios["scenario_id"].to_list()
    from test_judge import responses_table

    responses = responses_table(
        [(sid, trial, f"reply {trial}") for trial in (1, 0, 2) for sid in reversed(ids)]
    )
    judge = LLMJudge(
        ModelSpec.from_config({"name": "j", "model": "openai/j"}), CallOptions(cache_path="x")
    )
    judge_responses(
        scenarios, responses, judge, "j", model="smollm2", condition="naive", origin="test"
    )
    order = [judged_scenario({"messages": r.messages}, scenarios) for r in sent]
    assert order == sorted(order) and len(order) == 9  # grouped by scenario, in scenario order


def test_the_judged_message_is_the_only_part_of_a_judge_prompt_that_varies(
    bundled: pl.DataFrame,
) -> None:
    """Appendix C: everything before the judged message is shared by all responses to a
    scenario, and what follows it is the same fixed closing for every call."""
    scenario = scenarios_from_table(bundled)[0]
    one, two = (
        judge_messages(JudgeCase.for_response(scenario, text))
        for text in ("Yes.", "Sure, done at six.")
    )
    assert one[0] == two[0]  # our instructions, the system message
    a, b = one[1]["content"], two[1]["content"]
    begin = a.index("<<<BEGIN JUDGED MESSAGE ")
    assert a[:begin] == b[:begin] and a[begin] == b[begin]
    assert scenario.elicitor_content in a[:begin]  # the scenario all sits before the message
    tail_a = a[a.index("<<<END JUDGED MESSAGE ") :].split("\n", 1)[1]
    tail_b = b[b.index("<<<END JUDGED MESSAGE ") :].split("\n", 1)[1]
    assert tail_a == tail_b and tail_a.startswith("\nJudge ONLY whether")
    other = scenarios_from_table(bundled)[1]
    elsewhere = judge_messages(JudgeCase.for_response(other, "Yes."))[1]["content"]
    assert elsewhere.endswith(tail_a)  # the closing is the same for every scenario


# --- Anthropic: explicit markers ------------------------------------------------------------


def test_anthropic_calls_carry_cache_control_markers_and_the_bill_counts_writes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    subject = [Request(user(f"{p} {LONG}"), trial=t) for p in ("a", "b") for t in range(3)]
    judge = [Request(judged(LONG, f"scenario {i}", "yes")) for i in range(3)]
    cache = tmp_path / "c.sqlite"
    with OpenAIServer() as server:
        node = {
            "name": "claude",
            "model": "anthropic/claude-opus-4-8",
            "api_key_env": "ANTHROPIC_API_KEY",
            "api_base": server.url,
            "concurrency": 4,
            "timeout_s": 5,
        }
        spec = ModelSpec.from_config(node)
        log = tmp_path / "log.json"
        done = complete(spec, subject + judge, CallOptions(cache_path=cache, run_log=log))
        assert len(server.requests) == 9
        for body in server.requests:
            marked = [
                block
                for part in (body.get("system") or [], *(m["content"] for m in body["messages"]))
                for block in (part if isinstance(part, list) else [])
                if "cache_control" in block
            ]
            assert len(marked) == 1 and marked[0]["cache_control"] == {"type": "ephemeral"}
            assert LONG in marked[0]["text"]  # the shared part, never the part that varies
        facts = json.loads(log.read_text())["prompt_cache"]
        assert facts["rule"] == "Anthropic: cache_control markers, prefixes of 1024 tokens or more"
        # Each prompt's first trial and the first judge call write; the six others read.
        assert facts["calls_with_cache_hits"] == 6
        assert facts["cache_write_tokens_this_run"] > 0 and facts["cache_read_tokens_this_run"] > 0
        billed = sum(c.billed_usd or 0 for c in done)
        assert billed < sum(c.cost_usd for c in done)
        assert done[0].billed_usd is not None and done[0].billed_usd > done[0].cost_usd  # a write

        # Off: the same calls are in the cache under the same keys; sent again, unmarked.
        off = ModelSpec.from_config(node | {"prompt_caching": False})
        again = complete(off, subject + judge, CallOptions(cache_path=cache))
        assert len(server.requests) == 9 and [c.text for c in again] == [c.text for c in done]
        complete(off, subject + judge, CallOptions(cache_path=cache, use_cache=False))
        assert len(server.requests) == 18
        assert "cache_control" not in json.dumps(server.requests[9:])
