"""Counting prompt tokens for cost estimates, offline and without ever waiting.

litellm's `token_counter` downloads some tokenizers from the Hugging Face Hub and, offline,
sits in its retry backoff for minutes; so the tokenizer litellm would pick is used only if
it is on disk, else cl100k_base. Through litellm's private helpers: its public switch,
`disable_hf_tokenizer_download`, would drop its bundled Anthropic tokenizer too
(tests/test_models_tokens.py fails if the helpers move).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

# The Hub repositories litellm downloads for each tokenizer kind (litellm/utils.py,
# _load_huggingface_tokenizer); the Anthropic kind ships inside litellm instead.
HUB_TOKENIZERS = {
    "llama2": "hf-internal-testing/llama-tokenizer",
    "llama3": "Xenova/llama-3-tokenizer",
    "cohere": "Xenova/c4ai-command-r-v01-tokenizer",
}
# litellm's own default when it knows nothing better.
DEFAULT_ENCODING = "cl100k_base"
# Where tiktoken fetches an encoding from; its cache file is named by the URL's sha1.
_TIKTOKEN_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"


@dataclass(frozen=True)
class Tokenizer:
    """The tokenizer a cost estimate counts with, and what was skipped to stay offline."""

    name: str  # for the reader, e.g. "tiktoken cl100k_base (bundled with litellm)"
    custom: dict[str, Any]  # litellm's custom_tokenizer argument
    skipped: str | None = None  # a tokenizer that would have needed the network

    def describe(self) -> str:
        """One phrase for a person: which tokenizer, and what was skipped."""
        if self.skipped is None:
            return self.name
        return f"{self.name}; {self.skipped} was skipped: it would need the Hugging Face Hub"

    def count(self, litellm: ModuleType, model: str, messages: list[dict[str, Any]]) -> int:
        """Prompt tokens of a chat, message overheads included."""
        return int(
            litellm.token_counter(model=model, messages=messages, custom_tokenizer=self.custom)
        )

    def encode(self, text: str) -> list[int]:
        """The token ids of a text (for finding the prefix two prompts share, in tokens)."""
        tokenizer = self.custom["tokenizer"]
        if self.custom["type"] == "openai_tokenizer":
            return list(tokenizer.encode(text, disallowed_special=()))
        return list(tokenizer.encode(text).ids)  # a Hugging Face `tokenizers` tokenizer


def _bundled_encoding(name: str) -> Tokenizer | None:
    """A tiktoken encoding from the files litellm ships, or None when it ships none."""
    # Importing it points TIKTOKEN_CACHE_DIR at litellm's bundled files, as token_counter
    # does; a plain `import litellm` does not, and tiktoken would then download.
    from litellm.litellm_core_utils import default_encoding

    cache = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or default_encoding.cache_dir)
    digest = hashlib.sha1(_TIKTOKEN_URL.format(name).encode()).hexdigest()
    if not (cache / digest).is_file():
        return None
    import tiktoken

    return Tokenizer(
        f"tiktoken {name} (bundled with litellm)",
        {"type": "openai_tokenizer", "tokenizer": tiktoken.get_encoding(name)},
    )


def _cached_hub_tokenizer(litellm: ModuleType, repo: str) -> Tokenizer | None:
    """A Hub tokenizer already in the local Hugging Face cache; never downloads."""
    from huggingface_hub import try_to_load_from_cache

    found = try_to_load_from_cache(repo, "tokenizer.json")
    if not isinstance(found, str):  # None (not cached) or a marker (known to be absent)
        return None
    return Tokenizer(
        f"{repo} (from the local Hugging Face cache)",
        litellm.create_tokenizer(Path(found).read_text(encoding="utf-8")),
    )


def select_tokenizer(litellm: ModuleType, model: str) -> Tokenizer:
    """The tokenizer litellm would use for `model` if it is on disk, else litellm's default."""
    from litellm.litellm_core_utils.token_counter import openai_tokenizer_encoding_name
    from litellm.utils import claude_json_str, huggingface_tokenizer_kind

    bare = model.split("/", 1)[1] if "/" in model else model
    # litellm keys some lists by the provider's own id (claude-opus-4-8), so ask both ways.
    kind = huggingface_tokenizer_kind(bare) or huggingface_tokenizer_kind(model)
    skipped = None
    if kind == "anthropic":
        return Tokenizer(
            "litellm's Anthropic tokenizer (bundled with litellm)",
            litellm.create_tokenizer(claude_json_str),
        )
    if kind is not None:
        repo = HUB_TOKENIZERS[kind]
        if (cached := _cached_hub_tokenizer(litellm, repo)) is not None:
            return cached
        skipped = repo
    else:
        chosen = _bundled_encoding(openai_tokenizer_encoding_name(bare))
        if chosen is not None:
            return chosen
    default = _bundled_encoding(DEFAULT_ENCODING)
    assert default is not None, "litellm ships cl100k_base; its package files are incomplete"
    return Tokenizer(f"{default.name}, litellm's default", default.custom, skipped)
