"""Token counting for cost estimates: offline, never waiting on the network.

The machine the tests run on has no network, so a tokenizer lookup that tried the
Hugging Face Hub would hang here (minutes of huggingface_hub retries), and the timeouts
below would fail the test.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import REPO

from losona.core.files import write_parquet
from losona.models.litellm_api import litellm_module as _litellm
from losona.models.tokens import DEFAULT_ENCODING, select_tokenizer
from losona.prompts.render import render_prompts
from losona.scenarios.datasets import fetch_scenarios

MODEL_CONFIGS = sorted(p.stem for p in (REPO / "conf" / "model").glob("*.yaml"))
MESSAGES = [{"role": "user", "content": "Noor, did the nightly load finish? " * 20}]


def test_a_llama_model_falls_back_to_the_bundled_default_and_says_what_it_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))  # an empty Hugging Face cache
    chosen = select_tokenizer(_litellm(), "deepinfra/meta-llama/Llama-3.3-70B-Instruct")
    assert DEFAULT_ENCODING in chosen.name and chosen.skipped == "Xenova/llama-3-tokenizer"
    assert "skipped" in chosen.describe() and "Hugging Face Hub" in chosen.describe()
    assert 150 < chosen.count(_litellm(), "deepinfra/x", MESSAGES) < 250


def test_models_litellm_has_a_bundled_tokenizer_for_use_it() -> None:
    claude = select_tokenizer(_litellm(), "anthropic/claude-opus-4-8")
    gpt = select_tokenizer(_litellm(), "openai/gpt-5.5")
    assert claude.name.startswith("litellm's Anthropic tokenizer") and claude.skipped is None
    assert gpt.name == "tiktoken o200k_base (bundled with litellm)" and gpt.skipped is None
    assert claude.count(_litellm(), "anthropic/claude-opus-4-8", MESSAGES) > 150


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch repo root with the bundled set rendered under one condition."""
    root = tmp_path_factory.mktemp("dry")
    (root / "conf").symlink_to(REPO / "conf")
    (root / "params.yaml").write_text((REPO / "params.yaml").read_text())
    table = render_prompts(fetch_scenarios({"name": "bundled", "kind": "bundled"}), ["naive"])
    write_parquet(table, root / "data" / "prompts.parquet")
    return root


@pytest.mark.slow  # one process, most of it importing litellm
def test_every_model_config_dry_runs_offline_within_seconds(rendered: Path) -> None:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("HF_HUB_OFFLINE", None)  # the stage itself must not need it
    env.pop("TIKTOKEN_CACHE_DIR", None)
    # Every config in one sweep's dry run: each cell is planned by plan_sampling, as with
    # model=<name>, and the litellm import is paid once rather than once per config.
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "stages" / "sample.py"),
            f"sweep.models=[{','.join(MODEL_CONFIGS)}]",
            "sweep.conditions=[naive]",
            "sampling.dry_run=true",
            f"paths.call_cache={rendered / 'calls.sqlite'}",
        ],
        cwd=rendered,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,  # a Hub download attempt would still be retrying
        check=False,
    )
    assert result.returncode == 0, result.stderr
    prompts = pl.read_parquet(rendered / "data" / "prompts.parquet").height
    cells = dict(
        re.findall(
            r"^sample \(dry run, no calls made\): naive, (\w+): (.*\n.*)$", result.stdout, re.M
        )
    )
    assert sorted(cells) == MODEL_CONFIGS, result.stdout
    for model, plan in cells.items():
        assert plan.startswith(f"{prompts * 3} calls"), f"{model}: {plan}"
        counted = r"prompt tokens counted with (tiktoken \w+|litellm's Anthropic)"
        assert re.search(counted, plan), f"{model}: {plan}"
        # The three prices, each with where its figures come from.
        assert re.search(r"\n  list \$[\d.]+, with prompt caching \$[\d.]+", plan), (
            f"{model}: {plan}"
        )
        assert "with caching and batch $" in plan and "; batch: " in plan, f"{model}: {plan}"
