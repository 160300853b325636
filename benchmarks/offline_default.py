"""Wall time of the full offline default: `dvc repro` from scratch, as a new user runs it.

    python benchmarks/offline_default.py           # about a quarter of an hour on 2 cores
    python benchmarks/offline_default.py --warm    # then `dvc repro --force` from the cache

It copies the repository's files (tracked and new, not ignored) to a temporary folder,
points the call cache at an empty file there, runs `dvc repro` (the bundled scenarios x 4
conditions x 3 trials on the embedded smollm2, then the judge, aggregate and plot
stages), and prints the wall time of the whole run and of each stage, and what the
sample stages did (from their run logs). Target: 15 minutes or less on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def copy_repo(target: Path) -> None:
    """The repository's files as a user's fresh clone would have them (no data, no lock)."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file() and name != "dvc.lock":
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)


def repro(copy: Path, *args: str) -> tuple[float, float, dict[str, float]]:
    """Run `dvc repro`; (wall seconds, CPU seconds, seconds per stage in the order run)."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(copy),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DVC_NO_ANALYTICS": "1",
    }
    started = time.perf_counter()
    cpu = _children_cpu()
    child = subprocess.Popen(
        [sys.executable, "-m", "dvc", "repro", *args],
        cwd=copy,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert child.stdout is not None
    starts: list[tuple[str, float]] = []
    lines = []
    for line in child.stdout:
        lines.append(line)
        found = re.search(r"Running stage '([^']+)'", line)
        if found:
            starts.append((found.group(1), time.perf_counter()))
    if child.wait() != 0:
        sys.exit("dvc repro failed:\n" + "".join(lines[-40:]))
    total = time.perf_counter() - started
    ends = [t for _, t in starts[1:]] + [started + total]
    stages = {name: end - begin for (name, begin), end in zip(starts, ends, strict=True)}
    return total, _children_cpu() - cpu, stages


def _children_cpu() -> float:
    # User and system time of every finished descendant: DVC and each stage it ran.
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def report(title: str, total: float, cpu: float, stages: dict[str, float]) -> None:
    print(
        f"{title}: {total / 60:.1f} min wall ({total:.0f} s), {cpu / 60:.1f} min CPU "
        f"over all processes (a busy machine shows as wall time well above CPU time / cores)"
    )
    for name, seconds in stages.items():
        print(f"  {name:<40} {seconds:7.1f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--warm", action="store_true", help="also time dvc repro --force")
    parser.add_argument(
        "--keep-cache",
        type=Path,
        metavar="FILE",
        help="write the call cache to FILE (which must not exist) and keep it, e.g. to try "
        "a second judge on the replies afterwards without sampling again",
    )
    args = parser.parse_args()
    if args.keep_cache is not None and args.keep_cache.exists():
        sys.exit(f"{args.keep_cache} exists: the run would not start from an empty cache")
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "repo"
        copy_repo(copy)
        paths = copy / "conf" / "paths" / "default.yaml"
        cache = (args.keep_cache or Path(tmp) / "calls.sqlite").resolve()
        paths.write_text(re.sub(r"call_cache: .*", f"call_cache: {cache}", paths.read_text()))
        print(f"dvc repro on a fresh copy in {copy}, empty call cache, {os.cpu_count()} CPUs")
        report("cold run", *repro(copy))
        logs = sorted((copy / "data" / "responses").glob("*/*.log.json"))
        calls = [json.loads(p.read_text()) for p in logs]
        made = sum(c["completed"] for c in calls)
        sampling = sum(c["wall_s"] for c in calls)
        print(
            f"sampling: {made} calls in {sampling:.0f} s of calls ({sampling / max(made, 1):.2f} s "
            f"a call), {sum(c['prompt_tokens_this_run'] for c in calls)} prompt tokens, "
            f"{sum(c['completion_tokens_this_run'] for c in calls)} completion tokens, "
            f"{sum(c['failed'] for c in calls)} failed"
        )
        if args.warm:
            lock = (copy / "dvc.lock").read_bytes()
            report("warm rerun (dvc repro --force, every call from the cache)", *repro(copy, "-f"))
            same = (copy / "dvc.lock").read_bytes() == lock
            print(f"dvc.lock unchanged by the warm rerun: {same}")


if __name__ == "__main__":
    main()
