"""A board of N published runs: the time and peak memory of each verify stage and the board's.

    python benchmarks/board.py                    # N = 10 runs of 10 scenarios, K = 3
    python benchmarks/board.py --runs 50

It makes one run (the subject `local` served by the repository's test server, the naive
condition, the lexicon judge, `--scenarios` of the bundled set, K = `--trials`) in a copy of
this checkout with `dvc repro`, pushes its outputs to a local-directory DVC remote, and
publishes it N times: each a commit of its own (one line of the README changed) in a bare
git repository of its own, all sharing that remote. A copy of board/ lists the N runs; each
stage's command (`python -m losona.board.verify <name>`, then `python -m losona.board.page`)
is run as DVC runs it, in the board's folder, measured by `losona.testing.peak` (the peak
resident memory of the command and of every process it waited for: git, the recheck). It
prints each stage's wall time and peak memory, and the totals. Goals (issue #46): the board
stage's time linear in N, and no stage over 1 GB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from losona.testing.openai_server import OpenAIServer

REPO = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.email=b@example.org", "-c", "user.name=bench"]


def run(*command: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def copy_checkout(target: Path) -> Path:
    """This checkout's tracked files (no run's records), in a new git repository."""
    listed = run("git", "ls-files", "-z", cwd=REPO, env=dict(os.environ))
    for name in filter(None, listed.split("\0")):
        if (REPO / name).is_file() and not name.startswith(("dvc.lock", "board/")):
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)
    return target


def base_run(
    root: Path, server: OpenAIServer, args: argparse.Namespace, env: dict[str, str]
) -> Path:
    """The run every submission is published from, made and pushed to `root`/remote."""
    repo = copy_checkout(root / "run")
    sweep = {"models": ["local"], "conditions": ["naive"], "judges": ["lexicon"]}
    (repo / "params.yaml").write_text(yaml.safe_dump({"dataset": "bundled", "sweep": sweep}))
    model = server.model_config("local", label="Test server")
    (repo / "conf" / "model" / "local.yaml").write_text(yaml.safe_dump(model))
    settings = repo / "conf" / "run.yaml"
    text = settings.read_text()
    settings.write_text(
        text.replace("  trials: 3 ", f"  trials: {args.trials} ").replace(
            "  limit: null ", f"  limit: {args.scenarios} "
        )
    )
    run(*GIT, "init", "-q", cwd=repo, env=env)
    dvc = [sys.executable, "-m", "dvc"]
    run(*dvc, "remote", "add", "--default", "storage", str(root / "remote"), cwd=repo, env=env)
    run(*dvc, "repro", cwd=repo, env=env)
    run(*GIT, "add", "-A", cwd=repo, env=env)
    run(*GIT, "commit", "-qm", "the run", cwd=repo, env=env)
    run(*dvc, "push", cwd=repo, env=env)
    return repo


def publish(repo: Path, n: int, root: Path, env: dict[str, str]) -> dict[str, dict[str, str]]:
    """N submissions of the run, each a commit of its own in a bare repository of its own."""
    entries = {}
    for i in range(n):
        with (repo / "README.md").open("a") as readme:
            readme.write(f"\nSubmission {i}.\n")
        run(*GIT, "commit", "-qam", f"submission {i}", cwd=repo, env=env)
        bare = root / f"run-{i}.git"
        run(*GIT, "init", "-q", "--bare", str(bare), cwd=root, env=env)
        run(*GIT, "push", "-q", str(bare), "HEAD:refs/heads/main", cwd=repo, env=env)
        entries[f"run-{i:03d}"] = {"repo": str(bare), "rev": "main"}
    return entries


def measured(board: Path, env: dict[str, str], *command: str) -> tuple[float, float, str]:
    """A stage's command in the board's folder: its wall time (s), peak memory (MiB), output."""
    peak = board / "peak.txt"
    started = time.perf_counter()
    out = run(
        sys.executable, "-m", "losona.testing.peak", str(peak), "--", *command, cwd=board, env=env
    )
    seconds = time.perf_counter() - started
    return seconds, int(peak.read_text()) / 1024, out.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument("--trials", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, OpenAIServer() as server:
        root = Path(scratch)
        (root / "home").mkdir()
        env = {**os.environ, "HOME": str(root / "home"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        made = time.perf_counter()
        repo = base_run(root, server, args, {**env, "PYTHONPATH": str(root / "run")})
        entries = publish(repo, args.runs, root, env)
        print(
            f"made and published {args.runs} runs ({args.scenarios} scenarios, K = {args.trials}) "
            f"in {time.perf_counter() - made:.0f} s"
        )
        board = shutil.copytree(REPO / "board", root / "board")
        (board / "submissions.yaml").write_text(yaml.safe_dump({"submissions": entries}))
        requests = server.request_count
        seconds, peaks = [], []
        for name in entries:
            took, peak, said = measured(
                board, env, sys.executable, "-m", "losona.board.verify", name
            )
            seconds.append(took)
            peaks.append(peak)
            print(f"verify {name}: {took:5.1f} s, peak {peak:6.0f} MiB  ({said})")
        took, peak, said = measured(board, env, sys.executable, "-m", "losona.board.page")
        print(f"board: {took:.1f} s, peak {peak:.0f} MiB  ({said})")
        print(
            f"verify, per submission: median {statistics.median(seconds):.1f} s "
            f"(min {min(seconds):.1f}, max {max(seconds):.1f}), peak up to {max(peaks):.0f} MiB; "
            f"all {args.runs}: {sum(seconds):.0f} s; model calls while verifying: "
            f"{server.request_count - requests}"
        )


if __name__ == "__main__":
    main()
