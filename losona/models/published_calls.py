"""A run's published calls: a Parquet table of its calls, read as a cache layer, never written.

Unlike the call cache (SQLite, one user's, not byte-stable), it travels with the run through
DVC and answers that run's calls ahead of the user's own cache.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from losona.core.contracts import CALL_SCHEMA
from losona.core.errors import LosonaError
from losona.core.files import display_path
from losona.models.values import ANSWER, Completion


def read_calls(path: str | Path, remedy: str) -> pl.DataFrame:
    """A calls table from disk, refusing an unreadable file, another shape or a repeated key."""
    where = display_path(path)
    try:
        calls = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise LosonaError(f"{where}: cannot be read as a calls table ({exc}); {remedy}") from None
    if calls.schema != CALL_SCHEMA:
        raise LosonaError(
            f"{where}: expected the columns {dict(CALL_SCHEMA)}, found {dict(calls.schema)}; "
            f"{remedy}"
        )
    bad = calls.filter(pl.col("key").is_null() | pl.col("text").is_null())
    if not bad.is_empty():
        field = "key" if bad["key"][0] is None else "text"
        raise LosonaError(f"{where}: a row has no '{field}'; {remedy}")
    repeated = calls.filter(pl.col("key").is_duplicated())
    if not repeated.is_empty():
        raise LosonaError(f"{where}: key '{repeated['key'][0]}' appears twice; {remedy}")
    return calls


def md5_file(path: str | Path) -> str:
    """Hex MD5 of a file's bytes: the hash DVC records for a file output in dvc.lock."""
    with Path(path).open("rb") as stream:
        return hashlib.file_digest(stream, lambda: hashlib.md5(usedforsecurity=False)).hexdigest()


class PublishedCalls:
    """A run's published calls file, read on first use. Recorded in dvc.lock (`recorded_md5`)
    but absent or changed, it stops the run: a model call in its place would change the run.
    """

    def __init__(self, path: str | Path, recorded_md5: str | None, remedy: str) -> None:
        self.path = Path(path)
        self.recorded_md5 = recorded_md5
        self.remedy = remedy
        self._calls: pl.DataFrame | None = None

    def _load(self) -> pl.DataFrame:
        where = display_path(self.path)
        if not self.path.is_file():
            if self.recorded_md5 is None:
                return pl.DataFrame(schema=CALL_SCHEMA)
            raise LosonaError(
                f"{where}: the run's calls file is missing, though dvc.lock records it "
                f"(md5 {self.recorded_md5}); no model is called in its place. {self.remedy}"
            )
        if self.recorded_md5 is not None and md5_file(self.path) != self.recorded_md5:
            raise LosonaError(
                f"{where}: the run's calls file is not the one dvc.lock records (md5 "
                f"{self.recorded_md5}, found {md5_file(self.path)}): it was changed or damaged; "
                f"no model is called in its place. {self.remedy}"
            )
        # Kept as a sorted table looked up by key: as Python objects, a run's calls (every
        # cell's) would take many times the file's size.
        return read_calls(self.path, self.remedy).sort("key")

    def table(self) -> pl.DataFrame:
        """Every published call, sorted by key: the file is read once, on first use."""
        if self._calls is None:
            self._calls = self._load()
        return self._calls

    def get_many(self, keys: Sequence[str]) -> dict[str, tuple[str, Completion]]:
        """The published (model, completion) among these keys; the file is read on first use."""
        if not keys:
            return {}
        calls = self.table()
        if calls.is_empty():
            return {}
        wanted = pl.Series(list(dict.fromkeys(keys)), dtype=pl.String)
        # Where each key is or would be in the sorted keys: a key there is published.
        nearest = calls[calls["key"].search_sorted(wanted).clip(upper_bound=calls.height - 1)]
        found = nearest.filter(nearest["key"] == wanted)
        return {
            key: (model, Completion.stored(answer, published=True))
            for key, model, *answer in found.select("key", "model", *ANSWER).iter_rows()
        }

    @property
    def expected(self) -> bool:
        """Whether the run has published calls (the file is there, or dvc.lock records it)."""
        return self.recorded_md5 is not None or self.path.is_file()
