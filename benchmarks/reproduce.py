"""Checking a published run: how long `python -m losona.reproduce` takes, and what it checks.

    python benchmarks/reproduce.py                          # 3 rounds on this checkout
    python benchmarks/reproduce.py --baseline /tmp/old      # and another checkout, in turn

It makes the run tests/test_publish.py publishes (the 44 bundled scenarios, K = 3, two
conditions, the lexicon judge and an LLM judge, subject and judge served by the repository's
own test server on 127.0.0.1), in a copy of this checkout with its own HOME, with
`dvc repro`, commits it, and then times `python -m losona.reproduce` there, round after
round. With --baseline, that checkout's `losona/` takes the copy's place in every other
round (A B A B ...), so that a machine getting busier or quieter affects both alike; the
run's files are the same for both. It prints each round's wall time, the last line each
printed (values and files checked) and, with a baseline, the median ratio.
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

from losona.testing.openai_server import OpenAIServer
from losona.testing.published_sweep import write_published_sweep
from losona.testing.scripted_judge import ScriptedJudge

REPO = Path(__file__).resolve().parents[1]


def run(*command: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 3):
        sys.exit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def published_run(root: Path, server: OpenAIServer, env: dict[str, str]) -> Path:
    """The test_publish sweep, run and committed in a copy of this checkout."""
    repo = root / "run"
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, repo / name)
    write_published_sweep(repo, server)
    git = ["git", "-c", "user.email=b@example.org", "-c", "user.name=bench"]
    run(*git, "init", "-q", cwd=repo, env=env)
    run(sys.executable, "-m", "dvc", "repro", cwd=repo, env=env)
    run(*git, "add", "-A", cwd=repo, env=env)
    run(*git, "commit", "-qm", "a published run", cwd=repo, env=env)
    return repo


def timed(repo: Path, env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    out = run(sys.executable, "-m", "losona.reproduce", cwd=repo, env=env)
    return time.perf_counter() - started, out.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout, timed in turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch, OpenAIServer(reply=ScriptedJudge()) as server:
        root = Path(scratch)
        home = root / "home"
        home.mkdir()
        env = {**os.environ, "HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        # The stages and the check import the copy's own code, not an installed one.
        env["PYTHONPATH"] = str(root / "run")
        repo = published_run(root, server, env)
        print(f"the run: {server.request_count} requests to the test server")
        mine = root / "losona-this"
        shutil.copytree(repo / "losona", mine)
        checkouts = {"this": mine}
        if args.baseline is not None:
            checkouts["baseline"] = args.baseline / "losona"
        times: dict[str, list[float]] = {name: [] for name in checkouts}
        for round_ in range(args.rounds):
            for name, code in checkouts.items():
                shutil.rmtree(repo / "losona")
                shutil.copytree(code, repo / "losona")
                seconds, last = timed(repo, env)
                times[name].append(seconds)
                print(f"round {round_ + 1}, {name}: {seconds:.1f} s; {last}")
        for name, values in times.items():
            print(f"{name}: median {statistics.median(values):.1f} s over {len(values)} rounds")
        if args.baseline is not None:
            ratios = [a / b for a, b in zip(times["this"], times["baseline"], strict=True)]
            print(
                f"this / baseline, per round: {', '.join(f'{r:.2f}' for r in ratios)}; "
                f"median {statistics.median(ratios):.2f}"
            )


if __name__ == "__main__":
    main()
