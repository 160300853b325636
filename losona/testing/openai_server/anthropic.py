"""Anthropic's Messages endpoint, with its prompt caching: only up to cache_control marks."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from losona.testing.openai_server.replies import Body, words
from losona.testing.openai_server.state import ServerState


class AnthropicMessages(ServerState):
    """`POST /v1/messages`: the reply hook's answer, billed as Anthropic bills it."""

    async def _handle_anthropic(self, request: web.Request) -> web.StreamResponse:
        body: Body = await request.json()
        self.log_request(body)
        blocks = _anthropic_blocks(body)
        tokens, read, write = self.prompt_cache.marked(blocks)
        if self.latency:
            await asyncio.sleep(self.latency)
        self.prompt_cache.add_marked(blocks)
        text = self.reply({"messages": body.get("messages"), "seed": None})
        self.log_answer(body)
        return web.json_response(
            {
                "id": f"msg_{self.request_count}",
                "type": "message",
                "role": "assistant",
                "model": body.get("model", "test"),
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": tokens - read - write,
                    "output_tokens": words(text),
                    "cache_read_input_tokens": read,
                    "cache_creation_input_tokens": write,
                },
            }
        )


def _anthropic_blocks(body: Body) -> list[tuple[str, bool]]:
    """The text blocks of an Anthropic request in prompt order, each with its cache mark."""
    found: list[tuple[str, bool]] = []

    def add(content: Any, marked: bool) -> None:
        if isinstance(content, str):
            found.append((content, marked))
        elif isinstance(content, list):
            for i, block in enumerate(content):
                if isinstance(block, dict) and isinstance(block.get("text"), str):
                    last = i == len(content) - 1
                    found.append((block["text"], "cache_control" in block or (marked and last)))

    add(body.get("system"), False)
    for message in body.get("messages", []):
        add(message.get("content"), "cache_control" in message)
    return found
