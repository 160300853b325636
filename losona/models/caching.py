"""Provider prompt caching: each provider's rules, and which earlier call a call reuses.

Providers bill a prompt prefix they processed a few minutes earlier at about a tenth of
the input price. OpenAI and Gemini cache on their own; Anthropic caches only up to a
`cache_control` marker in the request and bills writing the cache at 1.25x the input
price. Each has a minimum: a shared prefix shorter than that is not cached at all.

LoSoNA's calls share long prefixes: a prompt's K trials are the same prompt, and every
response to one scenario is judged with the same instructions, norm, examples and
transcript before the judged message. `plan_reuse` finds, for each call of a run in send
order, the earlier call whose prefix it can reuse and what the provider would bill as
cached. The model layer (losona/models/calls.py) uses it for:

- order: a call that can reuse an earlier call's prefix is sent once that call has been
  answered. A provider caches a prefix once it has processed it, so calls sent side by
  side all miss. Other calls go out meanwhile: a run takes about one call longer.
- markers: for Anthropic, each call marks the last message it shares whole with another
  call of the run (litellm's `cache_control_injection_points`), and nothing else, so a
  cache write (1.25x) is made only for a prefix that a later call of the run reads (0.1x).
- the dry run's estimate with caching, counted offline with the estimate's tokenizer.

None of this touches what is sent as the prompt or the call-cache key: caching is a
billing matter only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Messages = Sequence[Mapping[str, Any]]
# A conversation's prompt as a sequence of tokens (or any units a server counts).
Encode = Callable[[Messages], Sequence[Hashable]]

# How many of the calls just before a call are compared with it (plus the first call with
# the very same prompt): calls that share a prefix are sent next to each other.
WINDOW = 64
# Anthropic takes at most four cache_control markers per request.
MAX_MARKERS = 4


@dataclass(frozen=True)
class CacheRule:
    """How one provider caches prompt prefixes."""

    provider: str  # for the reader, e.g. "OpenAI"
    markers: bool  # caches only up to cache_control markers (Anthropic); else automatically
    min_tokens: int  # a shorter prefix is never cached
    step: int = 1  # past min_tokens, cached lengths grow in steps of this many tokens

    def cached(self, shared: int) -> int:
        """The tokens billed as cached when a call shares `shared` tokens with the cache."""
        if shared < self.min_tokens:
            return 0
        return self.min_tokens + (shared - self.min_tokens) // self.step * self.step

    def describe(self) -> str:
        """One phrase for a person, e.g. "OpenAI: automatic, prefixes of 1024 tokens or more"."""
        how = "cache_control markers" if self.markers else "automatic"
        steps = f", in {self.step}-token steps" if self.step > 1 else ""
        return f"{self.provider}: {how}, prefixes of {self.min_tokens} tokens or more{steps}"


# OpenAI caches every prompt of 1,024 tokens or more, in 128-token steps, for free.
OPENAI = CacheRule("OpenAI", markers=False, min_tokens=1024, step=128)
# A server of your own (api_base or endpoints) is taken to report cached tokens as OpenAI
# does; the project's test server does (losona/testing/openai_server.py).
OWN_SERVER = CacheRule("your server (taken to cache as OpenAI does)", False, 1024, 128)
# Minimum cacheable prefixes by model, from the providers' prompt-caching pages (2026);
# the first pattern that matches the model id wins.
ANTHROPIC_MIN_TOKENS = (
    (re.compile(r"opus-4-[56]|haiku-4-5"), 4096),
    (re.compile(r"opus-4-7|3-haiku|3-5-haiku"), 2048),
    (re.compile(r"(opus|fable|mythos)-5"), 512),
    (re.compile(r""), 1024),  # Opus 4.8, Sonnet 4.x and 5, Opus 4 and 4.1
)
GEMINI_MIN_TOKENS = (
    (re.compile(r"gemini-2\.5"), 2048),
    (re.compile(r"gemini-"), 4096),  # Gemini 3.x Pro and Flash, Gemini 4
)


def _min_tokens(table: tuple[tuple[re.Pattern[str], int], ...], model: str) -> int | None:
    return next((n for pattern, n in table if pattern.search(model)), None)


def cache_rule(provider: str, model: str, *, own_server: bool = False) -> CacheRule | None:
    """How `provider` caches prompts for `model`; None when it caches none that we know of."""
    if own_server:
        return OWN_SERVER
    if provider == "openai":
        return OPENAI
    if provider == "anthropic":
        found = _min_tokens(ANTHROPIC_MIN_TOKENS, model)
        return CacheRule("Anthropic", markers=True, min_tokens=found or 1024)
    if provider == "gemini" and (found := _min_tokens(GEMINI_MIN_TOKENS, model)):
        return CacheRule("Gemini (implicit caching)", markers=False, min_tokens=found)
    return None


@dataclass(frozen=True)
class Reuse:
    """What one call of a run can take from the provider's cache, and after which call."""

    parent: int | None = None  # the earlier call whose prefix it reuses: sent after its answer
    cached_tokens: int = 0  # prompt tokens billed as cached (read)
    written_tokens: int = 0  # prompt tokens written to the cache (Anthropic bills them 1.25x)
    markers: tuple[int, ...] = ()  # indices of the messages to mark with cache_control


NO_REUSE = Reuse()


def serialize(messages: Messages) -> str:
    """A conversation as one text, for a tokenizer: each role, then its message."""
    return "".join(f"{m.get('role')}\n{m.get('content')}\n" for m in messages)


def token_encoder(encode_text: Callable[[str], Sequence[Hashable]]) -> Encode:
    """An Encode that tokenizes the serialized conversation, each distinct text once."""
    memo: dict[str, Sequence[Hashable]] = {}

    def encode(messages: Messages) -> Sequence[Hashable]:
        text = serialize(messages)
        if text not in memo:
            memo[text] = encode_text(text)
        return memo[text]

    return encode


def content_words(messages: Messages) -> list[str]:
    """The words of every message's text, in order: how the test server counts tokens."""
    return [
        word
        for m in messages
        if isinstance(m.get("content"), str)
        for word in str(m.get("content")).split()
    ]


def common_prefix(a: Sequence[Hashable], b: Sequence[Hashable], floor: int = 0) -> int:
    """How many leading items a and b share; 0 when that is fewer than `floor`."""
    n = min(len(a), len(b))
    if n < floor or (floor and a[floor - 1] != b[floor - 1]) or a[:floor] != b[:floor]:
        return 0
    if a[:n] == b[:n]:
        return n
    low, high = floor, n  # a[:low] == b[:low] and a[:high] != b[:high]
    while high - low > 1:
        middle = (low + high) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle
    return low


def _candidates(i: int, first: int | None) -> list[int]:
    """The earlier calls compared with call i: the first with the same prompt, then the window."""
    window = list(range(max(0, i - WINDOW), i))
    return [first, *window] if first is not None and first not in window else window


def plan_reuse(
    conversations: Sequence[Messages], encode: Encode, rule: CacheRule | None
) -> list[Reuse]:
    """For each conversation, sent in this order: what it can reuse of an earlier one.

    Automatic caching (OpenAI, Gemini): the longest token prefix shared with an earlier
    call, cut to the provider's minimum and steps. Markers (Anthropic): whole messages
    shared with another call, marked, and cached only up to the marker.
    """
    if rule is None:
        return [NO_REUSE] * len(conversations)
    texts = [json.dumps(list(map(dict, c)), sort_keys=True) for c in conversations]
    if rule.markers:
        return _plan_markers(conversations, texts, encode, rule)
    first: dict[str, int] = {}
    plans = []
    for i, conversation in enumerate(conversations):
        tokens = encode(conversation)
        parent, shared = None, 0
        # A prompt shorter than the minimum shares nothing cacheable with any other.
        earlier = _candidates(i, first.get(texts[i])) if len(tokens) >= rule.min_tokens else []
        for j in earlier:
            # Only a strictly longer prefix replaces the earliest one found.
            floor = max(rule.min_tokens, shared + 1)
            found = common_prefix(tokens, encode(conversations[j]), floor)
            if found > shared:
                parent, shared = j, found
        first.setdefault(texts[i], i)
        cached = rule.cached(shared)
        plans.append(Reuse(parent, cached) if cached else NO_REUSE)
    return plans


def _plan_markers(
    conversations: Sequence[Messages], texts: list[str], encode: Encode, rule: CacheRule
) -> list[Reuse]:
    """Anthropic: mark shared whole messages; a call reads what its parent wrote."""
    keys = [[json.dumps(dict(m), sort_keys=True) for m in c] for c in conversations]

    def shared_messages(i: int, j: int) -> int:
        return next(
            (n for n, (a, b) in enumerate(zip(keys[i], keys[j], strict=False)) if a != b),
            min(len(keys[i]), len(keys[j])),
        )

    def tokens_through(i: int, last: int) -> int:
        return len(encode(conversations[i][: last + 1]))

    first: dict[str, int] = {}
    parents: list[tuple[int, int] | None] = []  # (parent, whole messages shared)
    for i in range(len(conversations)):
        best: tuple[int, int] | None = None
        long_enough = len(encode(conversations[i])) >= rule.min_tokens
        for j in _candidates(i, first.get(texts[i])) if long_enough else []:
            n = shared_messages(i, j)
            if n and (best is None or n > best[1]) and tokens_through(i, n - 1) >= rule.min_tokens:
                best = (j, n)
        first.setdefault(texts[i], i)
        parents.append(best)
    # Each call marks the last message it shares whole with its parent and with each call
    # that reuses it: so the parent wrote exactly the prefix a child reads.
    marks: list[set[int]] = [set() for _ in conversations]
    for i, found in enumerate(parents):
        if found is not None:
            parent, n = found
            marks[i].add(n - 1)
            marks[parent].add(n - 1)
    plans = []
    for i, found in enumerate(parents):
        markers = tuple(sorted(marks[i])[-MAX_MARKERS:])
        if not markers:
            plans.append(NO_REUSE)
            continue
        read = tokens_through(i, found[1] - 1) if found is not None else 0
        deepest = tokens_through(i, markers[-1])
        plans.append(
            Reuse(
                parent=found[0] if found is not None else None,
                cached_tokens=read,
                written_tokens=max(0, deepest - read),
                markers=markers,
            )
        )
    return plans
