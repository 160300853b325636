"""The pipeline at scale: N synthetic scenarios x 4 conditions x 3 trials, subject and judge.

    python benchmarks/scale.py                         # N = 1,000, 10,000: 15 minutes idle
    python benchmarks/scale.py --scenarios 200 1000    # a smoke check in a few minutes

For each N, in a fresh temporary folder with an empty call cache, it runs the stage
scripts as `dvc repro` would, one process per stage: render; sample for each condition
(a subject model served by the local test server, in its own process); judge for each
condition (an LLM judge served by the same server, whose `--judge` hook answers the
paper's judge prompt with valid verdict JSON); aggregate (10,000 bootstrap resamples).
At N = 10,000 that is 120,000 subject calls and 120,000 judge calls.

It prints, per stage: wall time, calls made, calls per second, and the peak resident
memory of its process (the stage's own, from the kernel's accounting of that child);
then how each stage's time per scenario compares with the smallest N, and how much a
sample or judge cell's peak memory grows per extra call between the smallest and the
largest N, beside what its own tables cost per call: the peak of a process that only
reads the cell's input tables as its stage does and writes its output tables again (a
cell must read and write them; polars decodes and encodes a row group whole).

Targets (docs/scale.md): every stage under 1 GB; a cell's memory growing by at most 2 KB
per call beyond its tables; the subject and judge calls at 200 calls/s or more (N =
10,000: 240,000 calls in 20 minutes); time per scenario flat as N grows, within noise.
The machine's cores are shared by the stage and the server, so calls per second is a
floor, not a ceiling; the load averages printed first and last say how shared the machine
was.

Synthetic scenarios are the bundled set's, repeated with distinct ids and channel
descriptions, so every prompt, and so every call, is distinct.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import yaml

from losona.core.contracts import PROMPT_SCHEMA, RESPONSE_SCHEMA, SCENARIO_SCHEMA
from losona.core.files import read_parquet, write_parquet
from losona.testing.synthetic import synthetic_scenarios

REPO = Path(__file__).resolve().parents[1]
CONDITIONS = ["naive", "elicitor_only", "style_adaptation", "norm_informed"]
TRIALS = 3
SUBJECT, JUDGE = "scale_subject", "scale_judge"
LATENCY_S = 0.01  # the server's answer time: low, as a well-provisioned endpoint's
CONCURRENCY = 64
MEMORY_TARGET_MB = 1024
GROWTH_TARGET_KB = 2.0  # a cell's peak memory per extra call, beyond its own tables
CALLS_PER_S_TARGET = 200  # 240,000 subject and judge calls in 20 minutes


def model_node(name: str, url: str) -> dict[str, object]:
    """A model config served by the test server: free, seeded per trial for the subject."""
    return {
        "name": name,
        "model": "hosted_vllm/scale-test",  # as a vLLM endpoint would be configured
        "api_base": url,
        "params": {"temperature": 0} if name == JUDGE else {"temperature": 0.9},
        "seed_per_trial": name == SUBJECT,
        "concurrency": CONCURRENCY,
        "timeout_s": 30,
        "price": {"input_usd_per_mtok": 0, "output_usd_per_mtok": 0},
    }


def workspace(root: Path, n: int, url: str) -> None:
    """A folder that looks like the repo root to the stage scripts, with N scenarios."""
    shutil.copytree(REPO / "conf", root / "conf")
    (root / "conf" / "model" / f"{SUBJECT}.yaml").write_text(
        yaml.safe_dump(model_node(SUBJECT, url))
    )
    judge = {"name": JUDGE, "kind": "llm", "max_cost_usd": None, "model": model_node(JUDGE, url)}
    (root / "conf" / "judge" / f"{JUDGE}.yaml").write_text(yaml.safe_dump(judge))
    sweep = {"models": [SUBJECT], "conditions": CONDITIONS, "judges": [JUDGE]}
    (root / "params.yaml").write_text(yaml.safe_dump({"dataset": "bundled", "sweep": sweep}))
    write_parquet(synthetic_scenarios(n), root / "data" / "scenarios.parquet")


@contextmanager
def server() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """The test server in its own process, answering judge prompts with verdicts."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "losona.testing.openai_server",
            "--port",
            "0",  # any free port, whatever LOSONA_TEST_SERVER_PORT the shell exports
            "--judge",
            "--latency",
            str(LATENCY_S),
        ],
        stdin=subprocess.DEVNULL,  # it serves until SIGTERM, not until stdin closes
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield child.stdout.readline().strip(), child
    finally:
        child.terminate()
        child.wait(timeout=30)


@dataclass
class Stage:
    """One stage's figures, summed over its processes (peak memory: the largest)."""

    name: str
    wall_s: float = 0.0
    calls: int = 0
    peak_mb: float = 0.0
    cell_calls: int = 0  # calls of one cell (sample, judge), the cell the tables are of
    tables_peak_mb: float = 0.0  # that cell's tables alone: see `tables_peak`


def tables_peak(root: Path, stage: str, condition: str) -> float:
    """The peak memory of a process that only reads a cell's input tables as its stage does,
    lets them go, and writes its output tables again: what the cell's own tables cost."""
    return peak_of(
        [sys.executable, __file__, "--tables", str(root), stage, condition], root, root / "t.log"
    )


def copy_tables(root: Path, stage: str, condition: str) -> None:
    """`tables_peak`'s child: the cell's reads and writes, nothing else."""
    data = root / "data"
    if stage == "sample":
        read_parquet(
            data / "prompts.parquet", PROMPT_SCHEMA, "render", pl.col("condition") == condition
        )
        outputs = [data / "responses" / SUBJECT, data / "calls" / "sample" / SUBJECT]
    else:
        read_parquet(data / "scenarios.parquet", SCENARIO_SCHEMA, "fetch")
        read_parquet(
            data / "responses" / SUBJECT / f"{condition}.parquet", RESPONSE_SCHEMA, "sample"
        )
        outputs = [data / "verdicts" / JUDGE / SUBJECT, data / "calls" / "judge" / JUDGE / SUBJECT]
    for folder in outputs:
        write_parquet(pl.read_parquet(folder / f"{condition}.parquet"), root / "copy.parquet")


def peak_of(command: list[str], root: Path, log: Path) -> float:
    """Run a command in `root`; its own peak resident memory in MB (it must succeed).

    Started through losona.testing.peak, so that this process's own memory is not counted
    against it (Linux gives a child the peak of the parent it was started from).
    """
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": str(REPO)}
    peak = root / "peak.txt"
    with log.open("w", encoding="utf-8") as out:
        status = subprocess.call(
            [sys.executable, "-m", "losona.testing.peak", str(peak), "--", *command],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    if status != 0:
        raise SystemExit(
            f"{' '.join(command)} failed (exit status {status}); the end of its output:\n"
            f"{log.read_text()[-3000:]}"
        )
    return int(peak.read_text()) / 1024  # KiB on Linux


def run_stage(
    root: Path, stage: Stage, script: str, *overrides: str, run_log: Path | None = None
) -> None:
    """Run `python stages/<script>.py` in `root`: add its wall time, peak RSS and calls."""
    started = time.perf_counter()
    peak_mb = peak_of(
        [
            sys.executable,
            str(REPO / "stages" / f"{script}.py"),
            f"hydra.searchpath=[file://{root / 'conf'}]",
            f"paths.call_cache={root / 'calls.sqlite'}",
            *overrides,
        ],
        root,
        root / "stage.log",
    )
    wall_s = time.perf_counter() - started
    calls = calls_made(run_log) if run_log else 0
    stage.wall_s, stage.calls = stage.wall_s + wall_s, stage.calls + calls
    stage.peak_mb = max(stage.peak_mb, peak_mb)
    # A line per process as it ends, so a long run shows its progress.
    rate = f", {calls:,} calls ({calls / wall_s:.0f}/s)" if calls else ""
    print(f"  {script} {' '.join(overrides)}: {wall_s:.1f} s{rate}, peak {peak_mb:.0f} MB")


def calls_made(log: Path) -> int:
    """Calls a stage sent, from its run log (cache hits excluded)."""
    return int(json.loads(log.read_text(encoding="utf-8"))["completed"])


def measure(n: int) -> list[Stage]:
    """Run render, sample, judge and aggregate on N scenarios; each stage's figures."""
    with server() as (url, _), tempfile.TemporaryDirectory(prefix="losona-scale-") as tmp:
        root = Path(tmp)
        workspace(root, n, url)
        render, sample, judge, aggregate = (
            Stage(name) for name in ("render", "sample", "judge", "aggregate")
        )
        run_stage(root, render, "render")
        # All sampling, then all judging, as `dvc repro` orders them.
        for condition in CONDITIONS:
            log = root / "data" / "responses" / SUBJECT / f"{condition}.log.json"
            run_stage(
                root, sample, "sample", f"model={SUBJECT}", f"condition={condition}", run_log=log
            )
        for condition in CONDITIONS:
            log = root / "data" / "judge_logs" / JUDGE / SUBJECT / f"{condition}.log.json"
            cell = (f"judge={JUDGE}", f"model={SUBJECT}", f"condition={condition}")
            run_stage(root, judge, "judge", *cell, run_log=log)
        # What one cell's own tables cost (every cell is the same size).
        sample.cell_calls = judge.cell_calls = n * TRIALS
        for stage in (sample, judge):
            stage.tables_peak_mb = tables_peak(root, stage.name, CONDITIONS[0])
        run_stage(root, aggregate, "aggregate")
        results = pl.read_csv(root / "reports" / "results.csv")
        assert results.height == len(CONDITIONS) and (results["scenarios"] == n).all(), results
    return [render, sample, judge, aggregate]


def load() -> str:
    """The machine's load averages over 1, 5 and 15 minutes, as `uptime` prints them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", type=int, nargs="+", default=[1_000, 10_000])
    parser.add_argument("--tables", nargs=3, help=argparse.SUPPRESS)  # tables_peak's child
    args = parser.parse_args()
    if args.tables:
        root, stage, condition = args.tables
        copy_tables(Path(root), stage, condition)
        return
    print(
        f"scale: N scenarios x {len(CONDITIONS)} conditions x {TRIALS} trials, subject and "
        f"LLM judge on the local test server ({LATENCY_S * 1000:.0f} ms, concurrency "
        f"{CONCURRENCY}), {os.cpu_count()} CPUs shared with the server; load average "
        f"{load()} at the start"
    )
    first: tuple[int, list[Stage]] | None = None
    for n in sorted(args.scenarios):
        print(f"\nN = {n:,}")
        stages = measure(n)
        first = first or (n, stages)
        print(f"N = {n:,}: {n * len(CONDITIONS) * TRIALS:,} responses, by stage")
        print(
            f"{'stage':<10} {'wall s':>8} {'calls':>8} {'calls/s':>8} {'peak MB':>8} "
            f"{'s per 1k scenarios':>19} {'vs N=' + format(first[0], ','):>10}"
        )
        for stage, base in zip(stages, first[1], strict=True):
            per_k = 1000 * stage.wall_s / n
            ratio = per_k / (1000 * base.wall_s / first[0])
            rate = f"{stage.calls / stage.wall_s:8.0f}" if stage.calls else f"{'-':>8}"
            print(
                f"{stage.name:<10} {stage.wall_s:>8.1f} {stage.calls:>8,} {rate} "
                f"{stage.peak_mb:>8.0f} {per_k:>19.2f} {'x' + format(ratio, '.2f'):>10}"
            )
        total = sum(s.wall_s for s in stages)
        peak = max(s.peak_mb for s in stages)
        verdict = "within" if peak < MEMORY_TARGET_MB else "OVER"
        print(
            f"{'total':<10} {total:>8.1f}; largest stage peak {peak:,.0f} MB ({verdict} the "
            f"{MEMORY_TARGET_MB:,} MB target)"
        )
        calling = [s for s in stages if s.calls]
        calls, wall_s = sum(s.calls for s in calling), sum(s.wall_s for s in calling)
        verdict = "within" if calls / wall_s >= CALLS_PER_S_TARGET else "BELOW"
        print(
            f"calls: {calls:,} subject and judge calls in {wall_s:,.0f} s, {calls / wall_s:.0f} "
            f"calls/s ({verdict} the {CALLS_PER_S_TARGET} calls/s target: 240,000 in 20 minutes)"
        )
        if n != first[0]:
            for stage, base in zip(stages, first[1], strict=True):
                if stage.cell_calls:
                    print(growth(stage, base))
    print(f"\nload average {load()} at the end")


def growth(stage: Stage, base: Stage) -> str:
    """How a cell's peak memory grew per extra call between two sizes, beyond its tables."""
    extra = stage.cell_calls - base.cell_calls
    per_call_kb = 1024 * (stage.peak_mb - base.peak_mb) / extra
    tables_kb = 1024 * (stage.tables_peak_mb - base.tables_peak_mb) / extra
    beyond = per_call_kb - tables_kb
    verdict = "within" if beyond <= GROWTH_TARGET_KB else "OVER"
    return (
        f"{stage.name} cell: peak memory +{per_call_kb:.2f} KB per extra call "
        f"({base.cell_calls:,} -> {stage.cell_calls:,} calls); its tables read and written "
        f"alone +{tables_kb:.2f} KB; beyond them {beyond:.2f} KB ({verdict} the "
        f"{GROWTH_TARGET_KB:g} KB target)"
    )


if __name__ == "__main__":
    main()
