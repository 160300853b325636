"""The call cache: every completed model call, in one SQLite file, the moment it completes.

Shared by every stage and queued experiment (WAL); each call is committed on its own, not
fsynced (a kill loses nothing, a power cut the last calls). A key keeps its first answer,
so files rebuild byte for byte. A run's published calls answer first: what the cache lacks
is copied in, a cached answer that differs is counted and not used.
"""

from __future__ import annotations

import collections
import dataclasses
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from losona.core.errors import LosonaError
from losona.models.published_calls import PublishedCalls
from losona.models.values import ANSWER, Completion

SCHEMA_VERSION = 1
# A second process writing the same cache waits this long for its turn.
BUSY_TIMEOUT_S = 60.0
# SQLite limits the number of parameters per statement.
_CHUNK = 500
# A key keeps its first answer.
_INSERT = "INSERT OR IGNORE INTO calls VALUES (?, ?, ?, ?, ?, ?, ?)"

# The calls this process made and stored, by cache file, for what a stage stopped by Ctrl-C
# says it leaves behind (published calls copied in were never paid for).
_stored_here: collections.Counter[Path] = collections.Counter()


def stored_this_process() -> dict[Path, int]:
    """How many completed calls this process stored, by call cache file."""
    return dict(_stored_here)


@dataclass(frozen=True)
class CallStore:
    """Where calls are looked up: the user's cache file, then a run's published calls."""

    path: str | Path
    published: PublishedCalls | None = None
    # Never call a model (CallNotFound instead): checking a run from its published calls.
    offline: bool = False


class CallNotFound(LosonaError):
    """An offline store lacks calls that a request needs."""

    def __init__(self, missing: int, total: int) -> None:
        super().__init__(
            f"{missing} of {total} calls are in neither the call cache nor the run's published "
            "calls, and no model may be called"
        )
        self.missing = missing


# What every caller of the model layer passes as `cache_path`: a cache file, or a store.
CacheLocation = str | Path | CallStore


def offline(location: CacheLocation) -> bool:
    """Whether calls at this location may only be read: no model is called."""
    return isinstance(location, CallStore) and location.offline


def needs_key(location: CacheLocation) -> bool:
    """Whether a stage must find its model's key before any work. Not offline, nor with
    published calls: a published run reruns without a key, and only a call that must
    really be made asks for it."""
    if not isinstance(location, CallStore):
        return True
    return not (location.offline or (location.published and location.published.expected))


def cache_file(location: CacheLocation) -> Path:
    """The user's call cache file at a location."""
    return Path(location.path if isinstance(location, CallStore) else location)


class CallCache:
    """An open call cache, with the published layer its location names, if any; use as a
    context manager."""

    def __init__(self, location: CacheLocation) -> None:
        self.published = location.published if isinstance(location, CallStore) else None
        # Keys held with another answer than the published calls', which was used instead.
        self.differing: set[str] = set()
        self.path = cache_file(location).expanduser()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LosonaError(
                f"{self.path}: cannot create the call cache's folder ({exc.strerror}); "
                "set paths.call_cache to a file in a folder you can write"
            ) from None
        with self._reporting():
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version == 0:
                self._db.execute(
                    """CREATE TABLE IF NOT EXISTS calls (
                        key TEXT PRIMARY KEY,
                        model TEXT NOT NULL,
                        text TEXT NOT NULL,
                        finish_reason TEXT,
                        prompt_tokens INTEGER NOT NULL,
                        completion_tokens INTEGER NOT NULL,
                        cost_usd REAL NOT NULL
                    ) WITHOUT ROWID"""
                )
                self._db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
            elif version != SCHEMA_VERSION:
                self._db.close()
                raise LosonaError(
                    f"{self.path}: a call cache of format {version}, but this version of "
                    f"losona reads format {SCHEMA_VERSION}; point paths.call_cache at "
                    "another file"
                )

    def __enter__(self) -> CallCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the file; every stored call is already committed."""
        self._db.close()

    @contextmanager
    def _reporting(self) -> Iterator[None]:
        """Turn SQLite's errors (a damaged or foreign file) into a message with the way out."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise LosonaError(
                f"{self.path}: the call cache cannot be used ({exc}). If the file is damaged "
                f"or not a cache, move it aside (mv {self.path} {self.path}.broken) and rerun: "
                "calls it held are then made again. Or set paths.call_cache to another file."
            ) from None

    def get_many(self, keys: Sequence[str]) -> dict[str, Completion]:
        """The completions among these keys: the run's published ones first, then the cache's."""
        unique = list(dict.fromkeys(keys))
        found = self._stored(unique)
        if self.published is None:
            return found
        published = self.published.get_many(unique)
        self._store_many({key: call for key, call in published.items() if key not in found})
        self.differing.update(
            key
            for key, (_, call) in published.items()
            if key in found and found[key].answer != call.answer
        )
        return found | {key: call for key, (_, call) in published.items()}

    def _stored(self, unique: Sequence[str]) -> dict[str, Completion]:
        """The completions the user's cache file holds among these (distinct) keys."""
        found: dict[str, Completion] = {}
        with self._reporting():
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                rows = self._db.execute(
                    f"SELECT key, {', '.join(ANSWER)} "
                    f"FROM calls WHERE key IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
                for key, *answer in rows:
                    found[key] = Completion.stored(answer)
        return found

    def _store_many(self, calls: Mapping[str, tuple[str, Completion]]) -> None:
        """Copy published calls into the cache, in one transaction (existing keys are kept)."""
        if not calls:
            return
        with self._reporting():
            self._db.execute("BEGIN")
            self._db.executemany(
                _INSERT, [(key, model, *c.answer) for key, (model, c) in calls.items()]
            )
            self._db.execute("COMMIT")

    def put(self, key: str, model: str, completion: Completion) -> Completion:
        """Store one completed call now (committed before this returns); return the kept one:
        the earlier answer if another process stored the key first, as every later run will."""
        assert completion.text is not None, "failed calls are not cached"
        with self._reporting():
            inserted = self._db.execute(_INSERT, (key, model, *completion.answer)).rowcount
        if inserted:
            _stored_here[self.path] += 1
            return completion
        kept = self.get_many([key])[key]
        return dataclasses.replace(kept, cached=False, attempts=completion.attempts)

    def __len__(self) -> int:
        with self._reporting():
            return int(self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0])
