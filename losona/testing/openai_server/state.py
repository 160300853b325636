"""What every endpoint of the test server shares: its settings and its record of requests,
set by `OpenAIServer`'s constructor."""

from __future__ import annotations

from collections import Counter

from losona.testing.openai_server.faults import FaultPlan
from losona.testing.openai_server.prompt_cache import PromptCache
from losona.testing.openai_server.replies import Body, Reply


class ServerState:
    """The settings and the record every endpoint of the server reads and writes."""

    latency: float  # seconds before each answer
    reply: Reply  # what a request is answered with
    faults: FaultPlan | None  # (body, times seen before) -> fault or None
    hang_s: float  # how long a "hang" fault holds its answer
    keep_bodies: bool  # keep every body in `requests` and `answered`
    prompt_cache: PromptCache
    cached_tokens: list[int]  # reported per chat completion, in answer order
    requests: list[Body]  # every body received, in arrival order
    answered: list[Body]  # the bodies that got a good, non-empty answer
    request_count: int
    faults_injected: Counter[str]

    def log_request(self, body: Body) -> None:
        """Count a request that arrived, and keep its body if bodies are kept."""
        self.request_count += 1
        if self.keep_bodies:
            self.requests.append(body)

    def log_answer(self, body: Body) -> None:
        """Keep the body of a request that got a good answer, if bodies are kept."""
        if self.keep_bodies:
            self.answered.append(body)
