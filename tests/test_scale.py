"""Scale guard: a sample or judge cell's memory follows its concurrency, not its calls.

One sample cell and one judge cell run as `dvc repro` runs them (each stage script in a
process of its own) against the local test server, at two sizes; each process's peak
resident memory comes from the kernel's accounting of that child (wait4), as
benchmarks/scale.py measures it. What a cell may grow by per extra call is its tables
(the prompts it reads, the rows and calls it writes: well under 2 KB per call here) plus
the few small values the model layer keeps per call (its key, how it went): BOUND_KB.
A cell that kept every prompt or reply, or their tokens, grows by tens of KB per call.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from losona.datasets import fetch_scenarios
from losona.io import write_parquet
from losona.render import render_prompts
from losona.testing.openai_server import OpenAIServer
from losona.testing.scripted_judge import ScriptedJudge

REPO = Path(__file__).resolve().parents[1]
SMALL, LARGE = 50, 350  # scenarios, three trials each: 900 extra calls per cell
TRIALS = 3
BOUND_KB = 8.0  # peak memory per extra call, tables included (see the docstring)


def scenarios(n: int) -> pl.DataFrame:
    """N valid scenarios: the bundled set repeated, each copy with its own id and channel."""
    bundled = fetch_scenarios({"name": "bundled", "kind": "bundled"})
    copies = pl.concat([bundled] * -(-n // bundled.height)).head(n)
    index = pl.int_range(n, eager=True).cast(pl.String).str.zfill(5)
    return copies.with_columns(
        scenario_id=pl.col("scenario_id") + "__copy_" + index,
        channel_description=pl.col("channel_description") + " (thread " + index + ")",
    ).sort("scenario_id")


def workspace(root: Path, n: int, url: str) -> None:
    """The repo's conf with a subject and an LLM judge served by the test server; N
    scenarios and their naive prompts, as fetch and render write them."""
    shutil.copytree(REPO / "conf", root / "conf")
    model = {
        "name": "subject",
        "model": "hosted_vllm/scale-test",
        "api_base": url,
        "seed_per_trial": True,
        "concurrency": 32,
        "price": {"input_usd_per_mtok": 0, "output_usd_per_mtok": 0},
    }
    (root / "conf" / "model" / "subject.yaml").write_text(yaml.safe_dump(model))
    judge = {"name": "judge", "kind": "llm", "model": model | {"name": "judge"}}
    judge["model"]["seed_per_trial"] = False
    (root / "conf" / "judge" / "judge.yaml").write_text(yaml.safe_dump(judge))
    sweep = {"models": ["subject"], "conditions": ["naive"], "judges": ["judge"]}
    (root / "params.yaml").write_text(yaml.safe_dump({"dataset": "bundled", "sweep": sweep}))
    table = scenarios(n)
    write_parquet(table, root / "data" / "scenarios.parquet")
    write_parquet(render_prompts(table, ["naive"]), root / "data" / "prompts.parquet")


def peak_mb(root: Path, stage: str, *overrides: str) -> float:
    """Run a stage script in `root` in a child process; its own peak resident memory."""
    log = root / f"{stage}.log"
    with log.open("w") as out:
        child = subprocess.Popen(
            [
                sys.executable,
                str(REPO / "stages" / f"{stage}.py"),
                f"hydra.searchpath=[file://{root / 'conf'}]",
                f"paths.call_cache={root / 'calls.sqlite'}",
                *overrides,
            ],
            cwd=root,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        # Reaped with wait4 for this child's own peak (RUSAGE_CHILDREN: the largest so far).
        _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    assert child.returncode == 0, log.read_text()[-3000:]
    return usage.ru_maxrss / 1024  # KiB on Linux


@pytest.mark.slow
def test_a_cells_memory_does_not_grow_with_its_number_of_calls(tmp_path: Path) -> None:
    peaks: dict[str, list[float]] = {"sample": [], "judge": []}
    with OpenAIServer(reply=ScriptedJudge()) as server:
        for n in (SMALL, LARGE):
            root = tmp_path / str(n)
            workspace(root, n, server.url)
            cell = ("model=subject", "condition=naive")
            peaks["sample"].append(peak_mb(root, "sample", *cell))
            peaks["judge"].append(peak_mb(root, "judge", "judge=judge", *cell))
        assert server.request_count == 2 * TRIALS * (SMALL + LARGE)  # each call once
    print(peaks)  # shown with -s, to see the margin
    for stage, (small, large) in peaks.items():
        per_call_kb = 1024 * (large - small) / (TRIALS * (LARGE - SMALL))
        assert per_call_kb <= BOUND_KB, (
            f"a {stage} cell's peak memory grew from {small:.0f} MB ({TRIALS * SMALL} calls) to "
            f"{large:.0f} MB ({TRIALS * LARGE} calls): {per_call_kb:.1f} KB per extra call, "
            "more than "
            f"{BOUND_KB:g} KB; something keeps every call's prompt or reply (docs/scale.md)"
        )
