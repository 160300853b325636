"""The embedded model answers a real rendered prompt, through the same road as any model.

Its samples must be a function of the request alone on a given machine: these tests
compare texts drawn in one process, never texts written down on another machine, because
another CPU's kernels round differently and may draw other replies.
"""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from conftest import CONF_DIR

from losona.models import CallOptions, ModelSpec, Request, complete
from losona.models.smollm2 import MODEL_NAME, FreeCores, SmolLM2, _prefix_llama
from losona.prompts.render import render_prompts
from losona.scenarios.datasets import fetch_scenarios

# Tests that load the model and read ~750-token prompts on the CPU.
slow = pytest.mark.slow
# One worker takes the module (make test's --dist loadgroup), so what a new model draws, which
# several tests compare with, is drawn once (`read_fresh`).
pytestmark = pytest.mark.xdist_group("smollm2")

PARAMS = {"temperature": 0.9, "max_tokens": 24, "seed": 7}


@functools.cache
def _rendered() -> list[list[dict[str, str]]]:
    scenarios = fetch_scenarios({"name": "bundled", "kind": "bundled"}).head(2)
    rendered = render_prompts(scenarios, ["naive"])
    return [list(m) for m in rendered["messages"].to_list()]


def prompts() -> list[list[dict[str, str]]]:
    """The first two bundled scenarios' naive prompts (rendered once; a copy each time)."""
    return copy.deepcopy(_rendered())


def longer_than(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """A second-turn prompt in miniature: the same chat, something said after it."""
    return [*messages[:-1], {**messages[-1], "content": messages[-1]["content"] + "\nAnd then?"}]


def draw(model: SmolLM2, messages: list[dict[str, str]]) -> str:
    reply: Any = model.generate(MODEL_NAME, messages, dict(PARAMS))
    return str(reply.choices[0].message.content)


@slow
def test_smollm2_answers_a_rendered_prompt_reproducibly(tmp_path: Path) -> None:
    spec = ModelSpec.from_config(yaml.safe_load((CONF_DIR / "model" / "smollm2.yaml").read_text()))
    request = Request(messages=prompts()[0], trial=0)
    (reply,) = complete(spec, [request], CallOptions(cache_path=tmp_path / "calls.sqlite"))
    assert reply.ok and not reply.cached and reply.text and reply.text.strip()
    assert 500 < reply.prompt_tokens < spec.params["max_tokens"] + 4096
    assert 0 < reply.completion_tokens <= spec.params["max_tokens"]
    assert reply.cost_usd == 0.0
    # Drawn again, bypassing the cache, the trial's seed gives the same sample.
    (again,) = complete(
        spec, [request], CallOptions(cache_path=tmp_path / "calls.sqlite", use_cache=False)
    )
    assert not again.cached and again.text == reply.text


@slow
def test_a_sample_does_not_depend_on_what_the_model_read_before() -> None:
    first, second = prompts()
    longer = longer_than(first)  # all but its end is a prefix of `first`
    fresh, _ = read_fresh("first")  # the first thing a new model reads

    model = SmolLM2()
    draw(model, second)  # another prompt
    after_another = draw(model, first)
    repeated = draw(model, first)  # its prompt reused from llama.cpp's cache
    draw(model, longer)  # a prompt that shares all but the end of it
    after_a_longer_one = draw(model, first)
    assert fresh == after_another == repeated == after_a_longer_one


def read(model: SmolLM2, messages: list[dict[str, str]]) -> tuple[str, int]:
    """A sample and how many prompt tokens the model evaluated to draw it."""
    before = model._llama.tokens_read if model._llama is not None else 0
    text = draw(model, messages)
    return text, model._llama.tokens_read - before


@functools.cache
def read_fresh(prompt: str) -> tuple[str, int]:
    """What a new model draws for the first prompt ("first") or for it with a line more
    ("longer"), and how many prompt tokens it read. Several tests compare with it, and
    every new model draws the same: so it is drawn once per process."""
    first = prompts()[0]
    return read(SmolLM2(), {"first": first, "longer": longer_than(first)}[prompt])


@slow
def test_a_prompt_that_shares_a_prefix_with_the_last_one_reads_only_the_rest() -> None:
    first, _ = prompts()
    longer = longer_than(first)
    fresh, whole = read_fresh("longer")

    model = SmolLM2()
    model._model()
    assert model._llama.reuse_prefixes  # on this machine the probe finds batching exact
    draw(model, first)
    after_first, rest = read(model, longer)
    assert after_first == fresh
    assert whole > 500 and rest < 20  # the chat is read once; "And then?" and the end again


@slow
def test_where_batching_changes_the_numbers_every_prompt_is_read_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    first, _ = prompts()
    longer = longer_than(first)
    fresh, _ = read_fresh("longer")

    model = SmolLM2()
    cls = _prefix_llama()
    real = cls._last_logits
    # As on a CPU whose kernels round by batch: the probe read in pieces differs by a hair.
    calls = iter([0.0, 1e-6])
    monkeypatch.setattr(cls, "_last_logits", lambda self, pieces: real(self, pieces) + next(calls))
    model._model()
    assert not model._llama.reuse_prefixes
    draw(model, first)
    after_first, tokens = read(model, longer)
    assert after_first == fresh
    assert tokens > 500  # read from a clean state, not from what `first` left
    # An exact repeat is still read once, as before: only its last token again.
    again, repeat = read(model, longer)
    assert (again, repeat) == (fresh, 1)


@slow
def test_the_thread_count_does_not_change_a_sample(monkeypatch: pytest.MonkeyPatch) -> None:
    first, _ = prompts()
    texts = set()
    for threads in (1, 2):
        model = SmolLM2()
        model._model()
        assert model._free_cores is not None
        monkeypatch.setattr(model._free_cores, "count", lambda threads=threads: threads)
        texts.add(draw(model, first))
    assert len(texts) == 1


def stat_file(path: Path, busy: tuple[int, int]) -> None:
    """A /proc/stat whose two cores have been busy this many ticks (and idle 10,000)."""
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
    lines += [f"cpu{n} {ticks} 0 0 10000 0 0 0 0 0 0" for n, ticks in enumerate(busy)]
    path.write_text("\n".join(lines) + "\n")


def test_free_cores_counts_the_cores_other_programs_left_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import losona.models.smollm2 as smollm2

    clock = {"wall": 0.0, "own": 0.0}
    ticks = [0, 0]
    monkeypatch.setattr(smollm2, "_cores", lambda: {0, 1})
    monkeypatch.setattr(smollm2.time, "monotonic", lambda: clock["wall"])
    monkeypatch.setattr(
        smollm2.os, "times", lambda: smollm2.os.times_result((clock["own"], 0, 0, 0, 0))
    )
    tick = smollm2.os.sysconf("SC_CLK_TCK")
    stat = tmp_path / "stat"
    stat_file(stat, (0, 0))
    cores = FreeCores(stat)

    def after(seconds: float, busy: tuple[float, float], own: float) -> int:
        """Free cores after `seconds` in which the cores were busy this long, we `own`."""
        clock["wall"] += seconds
        clock["own"] += own
        ticks[:] = [total + int(seconds * tick) for total, seconds in zip(ticks, busy, strict=True)]
        stat_file(stat, (ticks[0], ticks[1]))
        return cores.count()

    assert after(10, (10, 10), own=20) == 2  # both cores were ours alone
    assert after(10, (10, 10), own=10) == 1  # another program kept one core busy
    assert after(10, (10, 10), own=13.3) == 1  # a busy program sharing the cores with us
    assert after(10, (10, 10), own=8) == 1  # others used more than a core: still one
    assert after(10, (2, 1), own=0) == 2  # a nearly idle machine
    assert after(10, (10, 10), own=0) == 1  # every core taken by others: never below one
    assert FreeCores(tmp_path / "missing").count() == 2  # no /proc/stat: every core


def test_free_cores_ignores_cores_this_process_may_not_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import losona.models.smollm2 as smollm2

    monkeypatch.setattr(smollm2, "_cores", lambda: {1})
    clock = {"wall": 0.0}
    monkeypatch.setattr(smollm2.time, "monotonic", lambda: clock["wall"])
    monkeypatch.setattr(smollm2.os, "times", lambda: smollm2.os.times_result((0, 0, 0, 0, 0)))
    stat = tmp_path / "stat"
    stat_file(stat, (0, 0))
    cores = FreeCores(stat)
    clock["wall"] = 10
    stat_file(stat, (10 * smollm2.os.sysconf("SC_CLK_TCK"), 0))  # core 0 busy: not ours
    assert cores.count() == 1


@pytest.fixture(scope="module")
def states_kept_here() -> None:
    """Skip where this CPU's batching changes the numbers: no state is kept or loaded there
    (the last test below holds that), so there is nothing to resume."""
    if not SmolLM2()._model().reuse_prefixes:
        pytest.skip("this CPU reads a text in pieces with other logits: prompt states are off")


@slow
@pytest.mark.usefixtures("states_kept_here")
def test_a_prompt_state_kept_in_one_process_is_resumed_in_another_with_the_same_reply(
    tmp_path: Path,
) -> None:
    first, _ = prompts()
    fresh, whole = read_fresh("longer")
    # The first turn's process, through the model layer: its state kept beside the cache.
    spec = ModelSpec.from_config(yaml.safe_load((CONF_DIR / "model" / "smollm2.yaml").read_text()))
    complete(spec, [Request(messages=first, trial=0)], CallOptions(cache_path=tmp_path / "c.db"))
    assert len(list((tmp_path / "smollm2-states").glob("*.state"))) == 1

    model = SmolLM2()  # the second turn's: nothing read yet
    model.states = tmp_path / "smollm2-states"
    resumed, rest = read(model, longer_than(first))
    assert resumed == fresh
    assert whole > 500 and rest < 20 and model._llama.tokens_resumed > 500
    assert len(list((tmp_path / "smollm2-states").glob("*.state"))) == 1  # nothing new kept


@slow
@pytest.mark.usefixtures("states_kept_here")
def test_a_kept_state_gives_the_very_logits_of_reading_its_tokens(tmp_path: Path) -> None:
    first, _ = prompts()
    keeper = SmolLM2()._model()
    tokens = keeper.tokenize(first[-1]["content"].encode())
    head, last = tokens[:-1], tokens[-1:]
    whole = keeper._last_logits([head, last])
    keeper.keep_states_in(tmp_path)
    keeper.reset()
    keeper.eval(head[:300])
    keeper.states.keep(head[:300], keeper._state())

    resumer = SmolLM2()._model()  # another model: nothing read yet
    resumer.keep_states_in(tmp_path)
    assert resumer._resume(head, 0) == (300, 300)
    resumer.n_tokens = 300
    resumer.eval(head[300:])
    resumer.eval(last)
    resumed = np.ctypeslib.as_array(resumer._ctx.get_logits(), shape=(resumer.n_vocab(),))
    assert np.array_equal(resumed, whole)


@slow
@pytest.mark.usefixtures("states_kept_here")
def test_a_corrupt_prompt_state_is_passed_over(tmp_path: Path) -> None:
    first, _ = prompts()
    keeper = SmolLM2()
    keeper.states = tmp_path
    draw(keeper, first)
    expected = draw(keeper, longer_than(first))  # from the state it holds, as fresh
    (kept,) = tmp_path.glob("*.state")
    data = bytearray(kept.read_bytes())
    data[-1000] ^= 1
    kept.write_bytes(bytes(data))

    model = SmolLM2()
    model.states = tmp_path
    again, tokens = read(model, longer_than(first))
    assert again == expected and tokens > 500 and model._llama.tokens_resumed == 0
    # Passed over and removed; the prompt, read anew, kept in its place.
    (now,) = tmp_path.glob("*.state")
    assert now.name != kept.name


@slow
def test_where_batching_changes_the_numbers_no_prompt_state_is_kept(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    first, _ = prompts()
    cls = _prefix_llama()
    real = cls._last_logits
    calls = iter([0.0, 1e-6])
    monkeypatch.setattr(cls, "_last_logits", lambda self, pieces: real(self, pieces) + next(calls))
    model = SmolLM2()
    model.states = tmp_path
    draw(model, first)
    assert not model._llama.reuse_prefixes and model._llama.states is None
    assert list(tmp_path.iterdir()) == []
