"""A recomputed value against the one on disk: tables cell by cell, JSON leaf by leaf, text
line by line, each difference named by file, row or key, and field."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from losona.core.files import display_path

# Columns that say which row of a report table a number belongs to (`key`: a calls table's).
ROW_KEYS = (
    "judge", "judge_a", "judge_b", "subject_model", "condition", "by", "group", "check",
    "example", "flip", "level", "metric", "arm", "item_id", "event_type", "norm_id",
    "scenario_id", "trial", "key",
)  # fmt: skip


@dataclass(frozen=True)
class Difference:
    """One value that does not match: where it is, which field, what was expected and found."""

    file: str
    where: str
    field: str
    expected: Any
    found: Any

    def __str__(self) -> str:
        where = f", {self.where}" if self.where else ""
        return f"{self.file}{where}, {self.field}: expected {self.expected!r}, found {self.found!r}"


@dataclass
class Check:
    """The outcome of checking a run: what was compared, what differs, what was not rechecked."""

    files: list[str] = field(default_factory=list)
    values: int = 0
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, file: str | Path, compared: int, differences: Sequence[Difference]) -> None:
        self.files.append(display_path(file))
        self.values += compared
        self.differences.extend(differences)

    @property
    def ok(self) -> bool:
        """Whether every value checked matched."""
        return not self.differences


def same(expected: Any, found: Any) -> bool:
    """Equal, with floats equal to within rounding noise (CSV and JSON round trips)."""
    if isinstance(expected, float) and isinstance(found, float):
        if math.isnan(expected) or math.isnan(found):
            return math.isnan(expected) and math.isnan(found)
        return math.isclose(expected, found, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(expected, bool) or isinstance(found, bool):
        return expected is found
    if isinstance(expected, int | float) and isinstance(found, int | float):
        return same(float(expected), float(found))
    return bool(expected == found)


def compare_tables(file: str, expected: pl.DataFrame, found: pl.DataFrame) -> list[Difference]:
    """Every cell of `found` against `expected`, named by CSV line, row keys and column."""
    if expected.columns != found.columns:
        return [Difference(file, "", "columns", expected.columns, found.columns)]
    if expected.height != found.height:
        return [Difference(file, "", "number of rows", expected.height, found.height)]
    keys = [c for c in ROW_KEYS if c in expected.columns]
    # A CSV's rows are named by their line (line 1 is the header), a Parquet's by number.
    unit, first = ("row", 1) if file.endswith(".parquet") else ("line", 2)
    differences = []
    rows = zip(expected.iter_rows(named=True), found.iter_rows(named=True), strict=True)
    for number, (want, got) in enumerate(rows, start=first):
        for column in expected.columns:
            if not same(want[column], got[column]):
                named = ", ".join(f"{k}={want[k]}" for k in keys)
                where = f"{unit} {number} ({named})"
                differences.append(Difference(file, where, column, want[column], got[column]))
    return differences


def flatten(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """A JSON value's leaves as (dotted key, value) pairs."""
    if isinstance(value, Mapping) and value:
        for key in sorted(value):
            yield from flatten(value[key], f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value


def compare_json(
    file: str, expected: Any, found: Any, *, skip: Sequence[str] = ()
) -> tuple[int, list[Difference]]:
    """Every leaf of `found` against `expected`, named by its dotted key."""
    want, got = dict(flatten(expected)), dict(flatten(found))
    missing = "(missing)"
    differences = [
        Difference(file, "", key, want.get(key, missing), got.get(key, missing))
        for key in sorted(want.keys() | got.keys())
        if not key.startswith(tuple(skip))
        and (key not in want or key not in got or not same(want[key], got[key]))
    ]
    return len(want), differences


def compare_text(file: str, expected: str, found: str) -> tuple[int, list[Difference]]:
    """Line by line, naming each line that differs."""
    want, got = expected.splitlines(), found.splitlines()
    differences = [
        Difference(file, f"line {n}", "text", a, b)
        for n, (a, b) in enumerate(zip(want, got, strict=False), start=1)
        if a != b
    ]
    if len(want) != len(got):
        differences.append(Difference(file, "", "number of lines", len(want), len(got)))
    return len(want), differences


def cell_count(df: pl.DataFrame) -> int:
    return df.height * df.width


def compare_files(
    file: str, expected: Path, found: Path, *, skip: Sequence[str] = ()
) -> tuple[int, list[Difference]]:
    """An output as a stage wrote it again (`expected`) against the run's (`found`), as its
    kind reads (`skip`: JSON keys not rechecked)."""
    if not found.is_file():
        return 1, [Difference(file, "", "file", "present", "(missing)")]
    suffix = expected.suffix
    try:
        if suffix in (".parquet", ".csv"):
            want = pl.read_parquet(expected) if suffix == ".parquet" else pl.read_csv(expected)
            got = (
                pl.read_parquet(found)
                if suffix == ".parquet"
                else pl.read_csv(found, schema=want.schema)
            )
            return cell_count(want), compare_tables(file, want, got)
        if suffix == ".json":
            return compare_json(
                file, json.loads(expected.read_text()), json.loads(found.read_text()), skip=skip
            )
        return compare_text(file, expected.read_text(), found.read_text())
    except (pl.exceptions.PolarsError, OSError, UnicodeDecodeError, ValueError) as exc:
        return 1, [Difference(file, "", "contents", f"a readable {suffix} file", str(exc))]
