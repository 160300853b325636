"""A submission's tree at its revision, as data: cloned bare with nothing of it run, its
files written from git's blobs, so a symlink, a submodule or a path that leaves the tree
is never followed: it costs the submission its row (`Refused`)."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from losona.core.errors import LosonaError

# Transports a submission's repository may be reached by: `ext::` and the like run commands.
ALLOWED_PROTOCOLS = "file:git:http:https:ssh"
REGULAR_FILE_MODES = ("100644", "100755")
SYMLINK_MODE = "120000"
SUBMODULE_MODE = "160000"
# Every git command the board runs: no hook of the submission's can run.
GIT = ("git", "-c", "core.hooksPath=/dev/null")


class Refused(LosonaError):
    """A submission that cannot be verified, with the one-line reason its row shows."""


@dataclass(frozen=True)
class Blob:
    """One regular file of the tree: its git object and size."""

    sha: str
    size: int


@dataclass(frozen=True)
class Tree:
    """A submission's tree at one commit, in a bare clone (`git_dir`): its regular files."""

    git_dir: Path
    commit: str
    files: dict[str, Blob]

    def read(self, path: str, max_bytes: int) -> bytes:
        """A file's bytes, refusing one that is absent or over `max_bytes`."""
        blob = self.files.get(path)
        if blob is None:
            raise Refused(f"{path}: not in the run's tree at {self.commit[:12]}")
        if blob.size > max_bytes:
            raise Refused(f"{path}: {blob.size:,} bytes, over the board's bound of {max_bytes:,}")
        return _git(self.git_dir, "cat-file", "blob", blob.sha).stdout


def git_environment(home: Path) -> dict[str, str]:
    """git's environment: no user or system configuration, prompts off, transports limited."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_ALLOW_PROTOCOL": ALLOWED_PROTOCOLS,
        "LC_ALL": "C",
    }


def _git(git_dir: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    done = subprocess.run(
        [*GIT, "--git-dir", str(git_dir), *args],
        capture_output=True,
        env=git_environment(git_dir),
        check=False,
    )
    if done.returncode != 0:
        raise Refused(f"git {args[0]}: {_last_line(done.stderr)}")
    return done


def _last_line(stderr: bytes) -> str:
    lines = stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else "failed"


def clone_at(repo: str, rev: str, git_dir: Path) -> str:
    """The commit `rev` names in the submission `repo`, cloned bare into `git_dir`."""
    clone = subprocess.run(
        [*GIT, "clone", "--bare", "--quiet", "--no-recurse-submodules", "--", repo, str(git_dir)],
        capture_output=True,
        env=git_environment(git_dir.parent),
        check=False,
    )
    if clone.returncode != 0:
        raise Refused(f"repository {repo}: cannot be cloned ({_last_line(clone.stderr)})")
    try:
        return (
            _git(git_dir, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^0")
            .stdout.decode()
            .strip()
        )
    except Refused:
        raise Refused(f"revision '{rev}' is not in {repo}") from None


def read_tree(git_dir: Path, commit: str) -> Tree:
    """The commit's tree in the bare clone `git_dir`, its regular files listed."""
    return Tree(git_dir, commit, _list_files(git_dir, commit))


def _list_files(git_dir: Path, commit: str) -> dict[str, Blob]:
    """Every regular file of the commit's tree; a symlink is refused, a submodule left out."""
    listing = _git(git_dir, "ls-tree", "-r", "-z", "--long", "--full-tree", commit).stdout
    files = {}
    for entry in filter(None, listing.split(b"\0")):
        meta, _, raw_path = entry.partition(b"\t")
        mode, _kind, sha, size = meta.decode().split()
        path = raw_path.decode("utf-8", "replace")
        if mode == SYMLINK_MODE:
            raise Refused(f"{path}: a symlink; a submission's tree is read as plain files only")
        if mode in REGULAR_FILE_MODES:
            files[path] = Blob(sha, int(size))
        elif mode != SUBMODULE_MODE:
            raise Refused(f"{path}: an entry of mode {mode}, not a file")
    return files


def write_file(path: Path, data: bytes) -> None:
    """`data` written at `path`, its folders made first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def inside(path: str, origin: str) -> PurePosixPath:
    """`path` as a relative path inside the run's tree, refusing one that leaves it."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or "\\" in path or ".." in pure.parts or "\0" in path:
        raise Refused(f"{origin}: names '{path}', outside the run's tree")
    return pure
