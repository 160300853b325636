"""The sweep that tests/test_publish.py publishes and benchmarks/reproduce.py times: one
model and an LLM judge on the test server, beside the lexicon judge, over two conditions."""

from __future__ import annotations

from pathlib import Path

import yaml

from losona.testing.openai_server import OpenAIServer

SWEEP = {
    "models": ["local"],
    "conditions": ["naive", "norm_informed"],
    "judges": ["lexicon", "scripted"],
}


def write_published_sweep(repo: Path, server: OpenAIServer) -> None:
    """In a copy of the repository: params.yaml's sweep, the subject `local` and the judge
    `scripted` on `server`, and no dvc.lock (the copy's run is its own)."""
    (repo / "params.yaml").write_text(yaml.safe_dump({"dataset": "bundled", "sweep": SWEEP}))
    model = server.model_config("local", label="Test server")
    (repo / "conf" / "model" / "local.yaml").write_text(yaml.safe_dump(model))
    judge = {
        "name": "scripted",
        "kind": "llm",
        "model": server.model_config(
            "scripted", model="openai/scripted-judge", seed_per_trial=False, params={}
        ),
    }
    (repo / "conf" / "judge" / "scripted.yaml").write_text(yaml.safe_dump(judge))
    (repo / "dvc.lock").unlink(missing_ok=True)
