"""OpenAI's chat completions endpoint, with injected faults and OpenAI's prompt caching."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass, field

from aiohttp import web

from losona.models.prompt_caching import content_words
from losona.testing.openai_server.faults import fault_for, inject
from losona.testing.openai_server.replies import Body, words
from losona.testing.openai_server.state import ServerState


@dataclass(kw_only=True, eq=False, repr=False)
class ChatCompletions(ServerState):
    """`POST /v1/chat/completions`: a reply after `latency`, or a fault the plan chose."""

    in_flight: int = field(init=False, default=0)
    max_in_flight: int = field(init=False, default=0)  # the most ever handled at once
    # Per request, in arrival order, itself included.
    in_flight_at_arrival: list[int] = field(init=False, default_factory=list)
    _seen: Counter[str] = field(init=False, default_factory=Counter)  # for the fault plan

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.in_flight_at_arrival.append(self.in_flight)
        try:
            return await self._answer(request)
        finally:
            self.in_flight -= 1

    async def _answer(self, request: web.Request) -> web.StreamResponse:
        body: Body = await request.json()
        self.log_request(body)
        fault = fault_for(self.faults, self._seen, body)
        if self.latency:
            await asyncio.sleep(self.latency)
        if fault is not None:
            self.faults_injected[fault.kind] += 1
            injected = await inject(request, fault, self.hang_s)
            if injected is not None:
                return injected
            return web.json_response(self._completion(body, ""))  # an "empty" fault
        text = self.reply(body)
        self.log_answer(body)
        return web.json_response(self._completion(body, text))

    def _completion(self, body: Body, text: str) -> Body:
        """A chat completion of `text`, its usage counted and its cached tokens reported."""
        prompt = tuple(content_words(body.get("messages", [])))
        prompt_tokens = len(prompt)
        cached = self.prompt_cache.cached(prompt)
        self.prompt_cache.add(prompt)
        self.cached_tokens.append(cached)
        message = {"role": "assistant", "content": text}
        return {
            "id": f"chatcmpl-{self.request_count}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "test"),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": words(text),
                "total_tokens": prompt_tokens + words(text),
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }
