"""Scale guard: a sample or judge cell's memory follows its concurrency, not its calls.

One sample cell and one judge cell run as `dvc repro` runs them (each stage script in a
process of its own) against the local test server, at two sizes; each process's peak
resident memory comes from the kernel's accounting of that child (wait4, through
losona.testing.peak), as benchmarks/scale.py measures it. A cell must read its input
tables and write its output tables, and polars decodes and encodes a table whole: a process
that does only that, on the same files, gives what the tables themselves cost. Beyond them
a cell may grow by the few small values the model layer keeps per call (its key, how it
went): BOUND_KB per extra call. That is looser than the benchmark's 2 KB target
(docs/scale.md), as a run this small still warms up its allocators: measured on
2026-11-25, before the judge's verdict table was made of its judgements' own columns
(c844c5f), a judge cell grew 6 to 8 KB per call beyond its tables here, and 2.9 KB
between the benchmark's 3,000 and 30,000 calls. A cell that keeps every prompt or reply,
or their tokens, grows by tens of KB per call beyond its tables (before #25: 16 KB for a
sample cell, 161 KB for a judge cell, at these sizes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from losona.core.files import write_parquet
from losona.prompts.render import render_prompts
from losona.testing.openai_server import OpenAIServer
from losona.testing.scripted_judge import ScriptedJudge
from losona.testing.synthetic import synthetic_scenarios

REPO = Path(__file__).resolve().parents[1]
SMALL, LARGE = 150, 450  # scenarios, three trials each: 900 extra calls per cell
TRIALS = 3
BOUND_KB = 12.0  # peak memory per extra call beyond the cell's tables (see the docstring)
# What a cell reads and writes, and nothing else: `tables_peak_mb`'s child.
TABLES_ALONE = """
import sys
import polars as pl

data, stage = sys.argv[1], sys.argv[2]
if stage == "sample":
    pl.scan_parquet(f"{data}/prompts.parquet").filter(pl.col("condition") == "naive").collect()
    outputs = ["responses/subject", "calls/sample/subject"]
else:
    pl.read_parquet(f"{data}/scenarios.parquet")
    pl.read_parquet(f"{data}/responses/subject/naive.parquet")
    outputs = ["verdicts/judge/subject", "calls/judge/judge/subject"]
for output in outputs:
    table = pl.read_parquet(f"{data}/{output}/naive.parquet")
    table.write_parquet(f"{data}/copy.parquet", compression="zstd", compression_level=3)
"""


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
    table = synthetic_scenarios(n)
    write_parquet(table, root / "data" / "scenarios.parquet")
    write_parquet(render_prompts(table, ["naive"]), root / "data" / "prompts.parquet")


def peak_mb(root: Path, command: list[str]) -> float:
    """Run a command in `root`; its own peak resident memory (through losona.testing.peak,
    so that this test's own memory, its test server's included, is not counted)."""
    log, peak = root / "child.log", root / "peak.txt"
    with log.open("w") as out:
        status = subprocess.call(
            [sys.executable, "-m", "losona.testing.peak", str(peak), "--", *command],
            cwd=root,
            env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    assert status == 0, log.read_text()[-3000:]
    return int(peak.read_text()) / 1024  # KiB on Linux


def stage_peak_mb(root: Path, stage: str, *overrides: str) -> float:
    """A stage script's peak memory, run in `root` as `dvc repro` runs it."""
    script = str(REPO / "stages" / f"{stage}.py")
    search = f"hydra.searchpath=[file://{root / 'conf'}]"
    cache = f"paths.call_cache={root / 'calls.sqlite'}"
    return peak_mb(root, [sys.executable, script, search, cache, *overrides])


def tables_peak_mb(root: Path, stage: str) -> float:
    """The peak memory of reading a cell's input tables and writing its output tables."""
    return peak_mb(root, [sys.executable, "-c", TABLES_ALONE, str(root / "data"), stage])


@pytest.mark.slow
def test_a_cells_memory_does_not_grow_with_its_number_of_calls(tmp_path: Path) -> None:
    cells = {"sample": ("model=subject", "condition=naive")}
    cells["judge"] = ("judge=judge", *cells["sample"])
    peaks: dict[str, list[float]] = {stage: [] for stage in cells}
    tables: dict[str, list[float]] = {stage: [] for stage in cells}
    with OpenAIServer(reply=ScriptedJudge()) as server:
        for n in (SMALL, LARGE):
            root = tmp_path / str(n)
            workspace(root, n, server.url)
            for stage, overrides in cells.items():
                peaks[stage].append(stage_peak_mb(root, stage, *overrides))
                tables[stage].append(tables_peak_mb(root, stage))
        assert server.request_count == 2 * TRIALS * (SMALL + LARGE)  # each call once
    extra = TRIALS * (LARGE - SMALL)
    for stage, (small, large) in peaks.items():
        per_call_kb = 1024 * (large - small) / extra
        tables_kb = 1024 * (tables[stage][1] - tables[stage][0]) / extra
        assert per_call_kb - tables_kb <= BOUND_KB, (
            f"a {stage} cell's peak memory grew from {small:.0f} MB ({TRIALS * SMALL} calls) to "
            f"{large:.0f} MB ({TRIALS * LARGE} calls): {per_call_kb:.1f} KB per extra call, "
            f"its tables alone {tables_kb:.1f} KB: {per_call_kb - tables_kb:.1f} KB beyond them, "
            f"more than {BOUND_KB:g} KB; something keeps every call's prompt or reply, or its "
            "tokens (docs/scale.md)"
        )
