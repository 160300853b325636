"""The dynamic second turn on the embedded model: its time against the first turn's.

    python benchmarks/second_turn.py                      # 10 scenarios, naive, K = 1
    python benchmarks/second_turn.py --scenarios 44 --trials 3    # the issue's whole cell
    python benchmarks/second_turn.py --baseline /tmp/old  # and another checkout, in turn

One run does what the pipeline's stages do for one cell (one condition) on `smollm2`, with
an empty call cache, in two processes as the pipeline's stages are: the first turn's sample
(the first N bundled scenarios, K trials each), the lexicon judge on it and the second-turn
prompts from the bundled follow-ups in one, the second turn's sample in another; it times
the two samples. What carries the first turn's reading over to the second is then only
what it carries in the pipeline: the prompt states the embedded model keeps beside the call
cache (losona/models/prompt_states.py), whose resumed tokens it counts. Before,
between and after the turns it measures the model's rates on this machine: reading a prompt
(tokens a second, the first ~800-token prompt from a clean state) and writing a reply
(tokens a second, one token at a time), and from the rates around each turn that turn's
floor: the prompt tokens the model actually read / the prompt rate + the tokens it
generated / the decode rate. (The baseline's code may not count the tokens it read: its
floor is then not printed.)

It prints, per run: each turn's wall time and calls, second / first (target: at most
1.5), each turn's time / its floor, both turns' work at one set of rates, and the second
turn's prompt tokens resumed from kept states. With --baseline the two checkouts run in turn,
this one first (A B A B ...), so that a machine getting busier or quieter affects both
alike, and each pair's times are compared; it also says whether both drew the same
replies (they should: the seeds are the same, and the embedded model's replies are a
function of the request alone).
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
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def rates(llama: Any, prompt: list[int], decode_tokens: int = 64) -> tuple[float, float]:
    """(prompt tokens a second, decode tokens a second) of this model now."""
    llama.reset()
    started = time.perf_counter()
    llama.eval(prompt)
    read = time.perf_counter() - started
    started = time.perf_counter()
    for token in prompt[:decode_tokens]:  # one token at a time, as a reply is written
        llama.eval([token])
    decode = time.perf_counter() - started
    llama.reset()
    return len(prompt) / read, decode_tokens / decode


def worker(turn: str, scratch: Path, scenarios: int, condition: str, trials: int) -> None:
    """Run one turn of one cell in this process; print what was measured as JSON.

    The first turn leaves its second-turn prompts in `scratch`, beside the call cache, for
    the second turn's process to read, as dynamic_render leaves them for dynamic_sample.
    """
    import litellm
    import polars as pl
    import yaml

    from losona.dynamic.render import render_cell
    from losona.dynamic.sample import sample_second_turn
    from losona.judges.lexicon import LexiconJudge
    from losona.judges.run import judge_responses
    from losona.models import CallOptions, ModelSpec
    from losona.models.smollm2 import register
    from losona.prompts.render import render_prompts
    from losona.sampling.sample import sample_cell
    from losona.scenarios.datasets import fetch_followups, fetch_scenarios

    config = yaml.safe_load((REPO / "conf" / "model" / "smollm2.yaml").read_text())
    spec = ModelSpec.from_config(config)
    dataset = {"name": "bundled", "kind": "bundled"}
    table = fetch_scenarios(dataset).head(scenarios)
    prompts = render_prompts(table, [condition])
    # One call cache for both turns' processes, as the pipeline's stages share one; the
    # embedded model keeps its prompt states beside it (losona/models/prompt_states.py).
    options = CallOptions(cache_path=scratch / "calls.sqlite")
    out: dict[str, Any] = {}

    def model_of() -> Any:
        return next(
            item["custom_handler"]
            for item in litellm.custom_provider_map
            if item["provider"] == "smollm2"
        )

    def model() -> Any:
        return model_of()._llama

    def counted(name: str) -> int | None:
        return getattr(model(), name, None)  # None: code that does not count it

    # Loaded before the clock starts, as each stage's process loads it once: the turns
    # are compared on their calls alone.
    register()
    started = time.perf_counter()
    model_of()._model()
    out["load_s"] = time.perf_counter() - started
    # The machine's speed moves with its load: the rates are measured before, between
    # and after the turns, and each turn's floor takes the mean of those around it.
    chat = "\n".join(message["content"] for message in prompts["messages"][0])
    probe = model().tokenize(chat.encode())
    measured = []
    if turn == "first":
        measured.append(rates(model(), probe))
        started = time.perf_counter()
        first = sample_cell(prompts, spec, condition, trials, options).responses.collect()
        out["first_s"] = time.perf_counter() - started
        out["first_read"], out["first_resumed"] = counted("tokens_read"), counted("tokens_resumed")
        measured.append(rates(model(), probe))
        verdicts = judge_responses(
            table,
            first,
            LexiconJudge(),
            "lexicon",
            model=spec.name,
            condition=condition,
            origin="first turn",
        )
        render_cell(
            table,
            verdicts,
            judge="lexicon",
            model=spec.name,
            condition=condition,
            followups=fetch_followups(dataset),
            group=None,
            origin="verdicts",
        ).prompts.write_parquet(scratch / "second_prompts.parquet")
        out |= {
            "first_calls": first.height,
            "first_generated": int(first["completion_tokens"].sum()),
            "replies": first.sort("scenario_id", "trial")["response"].to_list(),
        }
    else:
        rendered = pl.read_parquet(scratch / "second_prompts.parquet")
        started = time.perf_counter()
        second = sample_second_turn(rendered, spec, options, origin="prompts").responses
        out["second_s"] = time.perf_counter() - started
        out["second_read"], out["second_resumed"] = (
            counted("tokens_read"),
            counted("tokens_resumed"),
        )
        measured.append(rates(model(), probe))
        kept = list((scratch / "smollm2-states").glob("*"))
        out |= {
            "second_calls": second.height,
            "second_generated": int(second["completion_tokens"].sum()),
            "second_prompt_tokens": int(second["prompt_tokens"].sum()),
            "kept_states": len(kept),
            "kept_bytes": sum(path.stat().st_size for path in kept),
            "replies": second.sort("scenario_id", "trial", "arm")["response"].to_list(),
        }
    out["rates"] = measured
    print(json.dumps(out))


def run(code: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The first turn, then the second, each in a fresh process with this checkout's code."""
    turns = []
    with tempfile.TemporaryDirectory() as scratch:
        for turn in ("first", "second"):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    f"--worker={turn}",
                    f"--scratch={scratch}",
                    f"--scenarios={args.scenarios}",
                    f"--condition={args.condition}",
                    f"--trials={args.trials}",
                ],
                env={**os.environ, "PYTHONPATH": str(code), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            turns.append(json.loads(out.strip().splitlines()[-1]))
    first, second = turns
    found: dict[str, Any] = first | second
    # Before and after the first turn (its process), after the second (its own).
    found["rates"] = first["rates"] + second["rates"]
    found["load_s"] = [first["load_s"], second["load_s"]]
    found["replies"] = first["replies"] + second["replies"]
    # The mean rates too, as this script printed them at first (a run in progress reads them).
    found["prompt_rate"] = statistics.fmean(r[0] for r in found["rates"])
    found["decode_rate"] = statistics.fmean(r[1] for r in found["rates"])
    return found


def floor(m: dict[str, Any], turn: str) -> float | None:
    """The turn's floor in seconds: tokens read at the prompt rate, tokens written at decode."""
    if m[f"{turn}_read"] is None:
        return None
    around = m["rates"][:2] if turn == "first" else m["rates"][1:]
    return work_seconds(m, turn, around)


def work_seconds(m: dict[str, Any], turn: str, rates: list[list[float]]) -> float:
    """The turn's tokens read and written, in seconds at the mean of `rates`."""
    prompt_rate = statistics.fmean(r[0] for r in rates)
    decode_rate = statistics.fmean(r[1] for r in rates)
    return float(m[f"{turn}_read"] / prompt_rate + m[f"{turn}_generated"] / decode_rate)


def describe(name: str, m: dict[str, Any]) -> str:
    """One run's figures on a few lines."""
    lines = [
        f"{name}: model loaded in "
        + " and ".join(f"{s:.1f}" for s in m["load_s"])
        + " s (each turn's process), "
        f"first turn {m['first_s']:.1f} s ({m['first_calls']} calls), "
        f"second turn {m['second_s']:.1f} s ({m['second_calls']} calls): "
        f"second / first = {m['second_s'] / m['first_s']:.2f} (target: at most 1.5)",
        "  rates before, between and after the turns: prompt "
        + ", ".join(f"{r[0]:.0f}" for r in m["rates"])
        + " tokens/s; decode "
        + ", ".join(f"{r[1]:.1f}" for r in m["rates"])
        + " tokens/s",
    ]
    for turn in ("first", "second"):
        least = floor(m, turn)
        if least is not None:
            lines.append(
                f"  {turn} turn: read {m[f'{turn}_read']} prompt tokens, wrote "
                f"{m[f'{turn}_generated']}: floor {least:.1f} s, time / floor = "
                f"{m[f'{turn}_s'] / least:.2f}"
            )
    if m["second_read"] is not None:
        lines.append(
            f"  second turn: {m['second_prompt_tokens']} prompt tokens sent, "
            f"{m['second_read']} read ({m['second_read'] / m['second_prompt_tokens']:.0%})"
        )
    if m["second_resumed"] is not None:
        lines.append(
            f"  second turn: {m['second_resumed']} prompt tokens resumed from the "
            f"{m['kept_states']} prompt states the first turn's process kept "
            f"({m['kept_bytes'] / 1e6:.0f} MB)"
        )
    if m["first_read"] is not None and m["second_read"] is not None:
        # The time ratio moves with the load, which can change between the turns; the
        # work (tokens read and written, both at the same rates) does not.
        first, second = (work_seconds(m, turn, m["rates"]) for turn in ("first", "second"))
        lines.append(
            f"  the same work at one set of rates (their mean): second / first = "
            f"{second / first:.2f}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", type=int, default=10)
    parser.add_argument("--condition", default="naive")
    parser.add_argument("--trials", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--baseline", type=Path, help="another checkout, run in turn with this")
    parser.add_argument("--worker", choices=("first", "second"), help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.scratch, args.scenarios, args.condition, args.trials)
        return
    print(
        f"{args.condition}: the first {args.scenarios} bundled scenarios, K = {args.trials}, "
        f"on smollm2, lexicon judge, {os.cpu_count()} cores; load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}",
        flush=True,
    )
    codes = {"this": REPO} | ({"baseline": args.baseline} if args.baseline else {})
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
    for round_ in range(1, args.rounds + 1):
        for name, code in codes.items():
            measured = run(code, args)
            results[name].append(measured)
            print(f"round {round_}, {describe(name, measured)}", flush=True)
    if args.baseline:
        pairs = list(zip(results["this"], results["baseline"], strict=True))
        for turn in ("first", "second"):
            ratios = [a[f"{turn}_s"] / b[f"{turn}_s"] for a, b in pairs]
            print(
                f"{turn} turn, this / baseline: "
                + ", ".join(f"{r:.2f}" for r in ratios)
                + f" (median {statistics.median(ratios):.2f})"
            )
        same = all(a["replies"] == b["replies"] for a, b in pairs)
        print(f"same replies in every pair: {'yes' if same else 'NO'}")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
