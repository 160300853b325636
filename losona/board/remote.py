"""The outputs a submission's dvc.lock records, fetched from its DVC remote and held to
their md5; only the remote's url is read from the run's .dvc/config, as data."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from configobj import ConfigObj, ConfigObjError

from losona.board.tree import Refused, Tree, inside, write_file

DVC_CONFIG = ".dvc/config"
REMOTE_TIMEOUT_S = 30
CHUNK = 1 << 20
MD5 = re.compile("[0-9a-f]{32}")


def remote_url(tree: Tree, given: str | None, max_bytes: int) -> str:
    """The submission's remote: the board's entry for it, else the run's default remote."""
    if given:
        return given
    if DVC_CONFIG not in tree.files:
        raise Refused(f"{DVC_CONFIG}: absent, and the board names no remote for the run")
    text = tree.read(DVC_CONFIG, max_bytes).decode("utf-8", "replace")
    try:
        config = ConfigObj(io.StringIO(text), interpolation=False, list_values=False)
    except ConfigObjError as exc:
        raise Refused(f"{DVC_CONFIG}: not DVC's config ({exc})") from None
    name = (config.get("core") or {}).get("remote")
    url = (config.get(f'remote "{name}"') or {}).get("url") if name else None
    if not isinstance(url, str) or not url:
        raise Refused(f"{DVC_CONFIG}: no default remote with a url")
    if "://" not in url and not os.path.isabs(url):
        raise Refused(f"{DVC_CONFIG}: the remote '{url}' is relative to the run's own clone")
    return url


def submitted_outputs(lock: Any, tree: Tree) -> list[tuple[str, str, bool]]:
    """Every output a submission's dvc.lock records: (path, md5, cached), each path checked
    to lie inside its tree (models/call_store.lock_outputs reads our own dvc.lock)."""
    stages = lock.get("stages") if isinstance(lock, dict) else None
    if not isinstance(stages, dict):
        raise Refused("dvc.lock: no 'stages' mapping; not DVC's lock file")
    found = []
    for name, stage in stages.items():
        where = f"dvc.lock, stage '{name}'"
        if not isinstance(stage, dict):
            raise Refused(f"{where}: not a mapping")
        for entry in [*(stage.get("deps") or []), *(stage.get("outs") or [])]:
            if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                raise Refused(f"{where}: an entry without a path")
            inside(entry["path"], where)
        for entry in stage.get("outs") or []:
            md5 = entry.get("md5")
            if not isinstance(md5, str) or not MD5.fullmatch(md5.removesuffix(".dir")):
                raise Refused(f"{where}: out {entry['path']} has no md5")
            found.append((entry["path"], md5, entry["path"] not in tree.files))
    return found


class Remote:
    """A DVC remote read one object at a time, each bounded in size and held to its md5."""

    def __init__(self, url: str, max_bytes: int) -> None:
        self.url, self.max_bytes = url.rstrip("/"), max_bytes
        if url.startswith(("http://", "https://")):
            self._open = self._open_http
        elif url.startswith("file://") or os.path.isabs(url):
            self.root = Path(url.removeprefix("file://"))
            self._open = self._open_local
        else:
            raise Refused(f"remote {url}: only local-directory and HTTP(S) remotes are read")

    def object_path(self, md5: str) -> str:
        return f"files/md5/{md5[:2]}/{md5[2:]}"

    def fetch(self, md5: str, target: Path, name: str) -> None:
        """The object `md5` into `target`, refusing it missing, too large or other bytes."""
        digest = hashlib.md5(usedforsecurity=False)
        size = 0
        target.parent.mkdir(parents=True, exist_ok=True)
        with self._open(md5, name) as source, target.open("wb") as out:
            while chunk := source.read(CHUNK):
                size += len(chunk)
                if size > self.max_bytes:
                    raise Refused(
                        f"{name}: over the board's bound of {self.max_bytes:,} bytes "
                        f"(remote {self.url})"
                    )
                digest.update(chunk)
                out.write(chunk)
        if digest.hexdigest() != md5.removesuffix(".dir"):
            raise Refused(
                f"{name}: the remote's file has md5 {digest.hexdigest()}, dvc.lock records {md5}"
            )

    def _open_local(self, md5: str, name: str) -> Any:
        path = self.root / self.object_path(md5)
        try:
            # Not followed if a symlink: the remote's own files only.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            raise Refused(f"{name}: not in the remote {self.url} (md5 {md5})") from None
        except OSError as exc:
            raise Refused(f"{name}: unreadable in the remote {self.url} ({exc.strerror})") from None
        return os.fdopen(fd, "rb")

    def _open_http(self, md5: str, name: str) -> Any:
        url = f"{self.url}/{self.object_path(md5)}"
        try:
            # http(s) only: see __init__
            return urllib.request.urlopen(url, timeout=REMOTE_TIMEOUT_S)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise Refused(f"{name}: not in the remote {self.url} (md5 {md5})") from None
            raise Refused(f"{name}: the remote {self.url} answered {exc.code}") from None
        except (urllib.error.URLError, TimeoutError) as exc:
            raise Refused(f"remote {self.url} does not answer ({exc})") from None


def fetch_outputs(
    outputs: list[tuple[str, str, bool]],
    tree: Tree,
    remote: Remote | None,
    root: Path,
    max_bytes: int,
) -> int:
    """Every recorded output into `root`, from git (`cache: false`) or the remote; the count."""
    count = 0
    for path, md5, cached in outputs:
        if not cached:
            data = tree.read(path, max_bytes)
            if hashlib.md5(data, usedforsecurity=False).hexdigest() != md5:
                raise Refused(f"{path}: git holds other bytes than the md5 dvc.lock records")
            write_file(root / path, data)
            count += 1
            continue
        if remote is None:
            raise Refused(f"{path}: no remote to fetch it from")
        if md5.endswith(".dir"):
            listing = root.parent / "listings" / md5
            remote.fetch(md5, listing, path)
            for relpath, file_md5 in _folder_files(listing, path):
                name = f"{path}/{relpath}"
                inside(name, f"the listing of {path}")
                remote.fetch(file_md5, root / name, name)
                count += 1
        else:
            remote.fetch(md5, root / path, path)
            count += 1
    return count


def _folder_files(listing: Path, path: str) -> Iterator[tuple[str, str]]:
    try:
        entries = json.loads(listing.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refused(f"{path}: its folder listing is malformed JSON ({exc})") from None
    if not isinstance(entries, list):
        raise Refused(f"{path}: its folder listing is not a list")
    for entry in entries:
        if not (
            isinstance(entry, Mapping)
            and isinstance(entry.get("relpath"), str)
            and isinstance(entry.get("md5"), str)
            and MD5.fullmatch(entry["md5"])
        ):
            raise Refused(f"{path}: its folder listing has an entry without relpath and md5")
        yield entry["relpath"], entry["md5"]
