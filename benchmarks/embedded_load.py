"""The embedded model on a shared machine: one condition's sampling, idle and beside a load.

    python benchmarks/embedded_load.py                   # 10 scenarios, 2 rounds: ~5 minutes
    python benchmarks/embedded_load.py --scenarios 44    # the whole condition (132 calls)
    python benchmarks/embedded_load.py --code /path/to/other/checkout   # another version

Each run samples the first N bundled scenarios' prompts under one condition, K = 3 trials
each, through the model layer (`losona.models.complete`, as the sample stage does) with an
empty call cache, in a process of its own. "idle" runs it alone; "loaded" runs it beside
a background process that keeps one core busy (a Python busy loop). Runs alternate, idle
first, so a machine that gets busier or quieter over time affects both alike. It prints
every run's wall time and the ratio of the mean loaded time to the mean idle time.
Target: at most 2x with one of two cores busy, and no loss when idle.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from losona.models import CallOptions

REPO = Path(__file__).resolve().parents[1]
BUSY_LOOP = "while True: pass"


def worker(scenarios: int, condition: str, trials: int) -> None:
    """Sample in this process and print the wall time of the calls as JSON."""
    import yaml

    from losona.models import ModelSpec, Request, complete
    from losona.prompts.render import render_prompts
    from losona.scenarios.datasets import fetch_scenarios

    config = yaml.safe_load((REPO / "conf" / "model" / "smollm2.yaml").read_text())
    spec = ModelSpec.from_config(config)
    table = fetch_scenarios({"name": "bundled", "kind": "bundled"}).head(scenarios)
    prompts = render_prompts(table, [condition])["messages"].to_list()
    requests = [Request(messages=list(m), trial=t) for m in prompts for t in range(trials)]
    with tempfile.TemporaryDirectory() as scratch:
        started = time.perf_counter()
        replies = complete(spec, requests, CallOptions(cache_path=Path(scratch) / "calls.sqlite"))
        wall = time.perf_counter() - started
    assert all(r.ok for r in replies), [r.error for r in replies if not r.ok]
    print(json.dumps({"wall_s": wall, "calls": len(replies)}))


def run(code: Path, args: argparse.Namespace, loaded: bool) -> float:
    """One sampling run in a fresh process; its wall time in seconds."""
    load = subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) if loaded else None
    try:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--worker",
                "--scenarios",
                str(args.scenarios),
                "--condition",
                args.condition,
                "--trials",
                str(args.trials),
            ],
            env={**os.environ, "PYTHONPATH": str(code), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    finally:
        if load is not None:
            load.kill()
            load.wait()
    return float(json.loads(out.strip().splitlines()[-1])["wall_s"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument("--condition", default="naive")
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=2, help="idle/loaded pairs")
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout whose losona runs")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.scenarios, args.condition, args.trials)
        return
    calls = args.scenarios * args.trials
    print(
        f"{args.condition}: {args.scenarios} scenarios x {args.trials} trials = {calls} calls "
        f"on smollm2, code from {args.code}, {os.cpu_count()} cores"
    )
    times: dict[str, list[float]] = {"idle": [], "loaded": []}
    for round_ in range(1, args.rounds + 1):
        for mode in times:
            wall = run(args.code, args, loaded=mode == "loaded")
            times[mode].append(wall)
            print(
                f"round {round_} {mode:>6}: {wall:6.1f} s  ({wall / calls:.2f} s per call)",
                flush=True,
            )
    idle, loaded = statistics.fmean(times["idle"]), statistics.fmean(times["loaded"])
    print(
        f"mean idle {idle:.1f} s, mean loaded {loaded:.1f} s: loaded/idle = {loaded / idle:.2f}x"
        " (target: at most 2x)"
    )


if __name__ == "__main__":
    main()
