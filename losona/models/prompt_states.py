"""The embedded model's prompt states on disk, for another process to resume from.

One file per state beside the call cache: a header (the model file, runtime and CPU that
made it; a checksum), the token ids, the state. Another identity is passed over, a damaged
file removed, the least recently used go past CAPACITY_BYTES. Not llama-cpp-python's
LlamaDiskCache: it deletes a state once read, checks no identity and unpickles what it finds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np

from losona.core.files import atomic_path

# The folder's name beside the call cache.
FOLDER = "smollm2-states"
# Room for the bundled set's first-turn prompts (docs/models.md, "The embedded model").
CAPACITY_BYTES = 4 * 1024**3
MAGIC = b"losona prompt state 1\n"
SUFFIX = ".state"
TOKEN = np.dtype("<i4")


def folder_beside(call_cache: Path) -> Path:
    """Where the prompt states of a machine whose call cache is `call_cache` are kept."""
    return call_cache.parent / FOLDER


@dataclass(frozen=True)
class Kept:
    """A state on disk and the tokens it read."""

    path: Path
    tokens: np.ndarray


class PromptStates:
    """The states kept in one folder for one model identity."""

    def __init__(self, folder: Path, identity: str, capacity: int = CAPACITY_BYTES) -> None:
        self.folder, self.identity, self.capacity = folder, identity, capacity
        # Each file's tokens, read once per process (None: not a state of this identity).
        self._tokens: dict[str, np.ndarray | None] = {}

    def longest(self, tokens: Sequence[int]) -> tuple[int, Kept] | None:
        """The kept state that shares the most leading tokens with these, and how many."""
        wanted = np.asarray(tokens, dtype=TOKEN)
        best: tuple[int, Kept] | None = None
        for path in self._files():
            held = self._read_tokens(path)
            if held is None:
                continue
            n = min(len(held), len(wanted))
            differ = np.flatnonzero(held[:n] != wanted[:n])
            shared = int(differ[0]) if differ.size else n
            if shared and (best is None or shared > best[0]):
                best = shared, Kept(path, held)
        return best

    def read(self, kept: Kept) -> bytes | None:
        """The state's bytes, or None if the file is not whole or not what its header says."""
        try:
            with kept.path.open("rb") as file:
                header = self._header(file)
                if header is None:
                    raise ValueError
                file.seek(len(kept.tokens) * TOKEN.itemsize, os.SEEK_CUR)
                state = file.read()
            if header["tokens"] != len(kept.tokens):
                raise ValueError
            if hashlib.sha256(state).hexdigest() != header["sha256"]:
                raise ValueError
        except (OSError, ValueError):
            self.forget(kept)
            return None
        with contextlib.suppress(OSError):
            os.utime(kept.path)  # used: the last to be removed
        return state

    def keep(self, tokens: Sequence[int], state: bytes) -> None:
        """Keep the state after reading these tokens (once), then hold the folder to capacity."""
        ids = np.asarray(tokens, dtype=TOKEN)
        path = self.folder / f"{self._name(ids)}{SUFFIX}"
        if path.exists():
            return
        header = {
            "identity": self.identity,
            "tokens": len(ids),
            "sha256": hashlib.sha256(state).hexdigest(),
        }
        try:
            with atomic_path(path) as tmp, tmp.open("wb") as file:
                file.write(MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n")
                file.write(ids.tobytes())
                file.write(state)
        except OSError:
            return  # a full disk or a folder we cannot write: the state is simply not kept
        self._tokens[path.name] = ids
        self._evict()

    def forget(self, kept: Kept) -> None:
        """Remove a state that cannot be used."""
        self._tokens[kept.path.name] = None
        with contextlib.suppress(OSError):
            kept.path.unlink()

    def _name(self, ids: np.ndarray) -> str:
        """A file name for these tokens' state under this identity."""
        return hashlib.sha256(self.identity.encode() + b"\n" + ids.tobytes()).hexdigest()[:32]

    def _files(self) -> list[Path]:
        try:
            return sorted(p for p in self.folder.iterdir() if p.name.endswith(SUFFIX))
        except OSError:
            return []

    def _header(self, file: BinaryIO) -> dict[str, object] | None:
        """The header of an open state file of this identity, or None."""
        if file.readline() != MAGIC:
            return None
        header = json.loads(file.readline())
        if not isinstance(header, dict) or header.get("identity") != self.identity:
            return None
        return header

    def _read_tokens(self, path: Path) -> np.ndarray | None:
        """The tokens a state file read, if it is a state of this identity (read once)."""
        if path.name not in self._tokens:
            tokens = None
            try:
                with path.open("rb") as file:
                    header = self._header(file)
                    if header is not None and isinstance(header.get("tokens"), int):
                        count = int(header["tokens"])  # type: ignore[call-overload]
                        raw = file.read(count * TOKEN.itemsize)
                        if len(raw) == count * TOKEN.itemsize:
                            tokens = np.frombuffer(raw, dtype=TOKEN)
            except (OSError, ValueError):
                pass
            self._tokens[path.name] = tokens
        return self._tokens[path.name]

    def _evict(self) -> None:
        """Remove the states used least recently until the folder fits its capacity (every
        file counts: a write cut short by a kill leaves its temporary file behind)."""
        found = []
        for path in self.folder.iterdir():
            with contextlib.suppress(OSError):
                stat = path.stat()
                found.append((stat.st_mtime_ns, stat.st_size, path))
        total = sum(size for _, size, _ in found)
        for _, size, path in sorted(found):
            if total <= self.capacity:
                break
            with contextlib.suppress(OSError):
                path.unlink()
            self._tokens.pop(path.name, None)
            total -= size


def identity(model_file: Path, *facts: object) -> str:
    """What a state depends on besides its tokens: the model file's content and these facts."""
    with model_file.open("rb") as file:
        model = hashlib.file_digest(file, "sha256").hexdigest()
    return hashlib.sha256(json.dumps([model, *map(str, facts)]).encode()).hexdigest()
