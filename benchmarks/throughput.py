"""Throughput of the model layer against a local server with a fixed latency.

    python benchmarks/throughput.py            # about three minutes
    python benchmarks/throughput.py --quick    # fewer calls, for a smoke check

The local OpenAI-compatible test server runs in its own process and answers every call
after 200 ms, so at concurrency c the ideal rate is c / 0.2 s. For c = 8, 32 and 128 it
runs the model layer (`complete`: cache, retries, accounting, litellm) and a bare
`AsyncOpenAI` client under a semaphore side by side, interleaved (ours, bare, bare, ours),
so that a busy machine slows both alike, and prints each one's calls per second and CPU
time per call, and our share of the bare client's rate. Then it splits our CPU time: the
model layer's own share (litellm's call replaced by a stub) and litellm's (a bare litellm
loop: no cache, no retries, no accounting). Last, a warm rerun shows how fast calls are
served from the cache.
Target: at least 0.8 of the bare client's rate at concurrency 32 and 128.
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

from losona.models import CallOptions, ModelSpec, Request, complete, litellm_api

LATENCY_S = 0.2
LEVELS = (8, 32, 128)
SECONDS_PER_LEVEL = 3  # per run at the ideal rate; long enough to leave the start-up lockstep


@contextmanager
def server() -> Iterator[str]:
    """The test server in a child process; yields its api_base."""
    child = subprocess.Popen(
        # Any free port, whatever LOSONA_TEST_SERVER_PORT the shell exports.
        [
            sys.executable,
            "-m",
            "losona.testing.openai_server",
            "--port",
            "0",
            "--latency",
            str(LATENCY_S),
        ],
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
    results = complete(spec, batch, CallOptions(cache_path=cache))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert all(r.ok and not r.cached for r in results)
    return count / wall, 1000 * cpu / count


def aiohttp_for_openai() -> bool:
    """Whether openai can send over aiohttp here (openai[aiohttp], i.e. httpx-aiohttp)."""
    try:
        import httpx_aiohttp  # noqa: F401
    except ImportError:
        return False
    return True


def bare_openai(url: str, concurrency: int, count: int) -> tuple[float, float]:
    """(calls per second, CPU ms per call) of a bare AsyncOpenAI client with a semaphore.

    Over aiohttp when openai can use it (as litellm does), else over its default httpx.
    """
    from openai import AsyncOpenAI, DefaultAioHttpClient

    async def run() -> None:
        http = DefaultAioHttpClient() if aiohttp_for_openai() else None
        client = AsyncOpenAI(base_url=url, api_key="EMPTY", max_retries=0, http_client=http)
        gate = asyncio.Semaphore(concurrency)

        async def one(request: Request) -> None:
            async with gate:
                reply = await client.chat.completions.create(
                    model="bench",
                    messages=list(request.messages),  # type: ignore[arg-type]
                )
                assert reply.choices[0].message.content

        async with client:
            await asyncio.gather(*(one(r) for r in requests(count, f"openai-c{concurrency}")))

    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(run())
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return count / wall, 1000 * cpu / count


def side_by_side(
    url: str, provider: str, concurrency: int, count: int, cache: Path
) -> tuple[tuple[float, float], tuple[float, float]]:
    """(calls/s, CPU ms/call) of ours and of the bare client, each over two interleaved runs."""
    ours: list[tuple[float, float]] = []
    bare: list[tuple[float, float]] = []
    for turn, who in enumerate(("ours", "bare", "bare", "ours")):
        if who == "ours":
            ours.append(measure(url, provider, concurrency, count, cache, f"c{concurrency}-{turn}"))
        else:
            bare.append(bare_openai(url, concurrency, count))

    def pooled(runs: list[tuple[float, float]]) -> tuple[float, float]:
        # Calls over total time, so each run weighs by its length.
        seconds = sum(count / rate for rate, _ in runs)
        return len(runs) * count / seconds, sum(cpu for _, cpu in runs) / len(runs)

    return pooled(ours), pooled(bare)


def bare_litellm(url: str, provider: str, concurrency: int, count: int) -> float:
    """CPU ms per call of litellm.acompletion alone, at the same concurrency."""
    litellm = litellm_api.litellm_module()

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

    real = litellm_api.sender
    litellm_api.sender = lambda spec: send
    try:
        return measure(url, provider, 32, count, cache, "stub")[1]
    finally:
        litellm_api.sender = real


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds per level")
    parser.add_argument(
        "--provider",
        default="hosted_vllm",
        help="litellm provider prefix for the server (hosted_vllm, openai, ...)",
    )
    args = parser.parse_args()
    seconds = 1 if args.quick else SECONDS_PER_LEVEL
    print(
        f"model layer throughput: test server with {LATENCY_S * 1000:.0f} ms latency, "
        f"provider {args.provider}/, {os.cpu_count()} CPUs"
    )
    with server() as url, tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "calls.sqlite"
        measure(url, args.provider, 8, 40, cache, "warm-up")  #: imports, connections
        bare_openai(url, 8, 40)
        transport = (
            "aiohttp" if aiohttp_for_openai() else "httpx (pip install httpx-aiohttp for aiohttp)"
        )
        print(f"bare client: openai.AsyncOpenAI over {transport}, with an asyncio.Semaphore")
        print(
            f"{'concurrency':>11} {'calls':>6} {'ideal/s':>8} {'ours/s':>7} {'bare/s':>7} "
            f"{'ours/bare':>9} {'ours CPU ms':>11} {'bare CPU ms':>11}"
        )
        for level in LEVELS:
            ideal = level / LATENCY_S
            count = int(ideal * seconds)
            (ours, our_cpu), (bare, bare_cpu) = side_by_side(
                url, args.provider, level, count, cache
            )
            print(
                f"{level:>11} {count:>6} {ideal:>8.0f} {ours:>7.1f} {bare:>7.1f} "
                f"{ours / bare:>9.2f} {our_cpu:>11.2f} {bare_cpu:>11.2f}",
                flush=True,
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
        warm = requests(count, "c128-0")  # the first run at 128 of side_by_side
        wall = time.perf_counter()
        served = complete(spec, warm, CallOptions(cache_path=cache))
        wall = time.perf_counter() - wall
        assert all(r.cached for r in served)
        print(
            f"warm rerun from the call cache: {count} calls in {wall:.2f} s "
            f"({count / wall:.0f} calls/s, no request sent)"
        )


if __name__ == "__main__":
    main()
