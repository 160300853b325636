"""The one retry policy of model calls and Batch API requests (losona/models/retry.py)."""

from __future__ import annotations

import pytest

from losona.models.batch import LineFailure
from losona.models.retry import MAX_WAIT_S, RetryPolicy
from losona.models.values import Completion


def test_the_wait_doubles_with_equal_jitter_and_is_capped() -> None:
    policy = RetryPolicy(backoff_s=1.0, max_attempts=5)
    for attempt, delay in ((1, 1.0), (2, 2.0), (3, 4.0)):
        waits = {policy.wait(attempt) for _ in range(200)}
        assert all(delay / 2 <= w <= delay for w in waits)
        assert len(waits) > 1  # jittered: calls that failed together do not retry together
    assert all(MAX_WAIT_S / 2 <= policy.wait(30) <= MAX_WAIT_S for _ in range(50))


def test_a_servers_retry_after_is_honoured_up_to_the_cap() -> None:
    policy = RetryPolicy(backoff_s=1.0, max_attempts=5)
    assert policy.wait(1, asked=7.5) == 7.5
    assert policy.wait(1, asked=10_000) == MAX_WAIT_S


def test_attempts_are_counted_with_the_first() -> None:
    policy = RetryPolicy(backoff_s=0.1, max_attempts=3)
    assert [policy.gives_up(n) for n in (1, 2, 3)] == [False, False, True]


@pytest.mark.parametrize(
    ("status", "retry", "fatal"),
    [
        (None, True, False),
        (429, True, False),
        (503, True, False),
        (400, False, False),
        (401, False, True),
        (404, False, True),
    ],
)
def test_statuses_are_judged_as_numbers(status: int | None, retry: bool, fatal: bool) -> None:
    assert RetryPolicy.worth_retrying(status) is retry
    assert RetryPolicy.fatal(status) is fatal


def test_a_failed_batch_line_keeps_its_status_as_a_number() -> None:
    refused = LineFailure(Completion.failed("batch line error (400): bad request", 1), 400)
    busy = LineFailure(Completion.failed("batch line error (503): busy", 1), 503)
    lost = LineFailure(Completion.failed("no result in batch b1 (expired)", 1))
    assert (refused.retryable, busy.retryable, lost.retryable) == (False, True, True)
