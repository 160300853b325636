"""The one retry policy, for model calls and Batch API requests (docs/sampling.md, "Retries").

Not litellm's retries (turned off): they retry every error with Retry-After unread, and
their waits cannot free a concurrency slot, record the fault, or budget rate limits apart.
"""

from __future__ import annotations

import email.utils
import random
from dataclasses import dataclass
from datetime import UTC, datetime

from losona.core.config import ModelSpec
from losona.models import litellm_api

# Never wait longer than this between attempts, whatever a Retry-After says.
MAX_WAIT_S = 120.0
# Statuses worth another attempt: timeouts, conflicts, rate limits, server trouble.
RETRY_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})
# Statuses that will fail every call of the run the same way: bad key, no such model.
FATAL_STATUSES = frozenset({401, 402, 403, 404})
RATE_LIMITED = 429


def status_of(exc: BaseException) -> int | None:
    """The HTTP status a litellm API error carries, if any."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def transient(exc: BaseException) -> bool:
    """Whether a litellm API error is worth another attempt: no connection, a timeout, or a
    status in RETRY_STATUSES."""
    openai = litellm_api.litellm_module().exceptions.openai
    return isinstance(exc, openai.APIConnectionError) or status_of(exc) in RETRY_STATUSES


def retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked us to wait (Retry-After, in seconds or as a date, or
    retry-after-ms), if it did in a form that can be read."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        return None
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # neither seconds nor a date: the backoff decides
    # An HTTP date is in UTC; one zoned "-0000", or not zoned at all, is parsed as naive.
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


@dataclass(frozen=True)
class RetryPolicy:
    """How often a request is sent, and how long to wait between two sends."""

    backoff_s: float  # the first wait; each later one doubles it
    max_attempts: int  # sends in all, the first included (rate limits aside, in send.py)

    @classmethod
    def of(cls, spec: ModelSpec) -> RetryPolicy:
        """The policy a model config sets (`backoff_s`, `max_attempts`)."""
        return cls(backoff_s=spec.backoff_s, max_attempts=spec.max_attempts)

    def wait(self, attempt: int, asked: float | None = None) -> float:
        """Seconds to wait after the `attempt`-th failed send: the server's ask, or backoff."""
        if asked is not None:
            return min(MAX_WAIT_S, asked)
        delay = min(MAX_WAIT_S, self.backoff_s * 2.0 ** (attempt - 1))
        # Equal jitter (half to all of the delay): calls that failed together spread out.
        return delay / 2 + random.uniform(0, delay / 2)

    def gives_up(self, attempt: int) -> bool:
        """Whether `attempt` sends are all this policy allows."""
        return attempt >= self.max_attempts

    @staticmethod
    def fatal(status: int | None) -> bool:
        """Whether a status will fail every other call of the run the same way."""
        return status in FATAL_STATUSES

    @staticmethod
    def worth_retrying(status: int | None) -> bool:
        """Whether a failure with this status (None: it carries none) is worth another try."""
        return status is None or status in RETRY_STATUSES
