"""Small file helpers shared by every stage: atomic writes, strict YAML, content hashes."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import polars as pl
import yaml

from losona.errors import LosonaError


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; move it into place only if the block succeeds.

    A crash or a kill mid-write therefore never leaves a half-written output behind, and
    readers (and DVC) only ever see the old file or the complete new one.
    """
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


def write_parquet(df: pl.DataFrame, path: str | Path) -> None:
    """Write a table atomically; same rows and schema give the same bytes."""
    with atomic_path(path) as tmp:
        # Statistics and compression are fixed so the bytes depend only on the data.
        df.write_parquet(tmp, compression="zstd", compression_level=3, statistics=True)


def write_text(text: str, path: str | Path) -> None:
    """Write a UTF-8 text file atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json(data: Any, path: str | Path) -> None:
    """Write JSON atomically with sorted keys, so reruns give identical bytes."""
    write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n", path)


class _StrictLoader(yaml.SafeLoader):
    """A YAML loader that refuses duplicate keys instead of silently keeping the last one."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates
)


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
    return yaml.load(stream, Loader=_StrictLoader)


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
    digest = hashlib.sha256()
    with Path(path).open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_parquet(path: str | Path, schema: pl.Schema, made_by: str) -> pl.DataFrame:
    """Read a stage's input table, refusing a missing file or one of another shape."""
    path = Path(path)
    if not path.is_file():
        raise LosonaError(
            f"{path} not found: run the {made_by} stage first "
            f"(python stages/{made_by}.py, or dvc repro)"
        )
    try:
        df = pl.read_parquet(path)
    except (OSError, pl.exceptions.PolarsError) as exc:
        raise LosonaError(f"{path}: cannot be read as Parquet ({exc}); rerun {made_by}") from None
    if df.schema != schema:
        raise LosonaError(
            f"{path}: expected the columns {dict(schema)}, found {dict(df.schema)}; rerun {made_by}"
        )
    return df


def require_outputs(root: Path, names: Iterable[str], stage: str) -> None:
    """Refuse, saying how to make it, the first of a stage's output files that is missing."""
    for name in names:
        if not (root / name).is_file():
            raise LosonaError(
                f"{display_path(root / name)} not found: run the {stage} stage first "
                f"(python stages/{stage}.py, or dvc repro)"
            )


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
