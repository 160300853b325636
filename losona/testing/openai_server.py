"""A local OpenAI-compatible chat-completions server for tests and benchmarks.

It listens on 127.0.0.1 on an ephemeral port, in a background thread with its own event
loop, for as long as its `with` block lasts. It answers `POST /v1/chat/completions` with a
deterministic reply (or whatever a `reply` hook returns), after an injectable latency, and
injects faults on a deterministic schedule: a fault plan sees each request body and how
many times that exact body arrived before, so a run's faults do not depend on the order in
which concurrent requests arrive. Every body received is logged, and so is every body that
got a good answer, so tests can prove that no completed call is ever sent twice.

It also serves OpenAI's Batch API as litellm's OpenAI provider calls it: `POST /v1/files`
(upload a JSONL file of requests), `POST /v1/batches` (create), `GET /v1/batches/{id}`
(retrieve), `GET /v1/batches` (list) and `GET /v1/files/{id}/content`. A batch completes
`batch_delay` seconds after it was created (its request counts grow with the time that
passed, so a client's progress shows); each line is answered with the reply logic of the
chat endpoint, and `batch_faults` (a fault plan, as for single calls) makes some lines fail
into the batch's error file, while `batch_fate` can end a whole batch as failed or expired.
`batches_created` counts the creations, so tests can prove a batch is never submitted twice.

    with OpenAIServer(latency=0.05, faults=fail_first(2, "rate_limit", every=3)) as server:
        ...  # point a model config's api_base at server.url
        assert server.request_count == ...

Prompt caching as OpenAI bills it: the server keeps the answered prompts (the latest
`remember`, 10,000 by default, as a provider's cache forgets) and reports
`usage.prompt_tokens_details.cached_tokens`, the longest prefix a prompt shares with an
earlier answered one, counted in the server's tokens (the words of the messages' text,
losona.models.prompt_caching.content_words) and cut as OpenAI cuts it: nothing below 1,024
tokens, then 128-token steps (`cache_min_tokens`, `cache_step`). A prompt is cached once
it has been answered, so prompts sent side by side miss, as they do at OpenAI. It also
answers Anthropic's `POST /v1/messages`, caching only up to `cache_control` markers and
reporting `cache_read_input_tokens` and `cache_creation_input_tokens` as Anthropic does,
so that an `anthropic/...` model config pointed at it runs offline.

`python -m losona.testing.openai_server --latency 0.2` serves the default replies until
SIGINT or SIGTERM (or `--lifetime` seconds), in its own process (the throughput benchmark
uses it that way so that the server does not compete with the client for the
interpreter). With `--judge` it answers
judge prompts with plausible scripted verdicts (losona/testing/scripted_judge.py), so a
judge config pointing at `--port` runs the whole pipeline with an "LLM" judge, offline.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import collections
import hashlib
import json
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from aiohttp import web

from losona.models.prompt_caching import CacheRule, common_prefix, content_words

FaultKind = Literal[
    "rate_limit",  # 429 with a Retry-After header
    "server_error",  # 500
    "unavailable",  # 503
    "drop",  # the connection is closed without an answer
    "hang",  # no answer until long after any sensible client timeout
    "malformed",  # 200 with a body that is not JSON
    "empty",  # 200 with a well-formed completion whose content is empty
    "bad_request",  # 400: the request itself is wrong (not worth retrying)
    "unauthorized",  # 401: the key is refused (every call would fail the same way)
]
# How many answered prompts the server remembers for prompt caching, the latest ones.
REMEMBERED_PROMPTS = 10_000
# The transient faults a client must survive by retrying.
TRANSIENT_FAULTS: tuple[FaultKind, ...] = (
    "rate_limit",
    "server_error",
    "unavailable",
    "drop",
    "hang",
    "malformed",
    "empty",
)


@dataclass(frozen=True)
class Fault:
    """What to do instead of answering one request."""

    kind: FaultKind
    retry_after: float = 1.0  # seconds, sent as Retry-After with a rate_limit


Body = dict[str, Any]
Reply = Callable[[Body], str]
FaultPlan = Callable[[Body, int], Fault | None]  # (body, times seen before) -> fault or None


def body_digest(body: Body) -> str:
    """A stable hash of a request body: the identity of one call, retries included."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def default_reply(body: Body) -> str:
    """A deterministic reply that differs between prompts and between seeds (trials)."""
    digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode())
    return f"Reply {digest.hexdigest()[:12]} for seed {body.get('seed')}."


def fail_first(
    times: int, kind: FaultKind, *, every: int = 1, retry_after: float = 1.0
) -> FaultPlan:
    """The first `times` attempts of one distinct request in `every` fail with `kind`."""

    def plan(body: Body, seen: int) -> Fault | None:
        chosen = int(body_digest(body)[:8], 16) % every == 0
        return Fault(kind, retry_after) if chosen and seen < times else None

    return plan


def rate_limited(share: float, *, retry_after: float = 1.0) -> FaultPlan:
    """About `share` of all sends, retries included, answered with 429 and Retry-After.

    Each send is drawn independently (from the body and how often it came before), as a
    quota that is overdrawn all the time would answer: a call can be refused many times.
    """

    def plan(body: Body, seen: int) -> Fault | None:
        draw = int(hashlib.sha256(f"{body_digest(body)}:{seen}".encode()).hexdigest()[:8], 16)
        return Fault("rate_limit", retry_after) if draw < share * 16**8 else None

    return plan


# What a whole batch can end as instead of "completed" (OpenAI's terminal statuses).
BatchFate = Literal["completed", "failed", "expired", "cancelled"]
# The HTTP status written into a batch's error file for a line that fails with a fault.
FAULT_STATUS: dict[str, int] = {
    "rate_limit": 429,
    "server_error": 500,
    "unavailable": 503,
    "drop": 500,
    "hang": 504,
    "malformed": 500,
    "empty": 500,
    "bad_request": 400,
    "unauthorized": 401,
}


@dataclass
class _Batch:
    """One batch job as the server keeps it."""

    id: str
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None
    lines: list[Body]  # the input file's request lines, in order
    created_at: float
    fate: BatchFate
    status: str = "in_progress"
    output_file_id: str | None = None
    error_file_id: str | None = None
    completed: int = 0
    failed: int = 0


def _words(text: Any) -> int:
    return len(text.split()) if isinstance(text, str) else 0


class OpenAIServer:
    """An OpenAI-compatible chat server on 127.0.0.1 for the duration of a `with` block."""

    def __init__(
        self,
        *,
        latency: float = 0.0,
        reply: Reply = default_reply,
        faults: FaultPlan | None = None,
        hang_s: float = 30.0,
        keep_bodies: bool = True,
        port: int = 0,  # 0: any free port
        batch_delay: float = 0.0,  # seconds from a batch's creation to its completion
        batch_faults: FaultPlan | None = None,  # (line body, times seen before) -> fault
        batch_fate: Callable[[int], BatchFate] | None = None,  # nth batch created (1, 2...)
        cache_min_tokens: int = 1024,  # OpenAI's minimum cached prefix
        cache_step: int = 128,  # ... and its steps past that
        remember: int = REMEMBERED_PROMPTS,  # answered prompts kept for prompt caching
        batch_api: bool = True,  # False: no /files or /batches (404), as most servers of one's own
    ) -> None:
        self.batch_api = batch_api
        self.latency = latency
        self.cache_rule = CacheRule("the test server", False, cache_min_tokens, cache_step)
        self.remember = remember
        self._prompts: list[tuple[str, ...]] = []  # the remembered prompts' words, sorted
        self._answered_order: collections.deque[tuple[str, ...]] = collections.deque()
        self._marked: set[tuple[str, ...]] = set()  # Anthropic: prefixes written to the cache
        self.cached_tokens: list[int] = []  # reported per chat completion, in answer order
        self.reply = reply
        self.faults = faults
        self.hang_s = hang_s
        self.keep_bodies = keep_bodies
        self.requests: list[Body] = []  # every body received, in arrival order
        self.answered: list[Body] = []  # the bodies that got a good, non-empty answer
        self.request_count = 0
        self.in_flight = 0
        self.max_in_flight = 0  # the most requests ever being handled at once
        self.in_flight_at_arrival: list[int] = []  # per request, in arrival order, itself included
        self.faults_injected: Counter[str] = Counter()
        self._seen: Counter[str] = Counter()
        self.batch_delay = batch_delay
        self.batch_faults = batch_faults
        self.batch_fate = batch_fate
        self.files: dict[str, bytes] = {}  # uploaded and produced files, by id
        self.batches: dict[str, _Batch] = {}  # by id, in creation order
        self.batches_created = 0
        self.batch_retrievals = 0
        self.batch_lines_answered = 0
        self._batch_seen: Counter[str] = Counter()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None
        self.port = port

    @property
    def url(self) -> str:
        """The api_base to give a client, e.g. http://127.0.0.1:40123/v1."""
        return f"http://127.0.0.1:{self.port}/v1"

    def model_config(self, name: str = "local", **settings: Any) -> dict[str, Any]:
        """A model config node (the shape of conf/model/*.yaml) served by this server.

        Seeded per trial, so the default replies of a prompt's K trials differ; free; with
        short retry delays and timeouts, so fault tests run in well under a second; and
        marked a test double (family "test double", `test_double: true`), so that reports
        say its numbers are no model's.
        """
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
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
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
        for prefix in ("/v1", "") if self.batch_api else ():
            app.router.add_post(f"{prefix}/files", self._upload)
            app.router.add_get(f"{prefix}/files/{{file_id}}/content", self._file_content)
            app.router.add_post(f"{prefix}/batches", self._create_batch)
            app.router.add_get(f"{prefix}/batches", self._list_batches)
            app.router.add_get(f"{prefix}/batches/{{batch_id}}", self._retrieve_batch)
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
        self.request_count += 1
        if self.keep_bodies:
            self.requests.append(body)
        fault = None
        if self.faults is not None:
            key = body_digest(body)
            fault = self.faults(body, self._seen[key])
            self._seen[key] += 1
        if self.latency:
            await asyncio.sleep(self.latency)
        if fault is not None:
            self.faults_injected[fault.kind] += 1
            return await self._inject(request, body, fault)
        text = self.reply(body)
        if self.keep_bodies:
            self.answered.append(body)
        return web.json_response(self._completion(body, text))

    def forget_prompts(self) -> None:
        """Empty the prompt cache, as a provider's does after some minutes."""
        self._prompts.clear()
        self._answered_order.clear()
        self._marked.clear()

    def _cached(self, words: tuple[str, ...]) -> int:
        """The tokens of a prompt that an earlier answered prompt shares, cut as OpenAI does."""
        at = bisect.bisect_left(self._prompts, words)
        # The longest prefix shared with a sorted set is shared with a neighbour.
        shared = max(
            (
                common_prefix(words, self._prompts[i])
                for i in (at - 1, at)
                if 0 <= i < len(self._prompts)
            ),
            default=0,
        )
        return self.cache_rule.cached(shared)

    def _remember(self, words: tuple[str, ...]) -> None:
        at = bisect.bisect_left(self._prompts, words)
        if at == len(self._prompts) or self._prompts[at] != words:
            # Each distinct word once in memory: a long run's prompts share their words.
            words = tuple(map(sys.intern, words))
            self._prompts.insert(at, words)
            self._answered_order.append(words)
        if len(self._prompts) > self.remember:
            # As a provider's cache forgets after some minutes: the oldest prompt goes. So
            # a benchmark of a million calls does not keep every prompt it was sent.
            oldest = self._answered_order.popleft()
            del self._prompts[bisect.bisect_left(self._prompts, oldest)]

    async def _handle_anthropic(self, request: web.Request) -> web.StreamResponse:
        """Anthropic's Messages API, with its prompt caching: only up to cache_control marks."""
        body: Body = await request.json()
        self.request_count += 1
        if self.keep_bodies:
            self.requests.append(body)
        blocks = _anthropic_blocks(body)
        words: list[str] = []
        ends: list[tuple[int, bool]] = []  # (words so far, marked) at the end of each block
        for text, marked in blocks:
            words += text.split()
            ends.append((len(words), marked))
        marks = [end for end, marked in ends if marked and end >= self.cache_rule.min_tokens]
        read = max(
            (
                end
                for end, _ in ends
                if end <= max(marks, default=0) and tuple(words[:end]) in self._marked
            ),
            default=0,
        )
        write = max(0, max(marks, default=0) - read)
        if self.latency:
            await asyncio.sleep(self.latency)
        for end in marks:
            self._marked.add(tuple(words[:end]))
        text = self.reply({"messages": body.get("messages"), "seed": None})
        if self.keep_bodies:
            self.answered.append(body)
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
                    "input_tokens": len(words) - read - write,
                    "output_tokens": _words(text),
                    "cache_read_input_tokens": read,
                    "cache_creation_input_tokens": write,
                },
            }
        )

    async def _inject(self, request: web.Request, body: Body, fault: Fault) -> web.StreamResponse:
        if fault.kind == "rate_limit":
            return _error(429, "rate limited", {"Retry-After": f"{fault.retry_after:g}"})
        if fault.kind == "server_error":
            return _error(500, "internal error")
        if fault.kind == "unavailable":
            return _error(503, "overloaded")
        if fault.kind == "drop":
            assert request.transport is not None
            request.transport.abort()
            return web.Response()  # never reaches the client: the connection is gone
        if fault.kind == "hang":
            await asyncio.sleep(self.hang_s)
            return _error(504, "hung")
        if fault.kind == "bad_request":
            return _error(400, "invalid request")
        if fault.kind == "unauthorized":
            return _error(401, "invalid api key")
        if fault.kind == "malformed":
            return web.Response(text='{"choices": [', content_type="application/json")
        return web.json_response(self._completion(body, ""))

    def _completion(self, body: Body, text: str) -> Body:
        words = tuple(content_words(body.get("messages", [])))
        prompt_tokens = len(words)
        cached = self._cached(words)
        self._remember(words)
        self.cached_tokens.append(cached)
        return {
            "id": f"chatcmpl-{self.request_count}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", "test"),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": _words(text),
                "total_tokens": prompt_tokens + _words(text),
                "prompt_tokens_details": {"cached_tokens": cached},
            },
        }

    # --- the Batch API ---------------------------------------------------------------

    async def _upload(self, request: web.Request) -> web.StreamResponse:
        form = await request.post()
        upload, purpose = form.get("file"), form.get("purpose")
        if not isinstance(upload, web.FileField) or purpose != "batch":
            return _error(400, "expected a multipart upload with a file and purpose=batch")
        content = upload.file.read()
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        return web.json_response(_file_object(file_id, len(content), upload.filename, "batch"))

    async def _file_content(self, request: web.Request) -> web.StreamResponse:
        content = self.files.get(request.match_info["file_id"])
        if content is None:
            return _error(404, "no such file")
        return web.Response(body=content, content_type="application/octet-stream")

    async def _create_batch(self, request: web.Request) -> web.StreamResponse:
        body: Body = await request.json()
        content = self.files.get(body.get("input_file_id", ""))
        if content is None:
            return _error(400, "input_file_id names no uploaded file")
        lines = [json.loads(line) for line in content.decode().splitlines() if line.strip()]
        self.batches_created += 1
        batch = _Batch(
            id=f"batch_{self.batches_created}",
            input_file_id=body["input_file_id"],
            endpoint=body.get("endpoint", ""),
            completion_window=body.get("completion_window", "24h"),
            metadata=body.get("metadata"),
            lines=lines,
            created_at=time.time(),
            fate=self.batch_fate(self.batches_created) if self.batch_fate else "completed",
        )
        self.batches[batch.id] = batch
        return web.json_response(self._batch_object(batch))

    async def _retrieve_batch(self, request: web.Request) -> web.StreamResponse:
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None:
            return _error(404, "no such batch")
        self.batch_retrievals += 1
        self._advance(batch)
        return web.json_response(self._batch_object(batch))

    async def _list_batches(self, request: web.Request) -> web.StreamResponse:
        newest_first = list(reversed(self.batches.values()))
        for batch in newest_first:
            self._advance(batch)
        data = [self._batch_object(b) for b in newest_first]
        return web.json_response(
            {"object": "list", "data": data, "first_id": None, "last_id": None, "has_more": False}
        )

    def _advance(self, batch: _Batch) -> None:
        """Bring a batch to where `batch_delay` says it is now; answer its lines when due."""
        if batch.status != "in_progress":
            return
        elapsed = time.time() - batch.created_at
        if elapsed < self.batch_delay:
            # Progress as a provider reports it: part of the lines done, none written yet.
            batch.completed = int(len(batch.lines) * elapsed / self.batch_delay)
            return
        batch.completed = 0
        if batch.fate in ("failed", "cancelled"):
            batch.status = batch.fate
            return
        answers, errors = [], []
        for number, line in enumerate(batch.lines, start=1):
            body = line.get("body", {})
            fault = None
            if self.batch_faults is not None:
                digest = body_digest(body)
                fault = self.batch_faults(body, self._batch_seen[digest])
                self._batch_seen[digest] += 1
            entry: Body = {"id": f"{batch.id}_req_{number}", "custom_id": line.get("custom_id")}
            if fault is not None:
                self.faults_injected[f"batch_{fault.kind}"] += 1
                status = FAULT_STATUS[fault.kind]
                error = {"message": f"injected {fault.kind}", "type": "test_fault", "code": status}
                response = {"status_code": status, "body": {"error": error}}
                errors.append(entry | {"response": response})
                continue
            self.batch_lines_answered += 1
            completion = self._completion(body, self.reply(body))
            answers.append(entry | {"response": {"status_code": 200, "body": completion}})
        if batch.fate == "expired":
            # An expired batch keeps what it finished: here, its first half.
            answers = answers[: len(answers) // 2]
        batch.completed, batch.failed = len(answers), len(errors)
        batch.output_file_id = self._produce(answers)
        batch.error_file_id = self._produce(errors)
        batch.status = batch.fate

    def _produce(self, entries: list[Body]) -> str | None:
        if not entries:
            return None
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = "".join(json.dumps(e) + "\n" for e in entries).encode()
        return file_id

    def _batch_object(self, batch: _Batch) -> Body:
        errors = None
        if batch.status in ("failed", "expired"):
            message = f"injected: the batch {batch.status}"
            errors = {
                "object": "list",
                "data": [{"code": f"batch_{batch.status}", "message": message, "line": None}],
            }
        return {
            "id": batch.id,
            "object": "batch",
            "endpoint": batch.endpoint,
            "errors": errors,
            "input_file_id": batch.input_file_id,
            "completion_window": batch.completion_window,
            "status": batch.status,
            "output_file_id": batch.output_file_id,
            "error_file_id": batch.error_file_id,
            "created_at": int(batch.created_at),
            "request_counts": {
                "total": len(batch.lines),
                "completed": batch.completed,
                "failed": batch.failed,
            },
            "metadata": batch.metadata,
        }


def _file_object(file_id: str, size: int, filename: str, purpose: str) -> Body:
    return {
        "id": file_id,
        "object": "file",
        "bytes": size,
        "created_at": 0,
        "filename": filename,
        "purpose": purpose,
        "status": "processed",
    }


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


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    payload = {"error": {"message": message, "type": "test_fault", "code": status}}
    return web.json_response(payload, status=status, headers=headers)


def main(argv: list[str] | None = None) -> None:
    """Serve default (or scripted judge) replies until stopped; print the URL first.

    It serves until SIGINT (Ctrl-C) or SIGTERM, or until `--lifetime` seconds have passed,
    and never reads standard input, so `&`, `nohup` and CI can run it in the background.
    """
    parser = argparse.ArgumentParser(prog="python -m losona.testing.openai_server")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free)")
    parser.add_argument("--judge", action="store_true", help="answer judge prompts with verdicts")
    parser.add_argument(
        "--disagree", type=float, default=0.1, help="with --judge: share of messages overturned"
    )
    parser.add_argument(
        "--flip-rate", type=float, default=0.0, help="with --judge: share of calls overturned"
    )
    parser.add_argument(
        "--lifetime",
        type=float,
        default=None,
        help="stop after this many seconds (default: serve until SIGINT or SIGTERM)",
    )
    args = parser.parse_args(argv)
    if args.lifetime is not None and args.lifetime <= 0:
        parser.error(f"--lifetime: expected a positive number of seconds, found {args.lifetime}")
    reply = default_reply
    if args.judge:
        from losona.testing.scripted_judge import ScriptedJudge

        reply = ScriptedJudge(disagree=args.disagree, flip_rate=args.flip_rate)
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop.set()

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, request_stop)
    with OpenAIServer(
        latency=args.latency, reply=reply, keep_bodies=False, port=args.port
    ) as server:
        print(server.url, flush=True)
        stop.wait(args.lifetime)
    print("stopped", flush=True)


if __name__ == "__main__":
    main()
