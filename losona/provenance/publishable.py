"""`python -m losona.publishable`: is this run fit to publish, that is, can another machine
get it and rerun it? (docs/reproducing.md lists the checks.)

Each refusal names the file and the command that mends it. Exit 0 when publishable, 3 when
not, 2 when there is no DVC pipeline here or DVC cannot say.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from losona.core.cli import USER_ERROR_EXIT
from losona.core.config import PARAMS_FILE, option_file
from losona.core.errors import LosonaError
from losona.models.call_store import LOCK_FILE, lock_outputs
from losona.models.published_calls import md5_file
from losona.provenance.dvc_json import DVC, dvc_json, run_in
from losona.provenance.lock import check_lock

NOT_CLEAN_EXIT = 3  # as reproduce's "a value differs"
MAX_LINES = 12  # of one reason's cases: the count says how many more
PIPELINE_FILE = Path("dvc.yaml")
# DVC's project settings, kept in git: the default remote a clone pulls the outputs from.
DVC_CONFIG = Path(".dvc/config")


@dataclass(frozen=True)
class Refusal:
    """One reason a run may not be published: what is wrong, each case, and the mend."""

    reason: str
    lines: tuple[str, ...]
    advice: str


def dvc_status(root: Path = Path(".")) -> dict[str, list[Any]]:
    """`dvc status --json` of the pipeline in `root`: each stage that is not up to date."""
    if not (root / PIPELINE_FILE).is_file():
        raise LosonaError(f"no dvc.yaml in {root.resolve()}: run this in the run's repository root")
    status: dict[str, list[Any]] = dvc_json(
        ["status"], root, dict, "dvc status could not say whether the run is up to date"
    )
    return status


def changed_in(folder: str, root: Path = Path(".")) -> list[str]:
    """The files that make a folder DVC hashes whole differ, as 'path (how)': git's changes,
    outputs gone or not their recorded bytes, and files no one holds."""
    found = {path: how for path, how in git_changes([folder], root).items() if how != "ignored"}
    outputs = recorded_outputs(root)
    for out, md5 in outputs.items():
        if out.startswith(f"{folder}/") and out not in found:
            if not (root / out).exists():
                found[out] = "deleted"
            elif not md5.endswith(".dir") and md5_file(root / out) != md5:
                found[out] = "modified: not the md5 dvc.lock records"
    tracked = set(git_tracked([folder], root))
    strays = [
        path
        for path in _files_under(root / folder, root)
        if path not in tracked and path not in found and not _written_by(path, outputs)
    ]
    ignored = set(dvc_ignored(strays, root))  # bytecode caches: no part of what DVC hashes
    found.update({path: STRAY for path in strays if path not in ignored})
    return [f"{path} ({how})" for path, how in sorted(found.items())]


# A file in a folder DVC hashes that git does not track and no stage of the run writes.
STRAY = "new: no stage of dvc.lock writes it and git does not hold it"


def _files_under(folder: Path, root: Path) -> list[str]:
    """Every file under a folder, as a path from `root`."""
    return sorted(p.relative_to(root).as_posix() for p in folder.rglob("*") if p.is_file())


def _written_by(path: str, outputs: Iterable[str]) -> bool:
    """Whether a path is one of these outputs or inside one (an output folder)."""
    return any(path == out or path.startswith(f"{out}/") for out in outputs)


def git_tracked(paths: Sequence[str], root: Path = Path(".")) -> list[str]:
    """The files at or under `paths` that git tracks (in its index)."""
    done = run_in(root, ["git", "ls-files", "-z", "--", *paths])
    return [path for path in done.stdout.split("\0") if path] if done.returncode == 0 else []


# Every file HEAD does not hold as it is: new ones (listed one by one) and ignored ones too.
GIT_STATUS = (
    *("git", "status", "--porcelain=v1", "-z"),
    *("--untracked-files=all", "--ignored=matching"),
)
GIT_STATES = {
    "??": "new",
    "!!": "ignored",
    "M": "modified",
    "A": "added",
    "D": "deleted",
    "R": "renamed",
}


def git_changes(paths: Sequence[str], root: Path = Path(".")) -> dict[str, str]:
    """What git sees of the files at or under `paths` that HEAD does not hold as they are:
    each file's path and how ('new', 'ignored', 'modified', 'added' but not committed, ...)."""
    if not paths:
        return {}
    done = run_in(root, [*GIT_STATUS, "--", *paths])
    if done.returncode != 0:
        return {}
    found: dict[str, str] = {}
    entries = iter(done.stdout.split("\0"))
    for entry in entries:
        if not entry:
            continue
        code, path = entry[:2], entry[3:]
        if code.startswith("R"):
            next(entries, None)  # a rename is followed by the path it came from
        how = GIT_STATES.get(code) or GIT_STATES.get(code.strip()[:1], code.strip())
        if code[0] in "AMR" and code[1] == " ":
            how = f"{how}, not committed"  # staged: `git add` done, `git commit` not
        found[path] = how
    return found


def describe(status: Mapping[str, Sequence[Any]], root: Path = Path(".")) -> list[str]:
    """One line per stage that is not up to date, naming what changed."""
    lines = []
    for stage, changes in status.items():
        parts = []
        for change in changes:
            if isinstance(change, str):  # "changed checksum", "always changed", ...
                parts.append(change)
                continue
            for kind, paths in change.items():
                named = []
                for path, how in paths.items():
                    if isinstance(how, dict):  # params: each key and how it changed
                        keys = ", ".join(f"{key} {what}" for key, what in how.items())
                        named.append(f"{path} ({keys})")
                    elif (root / path).is_dir():
                        # DVC names the folder it hashes whole; a person mends its files.
                        named.extend(changed_in(path, root) or [f"{path} ({how}, a folder)"])
                    else:
                        named.append(f"{path} ({how})")
                parts.append(f"{kind}: {', '.join(named)}")
        lines.append(f"{stage}: {'; '.join(parts)}")
    return lines


def _locked_stages(root: Path) -> dict[str, Any]:
    """The stages dvc.lock records, by name; none without a dvc.lock."""
    lock = root / LOCK_FILE
    record = yaml.safe_load(lock.read_text(encoding="utf-8")) if lock.is_file() else {}
    stages: dict[str, Any] = (record or {}).get("stages") or {}
    return stages


def recorded_outputs(root: Path = Path(".")) -> dict[str, str]:
    """Every output dvc.lock records, files and folders, with its md5 (a folder's ends .dir)."""
    lock = root / LOCK_FILE
    if not lock.is_file():
        return {}
    return lock_outputs(yaml.safe_load(lock.read_text(encoding="utf-8")), LOCK_FILE)


def rested_on(root: Path = Path(".")) -> list[str]:
    """Every file or folder the recorded run rests on that git, not DVC, must hold.

    dvc.yaml, dvc.lock, each dependency and params file of dvc.lock's stages except what
    stages write, the scenario file of a run on its own dataset, .dvc/config, and the .dvc
    file of what `dvc add` tracks.
    """
    stages = _locked_stages(root)
    outputs = recorded_outputs(root)
    needed = {PIPELINE_FILE.as_posix(), LOCK_FILE.as_posix()}
    for stage in stages.values():
        needed.update(entry["path"] for entry in stage.get("deps") or [])
        needed.update(stage.get("params") or {})
    needed.update(_dataset_file(root))
    if (root / DVC_CONFIG).is_file():
        needed.add(DVC_CONFIG.as_posix())

    def made_by_stages(path: str) -> bool:
        # An output, inside one, or a folder of outputs (aggregate reads data/verdicts whole).
        return _written_by(path, outputs) or any(out.startswith(f"{path}/") for out in outputs)

    def held_by_git(path: str) -> str:
        # A file `dvc add` tracks is DVC's to hold (and push); git holds its .dvc file.
        return f"{path}.dvc" if (root / f"{path}.dvc").is_file() else path

    return sorted(held_by_git(path) for path in needed if not made_by_stages(path))


def _dataset_file(root: Path) -> list[str]:
    """The scenario file a run on its own dataset reads (conf/dataset/<name>.yaml's path)."""
    try:
        params = yaml.safe_load((root / PARAMS_FILE).read_text(encoding="utf-8")) or {}
        config = root / option_file("dataset", str(params.get("dataset")))
        path = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get("path")
    except (OSError, yaml.YAMLError, AttributeError):
        return []  # dvc status and the preflight name a broken params.yaml or config
    return [str(path)] if isinstance(path, str) and path != "???" else []


def dvc_ignored(paths: Sequence[str], root: Path = Path(".")) -> list[str]:
    """Those of `paths` that DVC ignores (`dvc check-ignore`, after .dvcignore)."""
    if not paths:
        return []
    done = run_in(root, [*DVC, "check-ignore", *paths])
    # Exit 1: none of them is ignored; another failure leaves each one to be named.
    return (
        [path for path in done.stdout.splitlines() if path in paths] if done.returncode == 0 else []
    )


def git_refusal(root: Path = Path(".")) -> Refusal | None:
    """Files the run rests on that git does not hold as they are, committed."""
    if run_in(root, ["git", "rev-parse", "--verify", "-q", "HEAD"]).returncode:
        return Refusal(
            "this is not a git repository with a commit, so no one else can get the run:",
            ("no commit holds dvc.yaml, dvc.lock and the configs",),
            "Commit the run (git init; git add -A; git commit), then check again.",
        )
    needed = rested_on(root)
    changed = git_changes(needed, root)
    # What DVC ignores as well (.dvcignore: the bytecode caches Python writes into a code
    # folder whenever a stage imports it) is no part of the folder DVC hashes, so no part
    # of the run: another machine writes its own.
    for path in dvc_ignored([path for path, how in changed.items() if how == "ignored"], root):
        del changed[path]
    # The outputs git keeps, not DVC (cache: false: the metrics, provenance.json): a clone
    # gets HEAD's. An output git ignores is DVC's to hold.
    kept = git_changes(list(recorded_outputs(root)), root).items()
    changed.update({path: how for path, how in kept if how != "ignored"})
    missing = [path for path in needed if not (root / path).exists() and path not in changed]
    lines = [f"{path} ({how})" for path, how in sorted(changed.items())]
    lines += [f"{path} (missing: neither on disk nor in git)" for path in missing]
    if not lines:
        return None
    return Refusal(
        f"git does not hold, committed, {len(lines)} file(s) the run rests on or records, so "
        "a clone of git HEAD is not this run:",
        tuple(lines),
        "Commit them: git add <file> && git commit (a new or changed config, params.yaml, "
        "dvc.lock, .dvc/config, the metrics, provenance.json, a scenario file); a file git "
        "ignores: git add -f <file>, or track it with dvc add; a change you did not mean: "
        "git checkout HEAD -- <file>. Then check again.",
    )


def lock_refusal(root: Path = Path(".")) -> Refusal | None:
    """dvc.lock against the files on disk and against git HEAD's (reproduce's check too)."""
    found = check_lock(root)
    if found is None:
        return Refusal(
            "there is no dvc.lock: the run was never recorded.",
            (),
            "Run it (dvc repro), commit dvc.lock, then check again.",
        )
    lines = [f"{d.path}: md5 {d.found}, dvc.lock records {d.expected}" for d in found.drifted]
    if found.recomputed:
        shown = ", ".join(d.path for d in found.recomputed[:3])
        more = len(found.recomputed) - 3
        lines.append(
            f"dvc.lock: {len(found.recomputed)} output(s) recorded otherwise than in git HEAD's "
            f"dvc.lock ({shown}{f', and {more} more' if more > 0 else ''}): the run was "
            "recomputed since it was committed"
        )
    if not lines:
        return None
    return Refusal(
        "the outputs are not the run dvc.lock and git HEAD's dvc.lock record (the check "
        "python -m losona.reproduce applies):",
        tuple(lines),
        "Get the recorded outputs back (dvc checkout), or record and commit the new run "
        "(dvc repro; git add dvc.lock && git commit); outputs of stages dvc.yaml no longer "
        "has (the dynamic extension turned off): python -m losona.dynamic.prune_lock. Then "
        "check again.",
    )


def default_remote(root: Path = Path(".")) -> str | None:
    """The name of the default DVC remote, None where none is set."""
    remote = run_in(root, [*DVC, "remote", "default"])
    return (remote.stdout.strip() or None) if remote.returncode == 0 else None


def remote_refusal(root: Path = Path(".")) -> Refusal | None:
    """Outputs the default DVC remote lacks, where one is set."""
    name = default_remote(root)
    if name is None:
        return None  # no remote: how the data travels is the user's choice (docs)
    status = dvc_json(
        ["status", "--cloud"], root, dict, f"dvc status --cloud could not reach remote '{name}'"
    )
    lines = sorted(
        f"{path} ({how})"
        for stage in status.values()
        for change in stage
        if isinstance(change, dict)
        for path, how in change.get("changed outs", {}).items()
    ) or sorted(f"{path} ({how})" for path, how in status.items() if isinstance(how, str))
    if not lines:
        return None
    return Refusal(
        f"DVC remote '{name}' lacks {len(lines)} output(s), so no one else can pull the run:",
        tuple(lines),
        "Send them: dvc push, then check again.",
    )


def refusals(status: Mapping[str, Sequence[Any]], root: Path = Path(".")) -> list[Refusal]:
    """Every reason the run here may not be published, the stale stages first."""
    found = []
    if status:
        found.append(
            Refusal(
                f"dvc status is not clean: {len(status)} stage(s) are not up to date with what "
                "they read, so the files are not the run they claim to be:",
                tuple(describe(status, root)),
                "Rerun them (dvc repro), or undo the change (git checkout HEAD -- <file>; a new "
                "file the sweep does not need: move it out of the folder), then check again.",
            )
        )
    checks = (git_refusal, lock_refusal, remote_refusal)
    found.extend(refusal for check in checks if (refusal := check(root)) is not None)
    return found


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Say whether the run here may be published; the exit status says it too."""
    argparse.ArgumentParser(
        prog="python -m losona.publishable",
        description=(
            "Say whether the run in this repository may be published: dvc status clean, "
            "every file it rests on committed in git, dvc.lock matching the outputs and git "
            "HEAD, and the outputs pushed to the DVC remote where one is set. Exit 0: yes; "
            "3: no, with each reason and its mend; 2: no DVC pipeline here, or DVC failed."
        ),
    ).parse_args(argv)
    try:
        found = refusals(dvc_status())
    except LosonaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    if not found:
        out(
            "publishable: yes. dvc status is clean: every stage is up to date with its inputs; "
            "git holds, committed, every file the run rests on and records (dvc.lock, the "
            "configs, .dvc/config, the metrics, provenance.json); the outputs are dvc.lock's"
            + ("" if default_remote() is None else ", and the DVC remote holds them")
            + "."
        )
        return 0
    for number, refusal in enumerate(found):
        out(f"publishable: no. {refusal.reason}" if number == 0 else f"Also, {refusal.reason}")
        for line in refusal.lines[:MAX_LINES]:
            out(f"  {line}")
        if len(refusal.lines) > MAX_LINES:
            out(f"  ... and {len(refusal.lines) - MAX_LINES} more")
        out(refusal.advice)
    return NOT_CLEAN_EXIT
