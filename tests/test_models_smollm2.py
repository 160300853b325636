"""The embedded model answers a real rendered prompt, through the same road as any model."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import CONF_DIR

from losona.datasets import fetch_scenarios
from losona.models import ModelSpec, Request, complete
from losona.render import render_prompts

pytestmark = pytest.mark.slow  # loads the model and reads a ~750-token prompt on the CPU


def test_smollm2_answers_a_rendered_prompt_reproducibly(tmp_path: Path) -> None:
    spec = ModelSpec.from_config(yaml.safe_load((CONF_DIR / "model" / "smollm2.yaml").read_text()))
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"}).head(1)
    messages = render_prompts(scenarios, ["naive"])["messages"][0].to_list()
    request = Request(messages=messages, trial=0)
    (reply,) = complete(spec, [request], cache_path=tmp_path / "calls.sqlite")
    assert reply.ok and not reply.cached and reply.text and reply.text.strip()
    assert 500 < reply.prompt_tokens < spec.params["max_tokens"] + 4096
    assert 0 < reply.completion_tokens <= spec.params["max_tokens"]
    assert reply.cost_usd == 0.0
    # Drawn again, bypassing the cache, the trial's seed gives the same sample.
    (again,) = complete(spec, [request], cache_path=tmp_path / "calls.sqlite", use_cache=False)
    assert not again.cached and again.text == reply.text
