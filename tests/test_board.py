"""The board (board/, losona/board/): published runs verified as data, ranked like with like.

One golden run is published (a bare git repository, a local-directory DVC remote) and the
others are derived from it by small edits, each published to a bare repository of its own:
a tampered run (one verdict flipped, dvc.lock recorded again), a run at K = 2 (its subject
the test server, which stays up and counts every request), a hostile run, and the good run
again with a remote that lacks a file. A clone of a copy of board/ lists them and runs
`dvc repro` with an empty HOME.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import REPO, GoldenRun, loaded_dom, needs_chromium, run_dvc

from losona.board.remote import Remote
from losona.board.settings import Submission, VerifySettings
from losona.board.tree import Refused
from losona.board.verify import verify
from losona.core.files import write_parquet
from losona.testing.openai_server import OpenAIServer

# One worker makes the published runs and the board, once per test run.
pytestmark = pytest.mark.xdist_group("board")

UP_TO_DATE = "Data and pipelines are up to date."
VERDICTS = "data/verdicts/lexicon/smollm2/naive.parquet"
RESPONSES = "data/responses/smollm2/naive.parquet"
# The value the hostile run's label interpolates from the board's environment.
SECRET_VAR, SECRET = "LOSONA_BOARD_SECRET", "s3cr3t-0f-the-b0ard-machine"
CANARY = "a file outside every tree: board-canary-7f3a"


def git(*args: str, cwd: Path) -> str:
    """git with a fixed identity (the machines here have an empty HOME)."""
    identity = ["-c", "user.email=test@example.org", "-c", "user.name=test"]
    done = subprocess.run(
        ["git", *identity, *args], cwd=cwd, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"git {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def machine(home: Path, **extra: str) -> dict[str, str]:
    """A machine's environment: its own empty HOME, no provider key."""
    home.mkdir(parents=True, exist_ok=True)
    kept = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return {**kept, "HOME": str(home), **extra}


@dataclass(frozen=True)
class Runs:
    """The published runs (bare repositories), their shared remote, and the scratch root."""

    root: Path
    remote: Path
    bare: dict[str, Path]
    flipped: tuple[str, bool]  # the flipped verdict's scenario, and its value before the flip
    partial_remote: Path  # the good run's remote, less its RESPONSES
    marker: Path  # what the hostile run's command would write


def publish(repo: Path, bare: Path, env: dict[str, str], message: str) -> Path:
    """Commit the run, push its outputs to its DVC remote and its tag `run` to `bare`."""
    git("add", "-A", cwd=repo)
    git("commit", "-qm", message, cwd=repo)
    git("tag", "-f", "run", cwd=repo)
    git("init", "-q", "--bare", str(bare), cwd=repo.parent)
    git("push", "-q", str(bare), "HEAD:refs/heads/main", "run", cwd=repo)
    run_dvc("push", cwd=repo, env=env)
    return bare


def flip_a_verdict(repo: Path) -> tuple[str, bool]:
    """One scored verdict of the judge's table turned over; its scenario and old value."""
    path = repo / VERDICTS
    verdicts = pl.read_parquet(path)
    index = verdicts["complies"].is_not_null().arg_true()[0]
    before = verdicts["complies"][index]
    flipped = verdicts.with_columns(
        complies=pl.when(pl.int_range(pl.len()) == index)
        .then(pl.lit(not before))
        .otherwise("complies")
    )
    write_parquet(flipped, path)
    return verdicts["scenario_id"][index], before


def make_hostile(repo: Path, marker: Path, outside: Path) -> None:
    """A command that writes outside the tree, ../outside in dvc.lock, a symlink to
    /etc/passwd, and a label that interpolates the board machine's environment."""
    pipeline = repo / "dvc.yaml"
    text = pipeline.read_text()
    assert "cmd: python stages/render.py" in text
    pipeline.write_text(
        text.replace(
            "cmd: python stages/render.py", f"cmd: touch {marker} && python stages/render.py"
        )
    )
    lock = yaml.safe_load((repo / "dvc.lock").read_text())
    digest = hashlib.md5(outside.read_bytes(), usedforsecurity=False).hexdigest()
    lock["stages"]["render"]["deps"].append({"path": "../outside", "md5": digest, "size": 1})
    (repo / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False))
    (repo / "passwd").symlink_to("/etc/passwd")
    model = repo / "conf" / "model" / "smollm2.yaml"
    model.write_text(
        model.read_text().replace(
            "label: SmolLM2-135M (offline)", f"label: ${{oc.env:{SECRET_VAR}}}"
        )
    )


@pytest.fixture(scope="module")
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


@pytest.fixture(scope="module")
def runs(
    golden_run: GoldenRun, server: OpenAIServer, tmp_path_factory: pytest.TempPathFactory
) -> Runs:
    root = tmp_path_factory.mktemp("runs")
    env = machine(root / "home")
    remote = root / "dvc-remote"
    base = golden_run.copy(root / "good")
    run_dvc("remote", "add", "--default", "storage", str(remote), cwd=base, env=env)
    bare = {"good": publish(base, root / "good.git", env, "the run, published")}

    tampered = shutil.copytree(base, root / "tampered", symlinks=True)
    flipped = flip_a_verdict(tampered)
    run_dvc("commit", "--force", cwd=tampered, env=env)
    bare["tampered"] = publish(tampered, root / "tampered.git", env, "one verdict flipped")

    # K = 2, the subject served by the test server: rerun with `dvc repro`, which calls it.
    k2 = shutil.copytree(base, root / "k2", symlinks=True)
    settings = k2 / "conf" / "run.yaml"
    text = settings.read_text()
    assert "  trials: 1 " in text
    settings.write_text(text.replace("  trials: 1 ", "  trials: 2 "))
    subject = server.model_config("smollm2", label="Test server")  # marked by the pipeline
    (k2 / "conf" / "model" / "smollm2.yaml").write_text(yaml.safe_dump(subject))
    run_dvc("repro", cwd=k2, env=env)
    assert server.request_count > 0
    bare["k2"] = publish(k2, root / "k2.git", env, "K = 2")

    hostile = shutil.copytree(base, root / "hostile", symlinks=True)
    marker = root / "marker"
    (root / "outside").write_text(CANARY)
    make_hostile(hostile, marker, root / "outside")
    git("add", "-A", cwd=hostile)
    git("commit", "-qm", "hostile", cwd=hostile)
    git("init", "-q", "--bare", str(root / "hostile.git"), cwd=root)
    git("push", "-q", str(root / "hostile.git"), "HEAD:refs/heads/main", cwd=hostile)
    bare["hostile"] = root / "hostile.git"

    # The good run again, its outputs on a remote that lacks one of them.
    partial = shutil.copytree(remote, root / "partial-remote")
    lock = yaml.safe_load((base / "dvc.lock").read_text())
    [md5] = {
        o["md5"]
        for s in lock["stages"].values()
        for o in s.get("outs", [])
        if o["path"] == RESPONSES
    }
    (partial / "files" / "md5" / md5[:2] / md5[2:]).unlink()
    return Runs(root, remote, bare, flipped, partial, marker)


@dataclass(frozen=True)
class Board:
    """A board's clone after `dvc repro`, what it printed, and the machine it ran on."""

    origin: Path
    clone: Path
    env: dict[str, str]
    repro: str
    requests: int  # the test server's count before the board's repro

    def report(self, name: str) -> dict[str, object]:
        """What verify wrote of the submission `name`."""
        report: dict[str, object] = json.loads(
            (self.clone / "reports" / "verify" / f"{name}.json").read_text()
        )
        return report


def submissions(runs: Runs) -> dict[str, dict[str, str]]:
    entries = {name: {"repo": str(bare), "rev": "run"} for name, bare in runs.bare.items()}
    entries["hostile"]["rev"] = "main"
    entries["missing"] = {**entries["good"], "remote": str(runs.partial_remote)}
    return entries


@pytest.fixture(scope="module")
def board(runs: Runs, server: OpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Board:
    root = tmp_path_factory.mktemp("board")
    origin = shutil.copytree(REPO / "board", root / "origin")
    for stale in origin.glob("rows/*.parquet"):
        stale.unlink()
    (origin / "submissions.yaml").write_text(
        yaml.safe_dump({"submissions": submissions(runs)}, sort_keys=False)
    )
    git("init", "-q", cwd=origin)
    git("add", "-A", cwd=origin)
    git("commit", "-qm", "a board of five runs", cwd=origin)
    clone = root / "clone"
    git("clone", "-q", str(origin), str(clone), cwd=root)
    tmp = root / "tmp"
    tmp.mkdir()
    env = machine(root / "home", **{SECRET_VAR: SECRET, "TMPDIR": str(tmp)})
    requests = server.request_count
    made = run_dvc("repro", cwd=clone, env=env, root=REPO)
    return Board(origin, clone, env, made.stdout + made.stderr, requests)


def rows(board: Board) -> pl.DataFrame:
    return pl.read_parquet(board.clone / "reports" / "board.parquet")


def verdicts(board: Board) -> dict[str, bool]:
    table = rows(board).unique("submission")
    return dict(zip(table["submission"], table["verified"], strict=True))


@pytest.mark.slow
def test_each_submission_is_verified_or_refused_alone_with_no_model_call(
    board: Board, runs: Runs, server: OpenAIServer
) -> None:
    assert server.request_count == board.requests, board.repro
    assert verdicts(board) == {
        "good": True,
        "tampered": False,
        "k2": True,
        "hostile": False,
        "missing": False,
    }, board.repro
    table = rows(board)
    good = table.filter(pl.col("submission") == "good").row(0, named=True)
    assert good["k"] == 1 and good["acc_at_k"] is not None and good["reason"] is None
    # The flipped verdict is named: its file, its scenario, the value published and found.
    scenario, published = runs.flipped
    reason = board.report("tampered")["reason"]
    assert isinstance(reason, str)
    assert VERDICTS in reason and scenario in reason, reason
    # expected: what the board's judge gives again; found: what the run published.
    assert f"complies: expected {published}, found {not published}" in reason, reason
    lacking = board.report("missing")["reason"]
    assert isinstance(lacking, str) and lacking.startswith(f"{RESPONSES}: not in the remote")
    page = (board.clone / "reports" / "index.html").read_text()
    for name in ("tampered", "hostile", "missing"):
        [line] = [r for r in table.filter(pl.col("submission") == name)["reason"]]
        assert "\n" not in line and line in page.replace("&#39;", "'"), (name, line)


@pytest.mark.slow
def test_runs_that_differ_only_in_k_are_grouped_apart_and_the_page_says_so(board: Board) -> None:
    verified = rows(board).filter(pl.col("verified"))
    groups = verified.group_by("k").agg(pl.col("submission").unique().sort())
    assert sorted(groups.iter_rows()) == [(1, ["good"]), (2, ["k2"])]
    page = (board.clone / "reports" / "index.html").read_text()
    assert page.count("they differ only in K") == 2, page


@pytest.mark.slow
def test_a_hostile_submission_runs_nothing_reads_nothing_outside_and_leaks_nothing(
    board: Board, runs: Runs
) -> None:
    assert not runs.marker.exists()
    reason = board.report("hostile")["reason"]
    assert isinstance(reason, str) and reason, board.repro
    passwd = Path("/etc/passwd").read_text().splitlines()[0]
    for folder in (board.clone, Path(board.env["TMPDIR"])):
        for path in (p for p in folder.rglob("*") if p.is_file()):
            data = path.read_bytes()
            assert SECRET.encode() not in data, path
            assert CANARY.encode() not in data and passwd.encode() not in data, path


@pytest.mark.slow
def test_a_new_submission_runs_only_its_verify_stage_and_the_board(
    board: Board, runs: Runs, tmp_path: Path
) -> None:
    clone = shutil.copytree(board.clone, tmp_path / "board", symlinks=True)
    assert UP_TO_DATE in run_dvc("status", cwd=clone, env=board.env, root=REPO).stdout
    listed = yaml.safe_load((clone / "submissions.yaml").read_text())
    listed["submissions"]["late"] = {"repo": str(runs.bare["good"]), "rev": "no-such-tag"}
    (clone / "submissions.yaml").write_text(yaml.safe_dump(listed, sort_keys=False))
    made = run_dvc("repro", cwd=clone, env=board.env, root=REPO).stdout
    ran = re.findall(r"Running stage '([^']+)'", made)
    assert ran == ["verify@late", "board"], made
    assert UP_TO_DATE in run_dvc("status", cwd=clone, env=board.env, root=REPO).stdout
    late = pl.read_parquet(clone / "rows" / "late.parquet").row(0, named=True)
    assert late["reason"] == f"revision 'no-such-tag' is not in {runs.bare['good']}"


# Each untrusted input alone, on a small synthetic tree: each is refused before any recheck,
# with its one-line reason, so these run in the test's process in well under a second.
GOOD_OUT = b"a recorded output\n"
BOUND = VerifySettings(max_file_bytes=1 << 20, timeout_s=60)


def md5_of(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def small_tree() -> dict[str, object]:
    """A tree the board reads as far as its recheck: a lock, a pipeline, paths and a model."""
    lock = {
        "schema": "2.0",
        "stages": {
            "render": {
                "cmd": "python stages/render.py",
                "deps": [{"path": "stages/render.py", "md5": md5_of(b""), "size": 0}],
                "outs": [{"path": "data/out.txt", "md5": md5_of(GOOD_OUT), "size": 18}],
            }
        },
    }
    return {
        "dvc.lock": lock,
        "dvc.yaml": {"stages": {"render": {"cmd": "python stages/render.py"}}},
        "conf/paths/default.yaml": {"paths": {}},
        "conf/model/m.yaml": {"name": "m", "label": "M"},
        "data/out.txt": GOOD_OUT,
    }


def bare_repo(where: Path, files: dict[str, object], link: str | None = None) -> Path:
    """`files` (YAML nodes dumped, bytes as they are) committed and pushed to a bare repo."""
    work = where / "work"
    for name, content in files.items():
        path = work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(
            content if isinstance(content, bytes) else yaml.safe_dump(content).encode()
        )
    if link:
        (work / "passwd").symlink_to(link)
    git("init", "-q", cwd=work)
    git("add", "-A", cwd=work)
    git("commit", "-qm", "a run", cwd=work)
    git("init", "-q", "--bare", str(where / "run.git"), cwd=where)
    git("push", "-q", str(where / "run.git"), "HEAD:refs/heads/main", cwd=work)
    return where / "run.git"


def refusal(
    tmp_path: Path,
    files: dict[str, object],
    *,
    link: str | None = None,
    rev: str = "main",
    remote: str | None = None,
    settings: VerifySettings = BOUND,
) -> str:
    """verify's reason for the tree `files`, which it must not verify."""
    repo = bare_repo(tmp_path / "run", files, link=link)
    (tmp_path / "work").mkdir()
    report = verify(Submission("run", str(repo), rev, remote), settings, tmp_path / "work")
    assert report["verified"] is False
    reason = report["reason"]
    assert isinstance(reason, str) and "\n" not in reason
    return reason


def with_lock_out(files: dict[str, object], **out: object) -> dict[str, object]:
    lock = files["dvc.lock"]
    assert isinstance(lock, dict)
    lock["stages"]["render"]["outs"].append(out)
    return files


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda f: {
                **f,
                "dvc.yaml": {
                    "stages": {"render": {"cmd": "touch /tmp/marker && python stages/render.py"}}
                },
            },
            "dvc.yaml, stage 'render': its command 'touch /tmp/marker && python stages/render.py' "
            "names '/tmp/marker', outside the run's tree",
        ),
        (
            lambda f: {
                **f,
                "dvc.yaml": {
                    "stages": {"r": {"foreach": [1], "do": {"cmd": "python stages/r.py > ../log"}}}
                },
            },
            "dvc.yaml, stage 'r': its command 'python stages/r.py > ../log' names '../log'",
        ),
        (
            lambda f: {
                **f,
                "dvc.yaml": {"stages": {"r": {"cmd": "python stages/r.py x=$(cat ~/.netrc)"}}},
            },
            "names '~/.netrc)', outside the run's tree",
        ),
        (
            lambda f: {
                **f,
                "dvc.yaml": {"stages": {"r": {"cmd": "python stages/r.py; rm -rf data"}}},
            },
            "its command 'python stages/r.py; rm -rf data' uses the shell (';')",
        ),
        (
            lambda f: with_lock_out(f, path="../outside", md5=md5_of(b"x")),
            "dvc.lock, stage 'render': names '../outside', outside the run's tree",
        ),
        (
            lambda f: with_lock_out(f, path="/etc/passwd", md5=md5_of(b"x")),
            "dvc.lock, stage 'render': names '/etc/passwd', outside the run's tree",
        ),
        (
            lambda f: {
                **f,
                "conf/model/m.yaml": {"name": "m", "label": f"${{oc.env:{SECRET_VAR}}}"},
            },
            f"conf/model/m.yaml: 'label' interpolates '${{oc.env:{SECRET_VAR}}}'; a board "
            "resolves no interpolation a submission brings",
        ),
        (lambda f: {**f, "dvc.lock": b"stages: [unclosed"}, "malformed YAML: dvc.lock ("),
        (
            lambda f: {**f, "data/out.txt": b"other bytes"},
            "data/out.txt: git holds other bytes than the md5 dvc.lock records",
        ),
    ],
    ids=[
        "command-outside",
        "foreach-redirect",
        "substitution",
        "shell",
        "lock-dotdot",
        "lock-absolute",
        "label-env",
        "malformed-lock",
        "other-bytes",
    ],
)
def test_each_untrusted_input_costs_the_run_its_row_with_one_reason(
    edit: object, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_VAR, SECRET)
    assert callable(edit)
    reason = refusal(tmp_path, edit(small_tree()))
    assert expected in reason, reason
    assert SECRET not in reason


def test_a_symlink_a_missing_revision_and_an_oversized_file_are_refused(tmp_path: Path) -> None:
    assert refusal(tmp_path / "a", small_tree(), link="/etc/passwd") == (
        "passwd: a symlink; a submission's tree is read as plain files only"
    )
    assert refusal(tmp_path / "b", small_tree(), rev="v9").startswith("revision 'v9' is not in ")
    small = VerifySettings(max_file_bytes=8, timeout_s=60)
    assert "bytes, over the board's bound of 8" in refusal(
        tmp_path / "c", small_tree(), settings=small
    )


def test_a_folder_listing_naming_a_file_outside_the_tree_is_refused(tmp_path: Path) -> None:
    listing = json.dumps([{"relpath": "../../outside", "md5": md5_of(b"x")}]).encode()
    remote = tmp_path / "remote"
    digest = md5_of(listing)
    target = remote / "files" / "md5" / digest[:2] / f"{digest[2:]}.dir"
    target.parent.mkdir(parents=True)
    target.write_bytes(listing)
    files = with_lock_out(small_tree(), path="data/folder", md5=f"{digest}.dir")
    reason = refusal(tmp_path, files, remote=str(remote))
    assert (
        reason
        == "the listing of data/folder: names 'data/folder/../../outside', outside the run's tree"
    )


@pytest.fixture
def http_remote(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A folder served over HTTP by a server in this process, as a DVC HTTP remote is."""
    root = tmp_path / "served"
    root.mkdir()
    handler = functools.partial(QuietHandler, directory=str(root))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as httpd:
        thread = threading.Thread(target=httpd.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{httpd.server_address[1]}/store", root / "store"
        httpd.shutdown()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def test_an_http_remote_is_read_held_to_md5_and_a_missing_file_named(
    http_remote: tuple[str, Path], tmp_path: Path
) -> None:
    url, store = http_remote
    data = b"an output on an HTTP remote\n"
    digest = md5_of(data)
    stored = store / "files" / "md5" / digest[:2] / digest[2:]
    stored.parent.mkdir(parents=True)
    stored.write_bytes(data)
    remote = Remote(url, max_bytes=1 << 20)
    remote.fetch(digest, tmp_path / "got", "data/out.txt")
    assert (tmp_path / "got").read_bytes() == data
    other = md5_of(b"other")
    with pytest.raises(Refused, match=rf"^data/x.txt: not in the remote {url} \(md5 {other}\)$"):
        remote.fetch(other, tmp_path / "x", "data/x.txt")
    stored.write_bytes(b"tampered")
    with pytest.raises(
        Refused, match=rf"^data/out.txt: the remote's file has md5 \w+, dvc.lock records {digest}$"
    ):
        remote.fetch(digest, tmp_path / "y", "data/out.txt")
    with pytest.raises(Refused, match=r"^data/out.txt: over the board's bound of 4 bytes"):
        Remote(url, max_bytes=4).fetch(digest, tmp_path / "z", "data/out.txt")
    with pytest.raises(Refused, match=r"^remote http://127.0.0.1:9/store does not answer"):
        Remote("http://127.0.0.1:9/store", max_bytes=4).fetch(
            digest, tmp_path / "w", "data/out.txt"
        )


@pytest.mark.slow
@needs_chromium
def test_chromium_shows_the_groups_the_marks_and_the_reasons_at_1280_px(
    board: Board, tmp_path: Path
) -> None:
    # A copy of the page with a probe that records, after load, what Chromium laid out.
    probe = (
        "<script>addEventListener('load', () => {"
        "const shown = e => e.getBoundingClientRect().width > 0;"
        "const b = document.body.dataset;"
        "b.groups = document.querySelectorAll('section[id^=group-]').length;"
        "b.notes = [...document.querySelectorAll('p.banner')].filter(shown).length;"
        "b.doubles = document.querySelectorAll('tr.double').length;"
        "b.reasons = [...document.querySelectorAll('td.warn')].filter(shown).length;"
        "b.wide = document.documentElement.scrollWidth > innerWidth ? 1 : 0;"
        "});</script>"
    )
    page = (board.clone / "reports" / "index.html").read_text(encoding="utf-8")
    dom = loaded_dom(
        page.replace("</body>", probe + "</body>"), tmp_path, "--window-size=1280,2000"
    )
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None
    laid_out = dict(re.findall(r'data-(\w+)="(\d+)"', body.group(1)))
    # Two groups (K = 1, K = 2), each saying why the other is apart; the K = 2 run's subject
    # is the test server, marked; three reasons; nothing wider than the window.
    assert laid_out == {"groups": "2", "notes": "2", "doubles": "1", "reasons": "3", "wide": "0"}
