"""What the paper's sweep costs: at list price, with prompt caching, and with batch too.

    python benchmarks/cost.py              # the estimate (offline), then the server check
    python benchmarks/cost.py --no-check   # the estimate only

The sweep is `+experiment=paper` on the bundled scenario set: the eight subjects, the four
reported conditions, K = 3, and Gemini 3.1 Pro as the judge (Claude Opus 4.8, the
alternate judge, is shown beside the total, not in it).

1. The estimate. Every request the sweep would send is built as the stages build it (the
   subject prompts, and the judge prompts for every response) and priced offline as the
   dry run prices a cell (losona/models/pricing.py): prompt tokens counted with the
   model's offline tokenizer, the prefix each call can reuse of an earlier call of its
   cell under its provider's caching rules (losona/models/prompt_caching.py), litellm's or the
   config's prices. Responses do not exist before sampling, so the judge is estimated on
   stand-ins of a chat message's length: each scenario's example compliant reply, its
   example breaching reply, and the two together, for trials 1 to 3. Two completion
   lengths are shown: the dry run's 500 tokens when a config sets no max_tokens, and a
   chat message (the example replies' mean length) or a verdict (150 tokens) with no
   hidden reasoning tokens. Cells are estimated on their own: reuse across cells, which a
   provider may grant when cells run back to back, is not counted. The batch column uses
   every provider's batch price; the last column only that of the models this pipeline's
   batch mode can send (losona/models/batch.py: OpenAI and Azure), the rest with caching.

2. The server check. The same request structure (two subjects, the four conditions,
   K = 3, every bundled scenario, the judge on all eight cells and its controls) runs
   through the sample and judge code against the project's test server, which reports
   cached prompt tokens as OpenAI does (its tokens are words; nothing below 1,024, then
   128-token steps). For each stage the cached and prompt tokens the server reported,
   summed from the run logs, are printed beside the estimate of the same calls with the
   same rule and the same token count. The server forgets its cache between cells, as the
   estimate does.

Targets (issue 16): with caching at least 40% below list for the whole sweep; with
caching and batch at least 60% below.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import polars as pl
from hydra import compose, initialize_config_dir

import losona.core.config  # noqa: F401 - registers the ${dvc_param:...} resolver
from losona.core.config import load_option, plain
from losona.core.contracts import scenarios_from_table
from losona.judges.base import JudgeCase
from losona.judges.llm import LLMJudge
from losona.judges.prompt import judge_messages
from losona.judges.run import judge_controls, judge_responses
from losona.models import CallOptions, ModelSpec, Request
from losona.models.batch import BATCH_PROVIDERS
from losona.models.litellm_api import provider_of
from losona.models.prepare import prepare
from losona.models.pricing import Estimate, below, estimate
from losona.models.prompt_caching import content_words, plan_reuse
from losona.prompts.render import render_prompts
from losona.sampling.sample import condition_prompts, sample_cell, sample_requests
from losona.scenarios.datasets import fetch_scenarios
from losona.testing.openai_server import OpenAIServer, default_reply
from losona.testing.scripted_judge import ScriptedJudge

REPO = Path(__file__).resolve().parents[1]
JUDGE = "gemini_pro"  # the paper's judge
ALTERNATE = "claude_opus"  # the paper's alternate judge: shown, not in the total
VERDICT_TOKENS = 150  # a verdict: the JSON object's five fields, a sentence or two each
CACHING_TARGET, BATCH_TARGET = -40.0, -60.0  # percent against list
CHECK_SUBJECTS = ("subject_a", "subject_b")


@dataclass
class Line:
    """One row of the table: calls and the three prices, under both completion lengths."""

    label: str
    calls: int = 0
    # basis -> [list, with caching, with caching and batch, and batch where batch mode can]
    prices: dict[str, list[float]] = field(default_factory=dict)
    cached_tokens: int = 0
    prompt_tokens: int = 0

    def add(self, basis: str, found: Estimate, batch_mode: bool) -> None:
        totals = self.prices.setdefault(basis, [0.0, 0.0, 0.0, 0.0])
        totals[0] += found.list_usd
        totals[1] += found.caching_usd
        totals[2] += found.batch_usd
        totals[3] += found.batch_usd if batch_mode else found.caching_usd

    def merge(self, other: Line) -> None:
        self.calls += other.calls
        self.cached_tokens += other.cached_tokens
        self.prompt_tokens += other.prompt_tokens
        for basis, prices in other.prices.items():
            totals = self.prices.setdefault(basis, [0.0, 0.0, 0.0, 0.0])
            for i, price in enumerate(prices):
                totals[i] += price


def paper_config() -> Any:
    os.chdir(REPO)  # conf/ and params.yaml are read relative to the working directory
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=["+experiment=paper", "dataset=bundled"])


def stand_ins(scenarios: pl.DataFrame, trials: int) -> dict[tuple[str, int], str]:
    """A response of a chat message's length for each scenario and trial."""
    found = {}
    for s in scenarios_from_table(scenarios):
        options = [
            s.example_compliant_response,
            s.example_breaching_response,
            f"{s.example_compliant_response} {s.example_breaching_response}",
        ]
        for trial in range(trials):
            found[s.scenario_id, trial] = options[trial % len(options)]
    return found


def judge_conversations(
    scenarios: pl.DataFrame, responses: dict[tuple[str, int], str], trials: int
) -> list[Request]:
    """A judge cell's requests in the order the judge sends them (identical ones once)."""
    seen: dict[str, Request] = {}
    for s in scenarios_from_table(scenarios):  # sorted by scenario_id, like the responses
        for trial in range(trials):
            messages = judge_messages(JudgeCase.for_response(s, responses[s.scenario_id, trial]))
            seen.setdefault(json.dumps(messages), Request(messages))
    return list(seen.values())


def control_conversations(scenarios: pl.DataFrame) -> list[Request]:
    """The validity controls' requests: two per scenario, identical ones once (as sent)."""
    seen: dict[str, Request] = {}
    for s in scenarios_from_table(scenarios):
        for response in (s.example_compliant_response, s.example_breaching_response):
            messages = judge_messages(JudgeCase.control(s, response))
            seen.setdefault(json.dumps(messages), Request(messages))
    return list(seen.values())


class Pricer:
    """Prices one model's cells, counting each distinct prompt once."""

    def __init__(self, spec: ModelSpec, short_completion: int) -> None:
        self.prepared = prepare(spec)
        self.short = short_completion
        # Whether the pipeline's batch mode can send this model's calls (losona/models/batch.py).
        self.batch_mode = provider_of(spec) in BATCH_PROVIDERS
        self.counts: dict[str, int] = {}

    def tokens(self, request: Request) -> int:
        text = json.dumps([dict(m) for m in request.messages])
        if text not in self.counts:
            self.counts[text] = self.prepared.prompt_tokens(request)
        return self.counts[text]

    def cell(self, line: Line, requests: Sequence[Request]) -> None:
        prompt = [self.tokens(r) for r in requests]
        reuse = self.prepared.reuse(requests)
        rates = self.prepared.rates
        default = estimate(rates, prompt, self.prepared.completion_tokens, reuse)
        line.add("default", default, self.batch_mode)
        line.add("short", estimate(rates, prompt, self.short, reuse), self.batch_mode)
        line.calls += len(requests)
        line.cached_tokens += default.cached_tokens
        line.prompt_tokens += default.prompt_tokens


def spec_of(group: str, name: str) -> ModelSpec:
    node = plain(load_option(group, name))
    if group == "judge":
        return ModelSpec.from_config(node["model"], origin=f"conf/judge/{name}.yaml")
    return ModelSpec.from_config(node, origin=f"conf/model/{name}.yaml")


def chat_message_tokens(spec: ModelSpec, scenarios: pl.DataFrame) -> int:
    """The mean length of the scenarios' example replies in the model's tokens."""
    tokenizer = prepare(spec).tokenizer
    replies = [
        text
        for s in scenarios_from_table(scenarios)
        for text in (s.example_compliant_response, s.example_breaching_response)
    ]
    return round(statistics.fmean(len(tokenizer.encode(text)) for text in replies))


def estimate_sweep(cfg: Any) -> tuple[list[Line], Line, Line, dict[str, str]]:
    scenarios = fetch_scenarios(plain(cfg.dataset))
    conditions = list(cfg.sweep.conditions)
    trials = int(cfg.sampling.trials)
    prompts = render_prompts(scenarios, conditions)
    responses = stand_ins(scenarios, trials)
    judged = judge_conversations(scenarios, responses, trials)
    controls = control_conversations(scenarios)
    rows: list[Line] = []
    notes: dict[str, str] = {}
    sample = Line("sample (8 subjects x 4 conditions)")
    for name in cfg.sweep.models:
        spec = spec_of("model", name)
        pricer = Pricer(spec, chat_message_tokens(spec, scenarios))
        line = Line(f"  {name}")
        for condition in conditions:
            pricer.cell(line, sample_requests(condition_prompts(prompts, condition), trials))
        rows.append(line)
        sample.merge(line)
        notes[name] = describe(pricer, line)
    judges: dict[str, Line] = {}
    for judge in (JUDGE, ALTERNATE):
        pricer = Pricer(spec_of("judge", judge), VERDICT_TOKENS)
        line = Line(f"judge {judge} (32 cells + controls)")
        for _cell in range(len(cfg.sweep.models) * len(conditions)):
            pricer.cell(line, judged)
        pricer.cell(line, controls)
        judges[judge] = line
        notes[f"judge {judge}"] = describe(pricer, line)
    total = Line("total (sample + judge)")
    total.merge(sample)
    total.merge(judges[JUDGE])
    return [sample, *rows, judges[JUDGE]], total, judges[ALTERNATE], notes


def describe(pricer: Pricer, line: Line) -> str:
    prepared = pricer.prepared
    rule = prepared.rule.describe() if prepared.rule else "no prompt caching known"
    share = 100 * line.cached_tokens / line.prompt_tokens if line.prompt_tokens else 0
    return (
        f"{share:.0f}% of prompt tokens cached ({rule}); batch: {prepared.rates.batch_basis}; "
        f"short completions: {pricer.short} tokens"
    )


def print_table(basis: str, rows: list[Line], total: Line, alternate: Line) -> tuple[float, float]:
    print(
        "| stage | calls | list | with prompt caching | with caching and batch "
        "| ... batch where batch mode can send it |"
    )
    print("|---|---|---|---|---|---|")
    for line in [*rows, total, alternate]:
        listed, cached, batched, possible = line.prices[basis]
        label = f"**{line.label}**" if line is total else line.label
        if line is alternate:
            label += " (not in the total)"
        print(
            f"| {label} | {line.calls:,} | ${listed:,.2f} "
            f"| ${cached:,.2f} ({below(cached, listed)}) "
            f"| ${batched:,.2f} ({below(batched, listed)}) "
            f"| ${possible:,.2f} ({below(possible, listed)}) |"
        )
    listed, cached, batched, _ = total.prices[basis]
    return 100 * (cached / listed - 1), 100 * (batched / listed - 1)


def verdict(found: float, target: float) -> str:
    return f"{found:+.1f}% (target {target:+.0f}%): {'met' if found <= target else 'NOT met'}"


# --- the server check --------------------------------------------------------------------


@dataclass
class Tally:
    calls: int = 0
    reported_prompt: int = 0
    reported_cached: int = 0
    estimated_prompt: int = 0
    estimated_cached: int = 0

    def add_log(self, path: Path) -> None:
        log = json.loads(path.read_text(encoding="utf-8"))
        self.calls += log["completed"]
        self.reported_prompt += log["prompt_tokens_this_run"]
        self.reported_cached += log["prompt_cache"]["cache_read_tokens_this_run"]

    def add_estimate(self, server: OpenAIServer, requests: Sequence[Request]) -> None:
        conversations = [r.messages for r in requests]
        reuse = plan_reuse(conversations, content_words, server.cache_rule)
        self.estimated_prompt += sum(len(content_words(c)) for c in conversations)
        self.estimated_cached += sum(r.cached_tokens for r in reuse)

    @property
    def matches(self) -> bool:
        return (self.reported_prompt, self.reported_cached) == (
            self.estimated_prompt,
            self.estimated_cached,
        )


def check_against_server(cfg: Any) -> bool:
    scenarios = fetch_scenarios(plain(cfg.dataset))
    conditions = list(cfg.sweep.conditions)
    trials = int(cfg.sampling.trials)
    prompts = render_prompts(scenarios, conditions)
    price = {
        "input_usd_per_mtok": 5.0,
        "output_usd_per_mtok": 30.0,
        "cached_input_usd_per_mtok": 0.5,
    }
    tallies = {"sample": Tally(), "judge": Tally(), "judge controls": Tally()}
    started = time.perf_counter()
    with (
        tempfile.TemporaryDirectory() as scratch,
        # Each subject's replies differ, so every judge call is a call (not a cache hit).
        OpenAIServer(
            latency=0.005, reply=lambda body: f"{body['model']}: {default_reply(body)}"
        ) as subjects,
        OpenAIServer(latency=0.005, reply=ScriptedJudge()) as judges,
    ):
        root = Path(scratch)
        cache = root / "calls.sqlite"
        judge_spec = ModelSpec.from_config(
            judges.model_config("judge", model="openai/scripted-judge", price=price, concurrency=8)
            | {"seed_per_trial": False}
        )
        for name in CHECK_SUBJECTS:
            spec = ModelSpec.from_config(
                subjects.model_config(name, model=f"openai/{name}", price=price, concurrency=8)
            )
            for condition in conditions:
                log = root / f"{name}-{condition}.log.json"
                subjects.forget_prompts()
                requests = sample_requests(condition_prompts(prompts, condition), trials)
                responses = sample_cell(
                    prompts, spec, condition, trials, CallOptions(cache_path=cache, run_log=log)
                ).responses.collect()
                tallies["sample"].add_log(log)
                tallies["sample"].add_estimate(subjects, requests)
                judges.forget_prompts()
                judge = LLMJudge(
                    judge_spec,
                    CallOptions(cache_path=cache, run_log=root / f"j-{name}-{condition}.log.json"),
                )
                judge_responses(
                    scenarios,
                    responses,
                    judge,
                    "judge",
                    model=name,
                    condition=condition,
                    origin=f"{name}/{condition}",
                )
                tallies["judge"].add_log(root / f"j-{name}-{condition}.log.json")
                rows = responses.sort("scenario_id", "trial")
                by_id = {s.scenario_id: s for s in scenarios_from_table(scenarios)}
                seen: dict[str, Request] = {}
                for row in rows.iter_rows(named=True):
                    case = JudgeCase.for_response(by_id[row["scenario_id"]], row["response"])
                    messages = judge_messages(case)
                    seen.setdefault(json.dumps(messages), Request(messages))
                tallies["judge"].add_estimate(judges, list(seen.values()))
                if Path(f"{root / f'j-{name}-{condition}'}.repair.log.json").exists():
                    print(f"note: {name}/{condition} had repair calls, not in the estimate")
        judges.forget_prompts()
        judge = LLMJudge(
            judge_spec, CallOptions(cache_path=cache, run_log=root / "controls.log.json")
        )
        judge_controls(scenarios, judge, "judge")
        tallies["judge controls"].add_log(root / "controls.log.json")
        tallies["judge controls"].add_estimate(judges, control_conversations(scenarios))
    print(
        f"\nServer check: {len(CHECK_SUBJECTS)} subjects x {len(conditions)} conditions x "
        f"K = {trials} on {scenarios.height} scenarios, judged, against the test server "
        f"({time.perf_counter() - started:.0f} s). Tokens are the server's (words).\n"
    )
    print(
        "| stage | calls | prompt tokens: reported / estimated "
        "| cached: reported / estimated | match |"
    )
    print("|---|---|---|---|---|")
    ok = True
    for stage, t in tallies.items():
        share = 100 * t.reported_cached / t.reported_prompt if t.reported_prompt else 0
        print(
            f"| {stage} | {t.calls:,} | {t.reported_prompt:,} / {t.estimated_prompt:,} | "
            f"{t.reported_cached:,} / {t.estimated_cached:,} ({share:.0f}% cached) | "
            f"{'yes' if t.matches else 'NO'} |"
        )
        ok &= t.matches
    return ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/cost.py")
    parser.add_argument("--no-check", action="store_true", help="the estimate only")
    args = parser.parse_args(argv)
    cfg = paper_config()
    started = time.perf_counter()
    rows, total, alternate, notes = estimate_sweep(cfg)
    print(
        f"The paper's sweep (+experiment=paper) on the bundled set, estimated offline "
        f"({time.perf_counter() - started:.0f} s).\n"
    )
    found: dict[str, tuple[float, float]] = {}
    for basis, title in (
        (
            "default",
            "Completions of 500 tokens per call (the dry run's assumption without max_tokens)",
        ),
        ("short", "Completions of a chat message or a verdict, no hidden reasoning tokens"),
    ):
        print(f"{title}:\n")
        found[basis] = print_table(basis, rows, total, alternate)
        caching, batch = found[basis]
        print(
            f"\nwith caching {verdict(caching, CACHING_TARGET)}; with caching and batch "
            f"{verdict(batch, BATCH_TARGET)}\n"
        )
    print("Per model:")
    for name, note in notes.items():
        print(f"- {name}: {note}")
    if args.no_check:
        return 0
    return 0 if check_against_server(cfg) else 1


if __name__ == "__main__":
    sys.exit(main())
