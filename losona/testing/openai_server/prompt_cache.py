"""The test server's prompt cache, billed as OpenAI and Anthropic bill theirs, in words:
OpenAI's the longest prefix shared with an answered prompt, Anthropic's only up to markers.
"""

from __future__ import annotations

import bisect
import collections
import sys

from losona.models.prompt_caching import CacheRule, common_prefix

# The latest answered prompts kept, as a provider's cache forgets.
REMEMBERED_PROMPTS = 10_000


class PromptCache:
    """The prompts a server has answered, for the cached tokens it reports."""

    def __init__(self, rule: CacheRule) -> None:
        self.rule = rule
        self._prompts: list[tuple[str, ...]] = []  # the remembered prompts' words, sorted
        self._answered_order: collections.deque[tuple[str, ...]] = collections.deque()
        self._marked: set[tuple[str, ...]] = set()  # Anthropic: prefixes written to the cache

    def forget(self) -> None:
        """Empty the prompt cache, as a provider's does after some minutes."""
        self._prompts.clear()
        self._answered_order.clear()
        self._marked.clear()

    def cached(self, words: tuple[str, ...]) -> int:
        """The tokens of a prompt that an earlier answered prompt shares, cut as OpenAI does."""
        at = bisect.bisect_left(self._prompts, words)
        # The longest prefix shared with a sorted set is shared with a neighbour.
        shared = max(
            (
                common_prefix(words, self._prompts[i])
                for i in (at - 1, at)
                if 0 <= i < len(self._prompts)
            ),
            default=0,
        )
        return self.rule.cached(shared)

    def add(self, words: tuple[str, ...]) -> None:
        """Remember an answered prompt (the oldest goes past REMEMBERED_PROMPTS)."""
        at = bisect.bisect_left(self._prompts, words)
        if at == len(self._prompts) or self._prompts[at] != words:
            # Each distinct word once in memory: a long run's prompts share their words.
            words = tuple(map(sys.intern, words))
            self._prompts.insert(at, words)
            self._answered_order.append(words)
        if len(self._prompts) > REMEMBERED_PROMPTS:
            oldest = self._answered_order.popleft()
            del self._prompts[bisect.bisect_left(self._prompts, oldest)]

    def marked(self, blocks: list[tuple[str, bool]]) -> tuple[int, int, int]:
        """Anthropic's accounting of a prompt's text blocks (each with its cache mark):
        (its tokens, the tokens read from the cache, the tokens written to it)."""
        words: list[str] = []
        ends: list[tuple[int, bool]] = []  # (words so far, marked) at the end of each block
        for text, marked in blocks:
            words += text.split()
            ends.append((len(words), marked))
        marks = [end for end, marked in ends if marked and end >= self.rule.min_tokens]
        read = max(
            (
                end
                for end, _ in ends
                if end <= max(marks, default=0) and tuple(words[:end]) in self._marked
            ),
            default=0,
        )
        write = max(0, max(marks, default=0) - read)
        return len(words), read, write

    def add_marked(self, blocks: list[tuple[str, bool]]) -> None:
        """Cache an answered Anthropic prompt's prefixes up to each of its markers."""
        words: list[str] = []
        for text, marked in blocks:
            words += text.split()
            if marked and len(words) >= self.rule.min_tokens:
                self._marked.add(tuple(words))
