"""How long aggregate takes: 8 models x 4 conditions x N scenarios x 3 trials, 10,000 resamples.

    python benchmarks/aggregate.py                 # N = 38, 380 and 3,800
    python benchmarks/aggregate.py --scenarios 38  # one size

Synthetic verdicts are written as the judge stage writes them (one Parquet file per
model x condition) to a temporary directory; then it times, best of --repeat runs, what
the aggregate stage does: read and check every verdict file, compute every statistic
from one scenario bootstrap, write the report files. Target: under 3 s at N = 38.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from losona.core.config import AggregateSettings
from losona.core.contracts import VERDICT_SCHEMA
from losona.core.files import write_parquet
from losona.judges.verdicts import load_verdicts
from losona.results.aggregate import aggregate

MODELS = [f"model_{i}" for i in range(8)]
CONDITIONS = ["naive", "elicitor_only", "style_adaptation", "norm_informed"]
K = 3
BOOTSTRAP = AggregateSettings(resamples=10_000, seed=0, confidence=0.95)


def scenario_table(n: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "scenario_id": [f"scenario_{i:05d}" for i in range(n)],
            "event_type": [f"event_{i % 17}" for i in range(n)],
            "norm_id": [f"norm_{i % 22}" for i in range(n)],
            "source": ["benchmark"] * n,
        }
    )


def write_verdicts(root: Path, scenarios: pl.DataFrame, rng: np.random.Generator) -> None:
    n = scenarios.height
    for m, model in enumerate(MODELS):
        for c, condition in enumerate(CONDITIONS):
            p = 0.2 + 0.05 * m + 0.1 * c
            complies = pl.Series(rng.random(n * K) < p).scatter(
                np.flatnonzero(rng.random(n * K) < 0.01),
                None,  # about 1% unparseable
            )
            frame = pl.DataFrame(
                {
                    "scenario_id": np.repeat(scenarios["scenario_id"].to_numpy(), K),
                    "event_type": np.repeat(scenarios["event_type"].to_numpy(), K),
                    "norm_id": np.repeat(scenarios["norm_id"].to_numpy(), K),
                    "condition": condition,
                    "subject_model": model,
                    "trial": np.tile(np.arange(K, dtype=np.int32), n),
                    "response": "a response of ordinary length, about as long as a chat message",
                    "judge": "lexicon",
                    "judge_model": "lexicon-v1",
                    "judge_version": "1",
                    "complies": complies,
                    "elicitor_uptake": "",
                    "norm_requirement": "",
                    "evidence": "",
                    "reasoning": "a one-line reasoning",
                }
            ).with_columns(
                judge_status=pl.when(pl.col("complies").is_null())
                .then(pl.lit("unparseable"))
                .otherwise(pl.lit("ok")),
                # A breach that takes up no elicitor, as the lexicon judge marks one (about 1 in 4).
                non_answer=pl.col("complies").not_() & pl.Series(rng.random(n * K) < 0.25),
            )
            write_parquet(
                frame.cast(dict(VERDICT_SCHEMA)).select(VERDICT_SCHEMA.names()),
                root / "lexicon" / model / f"{condition}.parquet",
            )


def best_of(repeat: int, task: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = task()
        times.append(time.perf_counter() - start)
    return min(times), result


def measure(n: int, repeat: int) -> dict[str, float]:
    scenarios = scenario_table(n)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_verdicts(root / "verdicts", scenarios, np.random.default_rng(n))
        read_s, verdicts = best_of(repeat, lambda: load_verdicts(root / "verdicts"))
        compute_s, reports = best_of(
            repeat, lambda: aggregate(verdicts, scenarios, bootstrap=BOOTSTRAP)
        )
        write_s, _ = best_of(repeat, lambda: reports.write(root / "reports"))
    return {
        "read": read_s,
        "compute": compute_s,
        "write": write_s,
        "total": read_s + compute_s + write_s,
        "verdict_rows": float(verdicts.height),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scenarios", type=int, nargs="*", default=[38, 380, 3_800])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(
        f"aggregate: {len(MODELS)} models x {len(CONDITIONS)} conditions x N scenarios x "
        f"{K} trials, {BOOTSTRAP.resamples:,} bootstrap resamples, best of {args.repeat}"
    )
    print(f"{'N':>6} {'verdicts':>9} {'read s':>8} {'compute s':>10} {'write s':>8} {'total s':>8}")
    baseline = None
    for n in args.scenarios:
        m = measure(n, args.repeat)
        baseline = baseline or (n, m["total"])
        per_scenario = (m["total"] / baseline[1]) / (n / baseline[0])
        print(
            f"{n:>6} {int(m['verdict_rows']):>9,} {m['read']:>8.2f} {m['compute']:>10.2f} "
            f"{m['write']:>8.2f} {m['total']:>8.2f}   "
            f"time per scenario x{per_scenario:.2f} that at N={baseline[0]}"
        )
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory of the whole run: {peak_mb:,.0f} MB")


if __name__ == "__main__":
    main()
