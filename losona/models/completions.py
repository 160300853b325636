"""What a run of `complete` returns, the check that every call completed, the calls table."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import overload

import polars as pl

from losona.core.contracts import CALL_SCHEMA, table
from losona.core.errors import LosonaError
from losona.core.files import CHUNK, Chunks
from losona.models.call_cache import CacheLocation, CallCache, cache_file
from losona.models.values import Completion


class CallFailed(LosonaError):
    """A run stopped early: a refused key, an unknown model, or the cost cap."""


class CallsFailed(LosonaError):
    """Some calls still failed after their retries, so the stage writes nothing."""


def failure_kind(error: str | None) -> str:
    """The kind of a failed call's error: its exception name and status, without details."""
    return (error or "unknown error").split(":")[0]


def require_every_call(
    *rounds: Sequence[Completion], to: str, run_log: str | Path | None = None
) -> None:
    """Raise CallsFailed, saying how many calls `to` whom failed, by kind and why, if any did
    in these rounds (a judge's first calls and its repairs)."""
    failed = [
        c.error
        # A run of `complete` knows its failed calls without reading a reply back.
        for completions in rounds
        for c in (completions.failed() if isinstance(completions, Completions) else completions)
        if not c.ok
    ]
    if not failed:
        return
    kinds = collections.Counter(failure_kind(e) for e in failed)
    by_kind = ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    reasons = "\n".join(
        f"  {n} x {reason}" for reason, n in collections.Counter(failed).most_common(5)
    )
    raise CallsFailed(
        f"{len(failed)} of {sum(map(len, rounds))} calls to {to} failed after their "
        f"retries ({by_kind}); nothing was written. Why:\n{reasons}\nEvery completed call "
        "is in the call cache, so a rerun sends only the failed ones."
        + (f" Details: {run_log}" if run_log else "")
    )


@dataclass(frozen=True, slots=True)
class Receipt:
    """How a call made in this run went; its reply is in the call cache."""

    attempts: int
    billed_usd: float | None
    cost_usd: float


class Completions(Sequence[Completion]):
    """What `complete` returns: each request's completion, in request order.

    Replies are read back from the call cache, CHUNK at a time, so a run's memory does not
    grow with its calls; failed calls, and calls made with the cache bypassed, are kept whole.
    """

    def __init__(
        self,
        location: CacheLocation,
        keys: list[str],
        made: dict[str, Receipt],
        held: dict[str, Completion],
    ) -> None:
        self.location = location  # where the run looked its calls up: read back the same way
        self.keys = keys  # each request's call-cache key
        self._made, self._held = made, held
        self._chunk: tuple[int, list[Completion]] = (-1, [])  # the last chunk read back

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, index: int) -> Completion: ...
    @overload
    def __getitem__(self, index: slice) -> list[Completion]: ...
    def __getitem__(self, index: int | slice) -> Completion | list[Completion]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        index = range(len(self))[index]  # negative indices; IndexError past the end
        start = index - index % CHUNK
        if self._chunk[0] != start:
            self._chunk = (start, self.by_key(self.keys[start : start + CHUNK]))
        return self._chunk[1][index - start]

    def __iter__(self) -> Iterator[Completion]:
        for start in range(0, len(self.keys), CHUNK):
            yield from self.by_key(self.keys[start : start + CHUNK])

    def failed(self) -> list[Completion]:
        """The failed completions, one per request that failed, without reading the cache."""
        return [
            _keyed(self._held[key], key)
            for key in self.keys
            if key in self._held and not self._held[key].ok
        ]

    def completed_keys(self) -> set[str]:
        """The keys of the calls that completed (in the cache, or kept here)."""
        return {key for key in self.keys if key not in self._held or self._held[key].ok}

    def by_key(self, keys: list[str]) -> list[Completion]:
        """The completions of these keys, in order: kept here, or read from the cache (a
        connection of its own each time, so a table can be built on another thread)."""
        wanted = [key for key in keys if key not in self._held]
        if wanted:
            with CallCache(self.location) as cache:
                stored = cache.get_many(wanted)
        read = []
        for key in keys:
            if key in self._held:
                read.append(_keyed(self._held[key], key))
                continue
            if key not in stored:
                raise LosonaError(
                    f"{cache_file(self.location)}: call {key} was completed in this run but "
                    "is no longer in the call cache; was the file moved or replaced? Rerun "
                    "the stage."
                )
            completion = stored[key]
            if (receipt := self._made.get(key)) is not None:
                completion = dataclasses.replace(
                    completion,
                    cached=False,
                    attempts=receipt.attempts,
                    billed_usd=receipt.billed_usd,
                )
            read.append(_keyed(completion, key))
        return read


def _keyed(completion: Completion, key: str) -> Completion:
    return dataclasses.replace(completion, key=key)


def calls_table(model: str, *rounds: Sequence[Completion]) -> Chunks:
    """The calls behind these rounds of completions (completed ones, each key once), sorted
    by key, made a chunk at a time so that a cell never holds every reply at once."""
    round_of: dict[str, int] = {}  # each completed call's key: the first round that has it
    given: dict[str, Completion] = {}  # completions given in a list rather than by `complete`
    for number, completions in enumerate(rounds):
        if isinstance(completions, Completions):
            for key in completions.completed_keys():
                round_of.setdefault(key, number)
            continue
        for completion in completions:
            if completion.ok:  # a failed call was never cached: nothing to publish
                assert completion.key is not None, "completions from `complete` carry their key"
                round_of.setdefault(completion.key, number)
                given.setdefault(completion.key, completion)
    keys = sorted(round_of)

    def chunks() -> Iterator[pl.DataFrame]:
        for start in range(0, len(keys), CHUNK):
            chunk = keys[start : start + CHUNK]
            found = {key: given[key] for key in chunk if key in given}
            for number, completions in enumerate(rounds):
                wanted = [key for key in chunk if key not in found and round_of[key] == number]
                if wanted and isinstance(completions, Completions):
                    found.update(zip(wanted, completions.by_key(wanted), strict=True))
            rows = [(key, model, *found[key].answer) for key in chunk]
            named = [dict(zip(CALL_SCHEMA, row, strict=True)) for row in rows]
            yield table(named, CALL_SCHEMA, sort_by=[])

    return Chunks(CALL_SCHEMA, len(keys), chunks)
