"""Throughput of the model layer against a local server with a fixed latency.

    python benchmarks/throughput.py            # about two minutes
    python benchmarks/throughput.py --quick    # fewer calls, for a smoke check

The local OpenAI-compatible test server runs in its own process and answers every call
after 200 ms, so at concurrency c the ideal rate is c / 0.2 s. For c = 8, 32 and 128 it
prints the achieved calls per second against that ideal, and the CPU time this process
spends per call. Then it splits that CPU time: the model layer's own share (litellm's call
replaced by a stub) and litellm's (a bare litellm loop: no cache, no retries, no
accounting). Last, a warm rerun shows how fast calls are served from the cache.
Targets: at least 90% of ideal at 32 and 80% at 128.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from losona.models import ModelSpec, Request, calls, complete
from losona.models.calls import _litellm

LATENCY_S = 0.2
LEVELS = (8, 32, 128)
SECONDS_PER_LEVEL = 15  # long enough for the calls to leave their start-up lockstep


@contextmanager
def server() -> Iterator[str]:
    """The test server in a child process; yields its api_base."""
    child = subprocess.Popen(
        [sys.executable, "-m", "losona.testing.openai_server", "--latency", str(LATENCY_S)],
        stdin=subprocess.DEVNULL,  # it serves until SIGTERM, not until stdin closes
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        yield child.stdout.readline().strip()
    finally:
        child.terminate()
        child.wait(timeout=10)


def requests(count: int, tag: str) -> list[Request]:
    # A short chat prompt; the bodies differ so that every call is a distinct cache key.
    return [
        Request([{"role": "user", "content": f"{tag}: write the next chat message ({i})"}])
        for i in range(count)
    ]


def spec_for(url: str, provider: str, concurrency: int) -> ModelSpec:
    return ModelSpec.from_config(
        {
            "name": "bench",
            "model": f"{provider}/bench",
            "api_base": url,
            "concurrency": concurrency,
            "price": {"input_usd_per_mtok": 0, "output_usd_per_mtok": 0},
        }
    )


def measure(
    url: str, provider: str, concurrency: int, count: int, cache: Path, tag: str
) -> tuple[float, float]:
    """(calls per second, CPU ms per call) for `count` fresh calls through `complete`."""
    spec = spec_for(url, provider, concurrency)
    batch = requests(count, tag)
    wall, cpu = time.perf_counter(), time.process_time()
    results = complete(spec, batch, cache_path=cache)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert all(r.ok and not r.cached for r in results)
    return count / wall, 1000 * cpu / count


def bare_litellm(url: str, provider: str, concurrency: int, count: int) -> float:
    """CPU ms per call of litellm.acompletion alone, at the same concurrency."""
    litellm = _litellm()

    async def run() -> None:
        gate = asyncio.Semaphore(concurrency)

        async def one(request: Request) -> None:
            async with gate:
                await litellm.acompletion(
                    model=f"{provider}/bench",
                    api_base=url,
                    api_key="EMPTY",
                    messages=list(request.messages),
                    max_retries=0,
                )

        await asyncio.gather(*(one(r) for r in requests(count, "bare")))

    cpu = time.process_time()
    asyncio.run(run())
    return 1000 * (time.process_time() - cpu) / count


def layer_only(url: str, provider: str, count: int, cache: Path) -> float:
    """CPU ms per call of the model layer itself, with litellm's call replaced by a stub."""
    reply = SimpleNamespace(
        choices=[SimpleNamespace(message=SimpleNamespace(content="ok"), finish_reason="stop")],
        usage=SimpleNamespace(prompt_tokens=10, completion_tokens=1),
    )

    async def send(**_: Any) -> Any:
        await asyncio.sleep(0)
        return reply

    real = calls._sender
    calls._sender = lambda spec, litellm: send
    try:
        return measure(url, provider, 32, count, cache, "stub")[1]
    finally:
        calls._sender = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds per level")
    parser.add_argument(
        "--provider",
        default="hosted_vllm",
        help="litellm provider prefix for the server (hosted_vllm, openai, ...)",
    )
    args = parser.parse_args()
    seconds = 3 if args.quick else SECONDS_PER_LEVEL
    print(
        f"model layer throughput: test server with {LATENCY_S * 1000:.0f} ms latency, "
        f"provider {args.provider}/, {os.cpu_count()} CPUs"
    )
    with server() as url, tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "calls.sqlite"
        measure(url, args.provider, 8, 40, cache, "warm-up")  #: imports, connections
        print(
            f"{'concurrency':>11} {'calls':>6} {'calls/s':>8} {'ideal':>6} {'% ideal':>8} "
            f"{'CPU ms/call':>12}"
        )
        for level in LEVELS:
            ideal = level / LATENCY_S
            count = int(ideal * seconds)
            rate, cpu = measure(url, args.provider, level, count, cache, f"c{level}")
            print(
                f"{level:>11} {count:>6} {rate:>8.1f} {ideal:>6.0f} {100 * rate / ideal:>7.1f}% "
                f"{cpu:>12.2f}"
            )
        count = int(32 / LATENCY_S * seconds / 2)
        bare = bare_litellm(url, args.provider, 32, count)
        own = layer_only(url, args.provider, 4 * count, cache)
        print(
            f"CPU per call: {own:.2f} ms in the model layer itself (cache key, SQLite commit, "
            f"retries, accounting; litellm stubbed out), {bare:.2f} ms in "
            "litellm.acompletion alone (a bare loop at concurrency 32)"
        )
        count = 128 * int(seconds / LATENCY_S)
        spec = spec_for(url, args.provider, 128)
        warm = requests(count, "c128")
        wall = time.perf_counter()
        served = complete(spec, warm, cache_path=cache)
        wall = time.perf_counter() - wall
        assert all(r.cached for r in served)
        print(
            f"warm rerun from the call cache: {count} calls in {wall:.2f} s "
            f"({count / wall:.0f} calls/s, no request sent)"
        )


if __name__ == "__main__":
    main()
