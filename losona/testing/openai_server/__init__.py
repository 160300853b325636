"""A local OpenAI-compatible server for tests and benchmarks, a test double of a provider.

    with OpenAIServer(latency=0.05, faults=fail_first(2, "rate_limit", every=3)) as server:
        ...  # point a model config's api_base at server.url
        assert server.request_count == ...

It answers `POST /v1/chat/completions` with a deterministic reply (or whatever a `reply`
hook returns), after an injectable latency, and injects faults on a deterministic
schedule (faults.py). Every body received is logged, and so is every body that got a good
answer, so tests can prove that no completed call is ever sent twice. It reports cached
prompt tokens as OpenAI bills them (prompt_cache.py), also answers Anthropic's Messages
API (anthropic.py), and serves OpenAI's Batch API (batches.py).

`python -m losona.testing.openai_server --latency 0.2` serves the default replies until
SIGINT or SIGTERM (or `--lifetime` seconds), in its own process (the throughput benchmark
uses it that way so that the server does not compete with the client for the
interpreter). With `--judge` it answers judge prompts with plausible scripted verdicts
(losona/testing/scripted_judge.py), so a judge config pointing at `--port` runs the whole
pipeline with an "LLM" judge, offline (__main__.py). With `--group` it answers the group
model's prompts of `dynamic.source=simulated` with `Name: message` lines by cast members
(losona/testing/scripted_group.py); the two combine.
"""

import importlib
from typing import TYPE_CHECKING, Any

from losona.testing.openai_server.replies import Body, Reply, body_digest, default_reply

if TYPE_CHECKING:
    from losona.testing.openai_server.faults import (
        TRANSIENT_FAULTS,
        Fault,
        FaultKind,
        FaultPlan,
        fail_first,
        rate_limited,
    )
    from losona.testing.openai_server.server import OpenAIServer

# The server runs on aiohttp, which only the `testing` extra installs (pyproject.toml): the
# names that need it load on first use, so that the command line can say what to install.
AIOHTTP_MISSING = (
    "the test server needs aiohttp, which a plain install of losona leaves out: "
    "pip install 'losona[testing]'"
)
_ON_AIOHTTP = {
    "OpenAIServer": "server",
    **dict.fromkeys(
        ["TRANSIENT_FAULTS", "Fault", "FaultKind", "FaultPlan", "fail_first", "rate_limited"],
        "faults",
    ),
}


def __getattr__(name: str) -> Any:
    """The server and its faults, imported when first asked for."""
    if name not in _ON_AIOHTTP:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        module = importlib.import_module(f"{__name__}.{_ON_AIOHTTP[name]}")
    except ModuleNotFoundError as missing:
        if missing.name != "aiohttp":
            raise
        raise ModuleNotFoundError(AIOHTTP_MISSING, name="aiohttp") from None
    return getattr(module, name)


__all__ = [
    "TRANSIENT_FAULTS",
    "Body",
    "Fault",
    "FaultKind",
    "FaultPlan",
    "OpenAIServer",
    "Reply",
    "body_digest",
    "default_reply",
    "fail_first",
    "rate_limited",
]
