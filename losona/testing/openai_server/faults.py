"""Faults the test server injects instead of answering, on a deterministic schedule: a plan
sees each body and how often it came before, never the order of concurrent requests."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, get_args

from aiohttp import web

from losona.testing.openai_server.replies import Body, body_digest, hash_number

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
# The error answer of each fault that gets one: its HTTP status and message.
ERRORS: dict[str, tuple[int, str]] = {
    "rate_limit": (429, "rate limited"),
    "server_error": (500, "internal error"),
    "unavailable": (503, "overloaded"),
    "hang": (504, "hung"),
    "bad_request": (400, "invalid request"),
    "unauthorized": (401, "invalid api key"),
}
# The HTTP status written into a batch's error file for a line that fails with a fault.
FAULT_STATUS = {kind: ERRORS.get(kind, (500, ""))[0] for kind in get_args(FaultKind)}


@dataclass(frozen=True)
class Fault:
    """What to do instead of answering one request."""

    kind: FaultKind
    retry_after: float | str = 1.0  # seconds, or the header's text, sent as Retry-After


FaultPlan = Callable[[Body, int], Fault | None]  # (body, times seen before) -> fault or None


def fault_for(plan: FaultPlan | None, seen: Counter[str], body: Body) -> Fault | None:
    """The fault a plan chooses for a body (None: answer it), counting the body as seen."""
    if plan is None:
        return None
    digest = body_digest(body)
    fault = plan(body, seen[digest])
    seen[digest] += 1
    return fault


def fail_first(
    times: int, kind: FaultKind, *, every: int = 1, retry_after: float | str = 1.0
) -> FaultPlan:
    """The first `times` attempts of one distinct request in `every` fail with `kind`."""

    def plan(body: Body, seen: int) -> Fault | None:
        chosen = int(body_digest(body)[:8], 16) % every == 0
        return Fault(kind, retry_after) if chosen and seen < times else None

    return plan


def rate_limited(share: float, *, retry_after: float = 1.0) -> FaultPlan:
    """About `share` of all sends, retries included, answered with 429 and Retry-After, each
    drawn on its own, as an overdrawn quota would answer."""

    def plan(body: Body, seen: int) -> Fault | None:
        draw = hash_number(f"{body_digest(body)}:{seen}")
        return Fault("rate_limit", retry_after) if draw < share * 16**8 else None

    return plan


async def inject(request: web.Request, fault: Fault, hang_s: float) -> web.StreamResponse | None:
    """The answer a fault gives instead of a completion; None for "empty" (a completion
    whose content is empty, which the caller builds)."""
    if fault.kind == "drop":
        assert request.transport is not None
        request.transport.abort()
        return web.Response()  # never reaches the client: the connection is gone
    if fault.kind == "malformed":
        return web.Response(text='{"choices": [', content_type="application/json")
    if fault.kind == "hang":
        await asyncio.sleep(hang_s)
    if fault.kind not in ERRORS:
        return None
    after = fault.retry_after
    header = after if isinstance(after, str) else f"{after:g}"
    retry = {"Retry-After": header} if fault.kind == "rate_limit" else None
    return error(*ERRORS[fault.kind], retry)


def error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    """An error answer in OpenAI's shape."""
    payload = {"error": {"message": message, "type": "test_fault", "code": status}}
    return web.json_response(payload, status=status, headers=headers)
