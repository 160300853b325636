"""The board's verify stage (`python -m losona.board.verify <name>`): one submission fetched
as data and rechecked by the board's own pipeline, with no model call. A submission's
problem costs only its own row (exit 0); exit 2 is only for the board's own files."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from losona.board.commands import check_commands
from losona.board.remote import Remote, fetch_outputs, remote_url, submitted_outputs
from losona.board.settings import (
    BoardFiles,
    Submission,
    VerifySettings,
    read_settings,
    read_submissions,
)
from losona.board.tables import ROW_SCHEMA
from losona.board.tree import Refused, Tree, clone_at, read_tree, write_file
from losona.core.cli import USER_ERROR_EXIT
from losona.core.config import option_file
from losona.core.contracts import table
from losona.core.errors import LosonaError
from losona.core.files import write_json, write_parquet

# Folders whose git-kept files the check reads (metrics, provenance, people's labels).
KEPT_IN_GIT = ("data/", "reports/")
# The config groups the stages read an option of by name (labels, families, conditions).
CONFIG_GROUPS = ("conf/model/", "conf/judge/", "conf/condition/")
PATHS_FILE = option_file("paths", "default").as_posix()
PIPELINE_FILE = "dvc.yaml"  # read only for its commands: it is never run
# Fields a page shows: an interpolation there is refused rather than kept as text.
SHOWN_FIELDS = ("name", "label")


def submission_tree(
    tree: Tree, settings: VerifySettings, root: Path
) -> list[tuple[str, str, bool]]:
    """What the check reads of the run's git tree, written into `root`; the outputs its
    dvc.lock records, each (path, md5, whether the remote holds it)."""
    bound = settings.max_file_bytes
    lock = _yaml_of(tree, "dvc.lock", bound)
    outputs = submitted_outputs(lock, tree)
    check_commands(lock, "dvc.lock")
    if PIPELINE_FILE in tree.files:
        check_commands(_yaml_of(tree, PIPELINE_FILE, bound), PIPELINE_FILE)
    write_file(root / "dvc.lock", tree.read("dvc.lock", bound))
    write_file(root / PATHS_FILE, tree.read(PATHS_FILE, bound))
    for path in tree.files:
        if path.startswith(KEPT_IN_GIT):
            write_file(root / path, tree.read(path, bound))
        elif path.startswith(CONFIG_GROUPS) and path.endswith(".yaml"):
            node = _yaml_of(tree, path, bound)
            write_file(root / path, yaml.safe_dump(as_plain_data(node, path)).encode())
    return outputs


def as_plain_data(node: Any, path: str) -> Any:
    """A submitted config with no interpolation left for OmegaConf to resolve: one in a field
    a page shows is refused; any other is kept as text (escaped)."""
    if isinstance(node, dict):
        for key in SHOWN_FIELDS:
            if isinstance(node.get(key), str) and "${" in node[key]:
                raise Refused(
                    f"{path}: '{key}' interpolates {node[key]!r}; a board resolves no "
                    "interpolation a submission brings"
                )
    return _escaped(node)


def _escaped(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _escaped(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_escaped(v) for v in node]
    if isinstance(node, str):
        return node.replace("${", "\\${")
    return node


def _yaml_of(tree: Tree, path: str, bound: int) -> Any:
    try:
        return yaml.safe_load(tree.read(path, bound))
    except yaml.YAMLError as exc:
        first = str(exc).strip().splitlines()[0]
        raise Refused(f"malformed YAML: {path} ({first})") from None


def scrubbed_environment(work: Path) -> dict[str, str]:
    """The recheck's environment: none of the board machine's variables, so no value of
    theirs can reach a file, whatever a submission interpolates."""
    for folder in ("home", "tmp", "matplotlib"):
        (work / folder).mkdir(exist_ok=True)
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(work / "home"),
        "TMPDIR": str(work / "tmp"),
        "MPLCONFIGDIR": str(work / "matplotlib"),
        "MPLBACKEND": "Agg",
        "LC_ALL": "C.UTF-8",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "GIT_CEILING_DIRECTORIES": str(work),
    }


def recheck(root: Path, work: Path, settings: VerifySettings) -> dict[str, Any]:
    """The run in `root` rechecked by the board's installed pipeline in a process of its own."""
    result = work / "outcome.json"
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-m", "losona.board.recheck", str(result)],
            cwd=root,
            env=scrubbed_environment(work),
            capture_output=True,
            text=True,
            timeout=settings.timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise Refused(f"the recheck took over {settings.timeout_s} s (verify.timeout_s)") from None
    if done.returncode != 0 or not result.is_file():
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise Refused(f"the recheck stopped: {last[:300]}")
    outcome: dict[str, Any] = json.loads(result.read_text(encoding="utf-8"))
    return outcome


def verify(submission: Submission, settings: VerifySettings, work: Path) -> dict[str, Any]:
    """The outcome of verifying one submission in the scratch folder `work`."""
    commit = None
    try:
        commit = clone_at(submission.repo, submission.rev, work / "git")
        tree = read_tree(work / "git", commit)
        root = work / "tree"
        outputs = submission_tree(tree, settings, root)
        bound = settings.max_file_bytes
        any_cached = any(cached for *_, cached in outputs)
        remote = Remote(remote_url(tree, submission.remote, bound), bound) if any_cached else None
        fetched = fetch_outputs(outputs, tree, remote, root, bound)
        outcome = recheck(root, work, settings)
        outcome["outputs_fetched"] = fetched
    except Exception as exc:  # a submission's failure is its row's alone
        reason = (
            str(exc)
            if isinstance(exc, Refused)
            else f"the board could not check it ({type(exc).__name__}: {exc})"
        )
        outcome = {"verified": False, "reason": reason, "differences": []}
    return {
        "submission": submission.name,
        "repo": submission.repo,
        "rev": submission.rev,
        "commit": commit,
        "checked_with": version("losona"),
        **outcome,
    }


def rows_of(report: dict[str, Any]) -> pl.DataFrame:
    """The submission's rows for the board: one per ranked cell, or one saying why none."""
    shared = {
        "submission": report["submission"],
        "commit": report["commit"],
        "verified": report["verified"],
        "reason": report.get("reason"),
    }
    return table([{**cell, **shared} for cell in report.get("rows") or [{}]], ROW_SCHEMA, [])


def main(argv: list[str] | None = None) -> int:
    """Verify the submission named on the command line; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m losona.board.verify",
        description="Verify one submission of board/submissions.yaml, in the board's folder.",
    )
    parser.add_argument("name", help="the submission's name in submissions.yaml")
    name = parser.parse_args(sys.argv[1:] if argv is None else argv).name
    files = BoardFiles()
    try:
        submissions = read_submissions()
        if name not in submissions:
            raise LosonaError(f"submissions.yaml: no submission '{name}'")
        settings = read_settings()
    except LosonaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    submission = submissions[name]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="losona-board-") as work:
        report = verify(submission, settings, Path(work))
    write_parquet(rows_of(report), files.rows(submission.name))
    report.pop("rows", None)
    write_json(report, files.verify_report(submission.name))
    verdict = "verified" if report["verified"] else f"not verified: {report['reason']}"
    seconds = time.monotonic() - started
    print(f"verify {submission.name}: {verdict} ({seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
