"""The test server: the endpoints of chat.py, anthropic.py and batches.py on 127.0.0.1, in a
background thread with its own event loop, for as long as its `with` block lasts."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from losona.testing.openai_server.anthropic import AnthropicMessages
from losona.testing.openai_server.batches import BatchJobs


@dataclass(kw_only=True, eq=False, repr=False)
class OpenAIServer(AnthropicMessages, BatchJobs):
    """An OpenAI-compatible chat server on 127.0.0.1 for the duration of a `with` block."""

    port: int = 0  # 0: any free port; the port taken once started
    _loop: asyncio.AbstractEventLoop = field(init=False, default_factory=asyncio.new_event_loop)
    _thread: threading.Thread = field(init=False)
    _runner: web.AppRunner | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        """The api_base to give a client, e.g. http://127.0.0.1:40123/v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    def model_config(self, name: str = "local", **settings: Any) -> dict[str, Any]:
        """A model config node served by this server: seeded per trial, free, with short
        retry delays and timeouts, and marked a test double so that reports say so."""
        return {
            "name": name,
            "family": "test double",
            "model": "openai/test-model",
            "api_base": self.url,
            "seed_per_trial": True,
            "concurrency": 4,
            "timeout_s": 2.0,
            "backoff_s": 0.01,
            "price": {"input_usd_per_mtok": 0, "output_usd_per_mtok": 0},
            "test_double": True,
        } | settings

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        except OSError:
            # A port already taken: stop the loop, so that the caller may say so and exit.
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._handle)
        app.router.add_post("/chat/completions", self._handle)
        app.router.add_post("/v1/messages", self._handle_anthropic)
        app.router.add_post("/v1/v1/messages", self._handle_anthropic)
        if self.batch_api:
            self._add_batch_routes(app)
        # Hanging handlers are cancelled promptly when the server stops.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def _stop(self) -> None:
        assert self._runner is not None
        await self._runner.cleanup()
        # Handlers still hanging on closed connections would outlive the loop otherwise.
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def forget_prompts(self) -> None:
        """Empty the prompt cache, as a provider's does after some minutes."""
        self.prompt_cache.forget()
