"""Small helpers shared by every stage: atomic writes (tables whole or chunk by chunk),
sequences made on demand, strict YAML, content hashes."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar, overload

import polars as pl
import yaml
from polars.io.plugins import register_io_source

from losona.core.errors import LosonaError


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; move it into place only if the block succeeds,
    so that a kill mid-write never leaves a half-written output."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    # mkstemp creates the file private (0600); give it the mode a plain open() would.
    umask = os.umask(0)
    os.umask(umask)
    tmp.chmod(0o666 & ~umask)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


T = TypeVar("T")


class OnDemand(Sequence[T]):
    """A sequence whose items are made when asked for and not kept: `item(i)` for each i,
    so that a consumer reading a run's requests or cases in order holds one at a time."""

    def __init__(self, length: int, item: Callable[[int], T]) -> None:
        self.length, self.item = length, item

    def __len__(self) -> int:
        return self.length

    @overload
    def __getitem__(self, index: int) -> T: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...
    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            picked = range(self.length)[index]
            return OnDemand(len(picked), lambda i: self.item(picked[i]))
        return self.item(range(self.length)[index])  # negative indices; IndexError past the end

    def __iter__(self) -> Iterator[T]:
        return map(self.item, range(self.length))


# Rows made, and calls looked up in or read back from the call cache, at a time, by what
# builds a table in chunks: large enough that each step's overhead does not count, small
# enough that a chunk's Python objects do not.
CHUNK = 1000


@dataclass(frozen=True)
class Chunks:
    """A table made a chunk of rows at a time, in its final row order, so that no list of
    every row's Python objects ever exists. `produce` yields DataFrames of `schema` whose
    heights add up to `height`; each call starts over."""

    schema: pl.Schema
    height: int  # its rows, as a DataFrame's height counts them
    produce: Callable[[], Iterator[pl.DataFrame]]

    def collect(self) -> pl.DataFrame:
        """The whole table in memory (for small tables and tests)."""
        return pl.concat([self.schema.to_frame(), *self.produce()], rechunk=True)


# Compression and statistics are fixed so the bytes depend only on the data.
_PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "statistics": True,
}


def write_parquet(table: pl.DataFrame | Chunks, path: str | Path) -> None:
    """Write a table atomically; same rows and schema give the same bytes, whole or in chunks.
    Chunks are written a row group at a time, cut as polars cuts the whole table."""
    with atomic_path(path) as tmp:
        if isinstance(table, pl.DataFrame):
            table.write_parquet(tmp, **_PARQUET_OPTIONS)
        elif table.height == 0:
            table.schema.to_frame().write_parquet(tmp, **_PARQUET_OPTIONS)
        else:
            sizes = row_group_sizes(table.height)

            def row_groups(*_: object) -> Iterator[pl.DataFrame]:
                # polars calls this on a thread of its own: the chunks are made there.
                return _regrouped(table, sizes)

            # DataFrame.write_parquet is this same streaming sink over the whole table.
            register_io_source(row_groups, schema=table.schema).sink_parquet(
                tmp, engine="streaming", **_PARQUET_OPTIONS
            )


# polars writes a table of up to this many rows as one row group (its streaming Parquet sink
# aims at 122,880 rows a group), so most tables need no probe; tests/test_files.py checks it.
ONE_ROW_GROUP = 122_880


@functools.cache
def row_group_sizes(rows: int) -> tuple[int, ...]:
    """The rows of each row group polars writes a table of `rows` rows in; past ONE_ROW_GROUP
    asked of polars by writing that many nulls (its cuts depend on the number of rows alone)."""
    if rows <= ONE_ROW_GROUP:
        return (rows,)
    # Only here: importing pyarrow costs more memory than most stages' tables.
    import pyarrow.parquet

    probe = io.BytesIO()
    pl.DataFrame({"probe": pl.repeat(None, rows, dtype=pl.Boolean, eager=True)}).write_parquet(
        probe, **_PARQUET_OPTIONS
    )
    metadata = pyarrow.parquet.ParquetFile(probe).metadata
    return tuple(metadata.row_group(i).num_rows for i in range(metadata.num_row_groups))


def _regrouped(table: Chunks, sizes: Sequence[int]) -> Iterator[pl.DataFrame]:
    """The table's chunks cut and joined into frames of exactly these sizes, in order."""
    buffered: list[pl.DataFrame] = []
    held = written = 0
    wanted = iter(sizes)
    size = next(wanted)
    for chunk in table.produce():
        if chunk.schema != table.schema:
            raise ValueError(f"a chunk has the columns {chunk.schema}, expected {table.schema}")
        buffered.append(chunk)
        held += chunk.height
        while size and held >= size:
            group = pl.concat(buffered, rechunk=True)
            # Only the row group is held while polars encodes it, not the chunks it came from.
            buffered, held = [group.slice(size)], held - size
            yield group.head(size)
            written += size
            size = next(wanted, 0)
    if held or written != table.height:
        raise ValueError(f"the chunks held {written + held} rows, expected {table.height}")


def remove_empty_folders(top: Path) -> None:
    """Remove every empty folder below `top`: DVC makes the folders of a new stage's outputs
    when it reads the pipeline, and a refused run leaves none behind."""
    if not top.is_dir():
        return
    for folder in sorted(top.rglob("*"), key=lambda path: len(path.parts), reverse=True):
        if folder.is_dir() and not any(folder.iterdir()):
            folder.rmdir()


def write_text(text: str, path: str | Path) -> None:
    """Write a UTF-8 text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(data: Any, path: str | Path) -> None:
    """Write JSON atomically with sorted keys, so reruns give identical bytes."""
    write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", path)


def _mapping_without_duplicates(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


def _strict(base: type[yaml.SafeLoader]) -> type[yaml.SafeLoader]:
    """A YAML loader that refuses duplicate keys instead of silently keeping the last one."""
    loader: type[yaml.SafeLoader] = type(f"Strict{base.__name__}", (base,), {})
    loader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates
    )
    return loader


# libyaml's parser is the fast one; a file it refuses is read again by PyYAML's own, so
# that the error a user sees is worded as it always was.
_FAST_LOADER = _strict(getattr(yaml, "CSafeLoader", yaml.SafeLoader))
_WORDING_LOADER = _strict(yaml.SafeLoader)


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML file strictly; any problem is a LosonaError naming the file and line."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as stream:
            return _load(stream)
    except FileNotFoundError:
        raise LosonaError(f"{path}: file not found") from None
    except UnicodeDecodeError as exc:
        raise LosonaError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except yaml.YAMLError as exc:
        raise LosonaError(f"{path}: invalid YAML: {exc}") from None


def _load(stream: IO[str]) -> Any:
    try:
        return yaml.load(stream, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        stream.seek(0)
        return yaml.load(stream, Loader=_WORDING_LOADER)


def display_path(path: str | Path) -> str:
    """A path as a user would type it: relative to the working directory when inside it."""
    absolute = Path(path).resolve()
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


def sha256_text(text: str) -> str:
    """Hex SHA-256 of a string's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    with Path(path).open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def read_parquet(
    path: str | Path, schema: pl.Schema, made_by: str, where: pl.Expr | None = None
) -> pl.DataFrame:
    """Read a stage's input table, refusing a missing file or one of another shape; with
    `where`, only the rows it selects are read."""
    path = Path(path)
    if not path.is_file():
        raise LosonaError(f"{path} not found: {run_first(made_by)}")
    try:
        if where is None:
            df = pl.read_parquet(path)
        else:
            df = pl.scan_parquet(path).filter(where).collect()
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise LosonaError(f"{path}: cannot be read as Parquet ({exc}); rerun {made_by}") from None
    if df.schema != schema:
        raise LosonaError(
            f"{path}: expected the columns {dict(schema)}, found {dict(df.schema)}; rerun {made_by}"
        )
    return df


def run_first(stage: str) -> str:
    """What makes a stage's missing output, as every refusal of one says it."""
    return f"run the {stage} stage first (python stages/{stage}.py, or dvc repro)"


def require_outputs(root: Path, names: Iterable[str], stage: str) -> None:
    """Refuse, saying how to make it, the first of a stage's output files that is missing."""
    for name in names:
        if not (root / name).is_file():
            raise LosonaError(f"{display_path(root / name)} not found: {run_first(stage)}")


def read_text(path: str | Path, remedy: str) -> str:
    """A UTF-8 text file a stage wrote; anything else is a LosonaError naming the file."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise LosonaError(
            f"{display_path(path)}: not UTF-8 text ({exc.reason} at byte {exc.start}); {remedy}"
        ) from None


def read_csv(path: str | Path, schema: pl.Schema, remedy: str) -> pl.DataFrame:
    """A CSV table a stage wrote with `schema`, refusing another shape or a cut-short file."""
    where = display_path(path)
    text = read_text(path, remedy)
    header = text.partition("\n")[0].split(",")
    if header != schema.names():
        raise LosonaError(
            f"{where}: expected the columns {schema.names()}, found {header}; {remedy}"
        )
    # Polars reads a row cut short as one with empty fields; every line it writes ends in \n.
    if not text.endswith("\n"):
        raise LosonaError(f"{where}: the file ends mid-line, so it was cut short; {remedy}")
    try:
        return pl.read_csv(path, schema=schema)
    except pl.exceptions.PolarsError as exc:
        raise LosonaError(f"{where}: unreadable ({exc}); {remedy}") from None


def read_json_object(path: str | Path, keys: Iterable[str], remedy: str) -> dict[str, Any]:
    """A JSON object a stage wrote (e.g. DVC metrics) with these keys, refusing anything else."""
    try:
        data = json.loads(read_text(path, remedy))
    except json.JSONDecodeError as exc:
        raise LosonaError(f"{display_path(path)}: not JSON ({exc}); {remedy}") from None
    if not isinstance(data, dict):
        raise LosonaError(
            f"{display_path(path)}: expected a JSON object, found {type(data).__name__}; {remedy}"
        )
    missing = sorted(set(keys) - set(data))
    if missing:
        raise LosonaError(f"{display_path(path)}: expected the keys {missing}; {remedy}")
    return data
