"""A stage run again in a scratch copy of the run, every model call answered from the run's
published calls alone. What it writes is put back once compared, so that the next stage
reads the run's files and a changed verdict is named by each stage whose numbers it moves.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path

from losona.core.errors import LosonaError
from losona.core.layout import RunLayout

# Locations of `paths` that are not copied: the user's call cache, and the generation
# project, a pipeline of its own that reproduce does not check.
NOT_COPIED = (
    "call_cache",
    "generation_dir",
    "generation_reports_dir",
    "generation_accept",
    "generated_dir",
)


class Replay:
    """A scratch copy of the run `run` places, under `root`, on a replaying layout."""

    def __init__(self, run: RunLayout, root: Path) -> None:
        self.root = root
        self.written: list[Path] = []
        located = run.paths.model_dump()
        self.scratch = RunLayout(
            run.paths.model_copy(
                update={
                    **{
                        key: value if value is None else str(self._copy_of(value))
                        for key, value in located.items()
                    },
                    "call_cache": str(root / "call_cache.sqlite"),
                }
            ),
            replaying=True,
        )
        for key, value in located.items():
            if value and key not in NOT_COPIED:
                _copy(Path(value), self._copy_of(value))

    def _copy_of(self, location: str | Path) -> Path:
        """Where the copy keeps a file or folder of the run: under its absolute path, so that
        no location (`../elsewhere`) falls outside the copy."""
        return self.root / Path(os.path.abspath(location)).relative_to("/")

    def original(self, copy: Path) -> Path:
        """The run's file a file of the copy stands for (the inverse of `_copy_of`), as the
        user names it."""
        return Path(os.path.relpath(Path("/") / copy.relative_to(self.root)))

    @contextmanager
    def rerun(self, stage: Callable[[RunLayout], object]) -> Iterator[RunLayout]:
        """Run `stage` in the copy, silently; yield the copy's layout for the files it wrote
        (`written`) to be compared, then put them back."""
        before = _files(self.root)
        try:
            with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
                stage(self.scratch)
            after = _files(self.root)
            self.written = sorted(p for p in after if after[p] != before.get(p))
            yield self.scratch
        except LosonaError as exc:
            # A file it names is the run's: say where the user finds it, not the copy.
            here = f"{self._copy_of('.')}{os.sep}"
            exc.args = (str(exc).replace(here, "").replace(str(self.root), ""),)
            raise
        finally:
            self._put_back(before)

    def _put_back(self, before: dict[Path, tuple[int, int, int]]) -> None:
        after = _files(self.root)
        for copy in [*(p for p in after if after[p] != before.get(p)), *(set(before) - set(after))]:
            original = self.original(copy)
            if original.is_file():
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(original, copy)
            else:
                copy.unlink(missing_ok=True)


@contextmanager
def replaying(run: RunLayout) -> Iterator[Replay]:
    """A `Replay` of the run in a temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="losona-reproduce-") as root:
        yield Replay(run, Path(root))


def _copy(source: Path, target: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
    elif source.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _files(root: Path) -> dict[Path, tuple[int, int, int]]:
    """Every file of the copy (the call stores aside), with what changes when it is written
    (a stage writes a new file and renames it over the old)."""
    found = {}
    for path in root.rglob("*"):
        if path.is_file() and path.parent != root:
            stat = path.stat()
            found[path] = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
    return found
