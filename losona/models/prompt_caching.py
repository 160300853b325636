"""Provider prompt caching: each provider's rules, and which earlier call of a run a call
can reuse a prefix of (docs/sampling.md, "Prompt caching").

`plan_reuse` gives each call its parent, sent first since calls sent side by side all miss,
and what the provider would bill as cached. The prompt and the call-cache key never change.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import json
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

Messages = Sequence[Mapping[str, Any]]
# A conversation's prompt as a sequence of tokens (or any units a server counts).
Encode = Callable[[Messages], Sequence[Hashable]]

T = TypeVar("T")

# How many calls just before a call are compared with it (and the first with its prompt).
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
# A server of your own is taken to report cached tokens as OpenAI does (the test server does).
OWN_SERVER = dataclasses.replace(OPENAI, provider="your server (taken to cache as OpenAI does)")
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


@dataclass(frozen=True, slots=True)
class Reuse:
    """What one call of a run can take from the provider's cache, and after which call."""

    parent: int | None = None  # the earlier call whose prefix it reuses: sent after its answer
    cached_tokens: int = 0  # prompt tokens billed as cached (read)
    written_tokens: int = 0  # prompt tokens written to the cache (Anthropic bills them 1.25x)
    markers: tuple[int, ...] = ()  # indices of the messages to mark with cache_control


NO_REUSE = Reuse()


def token_encoder(encode_text: Callable[[str], Sequence[Hashable]]) -> Encode:
    """An Encode of the conversation as one text (each role, then its message) that tokenizes
    a prompt's K trials, sent back to back, once; only the last few texts, as tokens take
    many times the text's size."""
    remembered = functools.lru_cache(maxsize=8)(encode_text)

    def encode(messages: Messages) -> Sequence[Hashable]:
        return remembered("".join(f"{m.get('role')}\n{m.get('content')}\n" for m in messages))

    return encode


def content_words(messages: Messages) -> list[str]:
    """The words of every message's text, in order: how the test server counts tokens."""
    return [
        word for m in messages if isinstance(text := m.get("content"), str) for word in text.split()
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


def _prompt_id(conversation: Messages) -> bytes:
    """What tells two prompts apart (their messages as canonical JSON), in 32 bytes."""
    text = json.dumps(list(map(dict, conversation)), sort_keys=True)
    return hashlib.sha256(text.encode()).digest()


def _with_earlier(
    conversations: Iterable[Messages], compared: Callable[[Messages], T]
) -> Iterator[tuple[Messages, T, list[tuple[int, T]]]]:
    """Each conversation, what is compared of it, and the earlier calls to compare it with
    (index, what is compared of it): the first call of the same prompt (compared as this
    one), then the WINDOW calls just before it."""
    first: dict[bytes, int] = {}
    recent: collections.deque[tuple[int, T]] = collections.deque(maxlen=WINDOW)
    for i, conversation in enumerate(conversations):
        own = compared(conversation)
        same = first.setdefault(_prompt_id(conversation), i)
        earlier = [(same, own)] if same < i and (not recent or same < recent[0][0]) else []
        yield conversation, own, earlier + list(recent)
        recent.append((i, own))


def plan_reuse(
    conversations: Iterable[Messages], encode: Encode, rule: CacheRule | None
) -> list[Reuse]:
    """For each conversation, sent in this order: what it can reuse of an earlier one.

    Automatic caching (OpenAI, Gemini): the longest token prefix shared with an earlier
    call, cut to the provider's minimum and steps. Markers (Anthropic): whole messages
    shared with another call, marked. Only the last WINDOW calls' tokens are kept.
    """
    if rule is None:
        return [NO_REUSE for _ in conversations]
    if rule.markers:
        return _plan_markers(conversations, encode, rule)
    numbering: collections.defaultdict[Hashable, int] = collections.defaultdict(
        lambda: len(numbering)
    )
    plans = []
    for _, tokens, candidates in _with_earlier(
        conversations, lambda conversation: _as_text(encode(conversation), numbering)
    ):
        parent, shared = None, 0
        # A prompt shorter than the minimum shares nothing cacheable with any other.
        if len(tokens) >= rule.min_tokens:
            for j, earlier in candidates:
                # Only a strictly longer prefix replaces the earliest one found.
                floor = max(rule.min_tokens, shared + 1)
                found = common_prefix(tokens, earlier, floor)
                if found > shared:
                    parent, shared = j, found
        cached = rule.cached(shared)
        plans.append(Reuse(parent, cached) if cached else NO_REUSE)
    return plans


def _as_text(tokens: Sequence[Hashable], numbering: dict[Hashable, int]) -> str:
    """Tokens as a character each, so that prefixes compare as fast as text: token ids as
    they are, other tokens (words) numbered as they come."""
    if tokens and isinstance(tokens[0], int):
        return "".join(map(chr, cast(Sequence[int], tokens)))
    return "".join(map(chr, map(numbering.__getitem__, tokens)))


def _shared_messages(a: Sequence[str], b: Sequence[str]) -> int:
    """How many whole messages two conversations share from the start."""
    return next(
        (n for n, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
    )


def _through(encode: Encode, conversation: Messages, last: int, counted: dict[int, int]) -> int:
    """A conversation's prompt tokens through message `last`, counted once."""
    if last not in counted:
        counted[last] = len(encode(conversation[: last + 1]))
    return counted[last]


def _plan_markers(
    conversations: Iterable[Messages], encode: Encode, rule: CacheRule
) -> list[Reuse]:
    """Anthropic: mark shared whole messages; a call reads what its parent wrote."""
    parents: list[tuple[int, int] | None] = []  # (parent, whole messages shared)
    # Per call, its prompt tokens through message k, for each k a plan below needs.
    through: list[dict[int, int]] = []
    for conversation, messages, candidates in _with_earlier(
        conversations,
        lambda conversation: [json.dumps(dict(m), sort_keys=True) for m in conversation],
    ):
        counted: dict[int, int] = {}
        best: tuple[int, int] | None = None
        long_enough = len(encode(conversation)) >= rule.min_tokens
        for j, other in candidates if long_enough else []:
            n = _shared_messages(messages, other)
            if (
                n
                and (best is None or n > best[1])
                and _through(encode, conversation, n - 1, counted) >= rule.min_tokens
            ):
                best = (j, n)
        parents.append(best)
        through.append(counted)
    # Each call marks the last message it shares whole with its parent and with each call
    # that reuses it: so the parent wrote exactly the prefix a child reads.
    marks: collections.defaultdict[int, set[int]] = collections.defaultdict(set)
    for i, found in enumerate(parents):
        if found is not None:
            parent, n = found
            marks[i].add(n - 1)
            marks[parent].add(n - 1)
            # Through that message the parent's prompt is the child's, token for token.
            through[parent].setdefault(n - 1, through[i][n - 1])
    plans = []
    for i, found in enumerate(parents):
        markers = tuple(sorted(marks.get(i, ()))[-MAX_MARKERS:])
        if not markers:
            plans.append(NO_REUSE)
            continue
        earlier, read = (found[0], through[i][found[1] - 1]) if found is not None else (None, 0)
        written = max(0, through[i][markers[-1]] - read)
        plans.append(Reuse(earlier, cached_tokens=read, written_tokens=written, markers=markers))
    return plans
