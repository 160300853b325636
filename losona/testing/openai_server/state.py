"""What every endpoint of the test server shares: its settings and its record of requests."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import ClassVar

from losona.models.prompt_caching import OPENAI, CacheRule
from losona.testing.openai_server.faults import FaultPlan
from losona.testing.openai_server.prompt_cache import PromptCache
from losona.testing.openai_server.replies import Body, Reply, default_reply

# Prompts are cached as OpenAI caches them.
CACHE_RULE = dataclasses.replace(OPENAI, provider="the test server")


@dataclass(kw_only=True, eq=False, repr=False)
class ServerState:
    """The settings and the record every endpoint of the server reads and writes."""

    latency: float = 0.0  # seconds before each answer
    reply: Reply = default_reply  # what a request is answered with
    faults: FaultPlan | None = None  # (body, times seen before) -> fault or None
    hang_s: float = 30.0  # how long a "hang" fault holds its answer
    keep_bodies: bool = True  # keep every body in `requests` and `answered`
    cache_rule: ClassVar[CacheRule] = CACHE_RULE
    prompt_cache: PromptCache = field(init=False, default_factory=lambda: PromptCache(CACHE_RULE))
    cached_tokens: list[int] = field(init=False, default_factory=list)  # per chat completion
    requests: list[Body] = field(init=False, default_factory=list)  # every body, as it arrived
    answered: list[Body] = field(init=False, default_factory=list)  # good, non-empty answers
    request_count: int = field(init=False, default=0)
    faults_injected: Counter[str] = field(init=False, default_factory=Counter)

    def log_request(self, body: Body) -> None:
        """Count a request that arrived, and keep its body if bodies are kept."""
        self.request_count += 1
        if self.keep_bodies:
            self.requests.append(body)

    def log_answer(self, body: Body) -> None:
        """Keep the body of a request that got a good answer, if bodies are kept."""
        if self.keep_bodies:
            self.answered.append(body)
