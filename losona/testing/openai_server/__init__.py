"""A local OpenAI-compatible server, a test double of a provider for tests and benchmarks.

    with OpenAIServer(latency=0.05, faults=fail_first(2, "rate_limit", every=3)) as server:
        ...  # point a model config's api_base at server.url

Deterministic replies after an injectable latency, faults on a deterministic schedule,
OpenAI's prompt caching, Anthropic's Messages API and OpenAI's Batch API.
"""

import importlib
from typing import TYPE_CHECKING, Any

from losona.testing.openai_server.replies import body_digest, default_reply

if TYPE_CHECKING:
    from losona.testing.openai_server.faults import (
        TRANSIENT_FAULTS,
        Fault,
        fail_first,
        rate_limited,
    )
    from losona.testing.openai_server.server import OpenAIServer

# aiohttp comes only with the `testing` extra: what needs it loads on first use, so that
# the command line can say what to install.
AIOHTTP_MISSING = (
    "the test server needs aiohttp, which a plain install of losona leaves out: "
    "pip install 'losona[testing]'"
)
_ON_AIOHTTP = {
    "OpenAIServer": "server",
    **dict.fromkeys(["TRANSIENT_FAULTS", "Fault", "fail_first", "rate_limited"], "faults"),
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
    "Fault",
    "OpenAIServer",
    "body_digest",
    "default_reply",
    "fail_first",
    "rate_limited",
]
