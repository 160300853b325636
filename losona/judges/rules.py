"""The lexicon judge's rules: the rules file read and checked, and one rule applied.

The rules live in `losona/data/lexicon.yaml` (its header explains the format). A rule
tests a reply's normalised text (`Text`): a banned or required cue, or a word count; a
`Scope` says when the speaker negates a cue ("no silver lining", "not sorry"), which then
does not count; `Uptake` holds what the uptake check (losona/judges/uptake.py) reads.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from losona.catalog import Catalog, load_catalog
from losona.errors import LosonaError
from losona.files import read_yaml

RULES_PATH = Path(str(resources.files("losona") / "data" / "lexicon.yaml"))

_TESTS = ("forbid", "require", "max_words", "min_words")
_TOP_LEVEL = ("version", "lists", "scope", "uptake", "every_norm", "norms")
_SCOPE_KEYS = ("window", "negators", "conditionals", "clause_break")
_UPTAKE_PATTERNS = ("filler", "cues")
_UPTAKE_WORDS = ("common_words", "english", "other_language")
_UPTAKE_NUMBERS = ("echo_min_words", "whole_echo_min_words", "stem_prefix", "terse_max_words")
_LIST_REFERENCE = re.compile(r"\{([a-z_]+)\}")
# Filled per case with the names of everyone else in the chat, and with the name of the
# reply's own author (see the rules file).
MEMBERS = "{members}"
SUBJECT = "{subject}"
WORD = re.compile(r"\w+")
# Apostrophes of every kind, removed before matching (see the rules file's header).
_APOSTROPHES = str.maketrans("", "", "'\u2018\u2019\u02bc\u0060\u00b4")


@dataclass(frozen=True)
class Text:
    """A response as the rules see it, with a way back to the original characters."""

    original: str
    normalized: str
    origin: tuple[int, ...]  # index in `original` of each character of `normalized`

    @classmethod
    def of(cls, response: str) -> Text:
        """Normalise (NFKC, apostrophes dropped), remembering where each character came from."""
        kept: list[str] = []
        origin: list[int] = []
        for index, char in enumerate(response):
            for part in unicodedata.normalize("NFKC", char).translate(_APOSTROPHES):
                kept.append(part)
                origin.append(index)
        return cls(response, "".join(kept), tuple(origin))

    def span(self, match: re.Match[str]) -> str:
        """The original text a match on the normalised text covers."""
        if match.end() == match.start():
            return ""
        return self.original[self.origin[match.start()] : self.origin[match.end() - 1] + 1]

    @property
    def words(self) -> int:
        """Number of words (an apostrophe does not split one)."""
        return len(WORD.findall(self.normalized))


@dataclass(frozen=True)
class Rule:
    """One check of one norm: its test and the part of the requirement it stands for."""

    id: str
    checks: str
    test: str  # one of _TESTS
    sources: tuple[str, ...] = ()  # regexes, lists expanded; MEMBERS is filled per case
    limit: int = 0
    negatable: bool = True  # False: a cue counts even when the speaker negates it

    def apply(
        self,
        text: Text,
        members: tuple[str, ...] = (),
        scope: Scope | None = None,
        subject: str = "",
    ) -> tuple[bool, list[str]]:
        """Whether the text passes, and the spans (or the count) that decided it.

        With a scope, a cue the speaker negates ("no silver lining", "not sorry") is not
        found: a required cue then does not count, and a banned one is not a breach.
        """
        if self.test == "max_words":
            return text.words <= self.limit, [f"{text.words} words"]
        if self.test == "min_words":
            return text.words >= self.limit, [f"{text.words} words"]
        spans = [
            text.span(match)
            for source in self.sources
            for match in filled(source, members, subject).finditer(text.normalized)
            if scope is None or not self.negatable or not scope.negated(text.normalized, match)
        ]
        spans = list(dict.fromkeys(s for s in spans if s.strip()))
        if self.test == "forbid":
            return not spans, spans
        return bool(spans), spans


@dataclass(frozen=True)
class Scope:
    """When a cue is negated: a negator shortly before it, in its clause, not in a condition."""

    window: int  # how many words before the cue a negator may stand
    negators: frozenset[str]
    conditionals: re.Pattern[str]  # "if ... doesn't clash" names a risk; it denies nothing
    clause_break: re.Pattern[str]

    def negated(self, normalized: str, match: re.Match[str]) -> bool:
        """Whether the speaker negates or denies the cue this match found."""
        if not match.group(0)[:1].isalnum():
            return False  # punctuation and emoji ("!", "?") cannot be negated
        before = normalized[: match.start()]
        clause = self.clause_break.split(before)[-1]
        if self.conditionals.search(clause):
            return False
        words = WORD.findall(clause.lower())[-self.window :]
        return any(word in self.negators for word in words)


@dataclass(frozen=True)
class Uptake:
    """What tells a reply that takes up the elicitor from one that does not (see the rules)."""

    filler: tuple[str, ...]  # regexes; a reply made only of these is filler
    cues: tuple[str, ...]  # regexes; a reply with one reacts to or answers the elicitor
    common_words: frozenset[str]  # never count as sharing a topic with the chat
    english: frozenset[str]
    other_language: frozenset[str]
    echo_min_words: int
    whole_echo_min_words: int
    stem_prefix: int
    terse_max_words: int


@dataclass(frozen=True)
class Rulebook:
    """Every norm's rules, as loaded from the rules file, with the uptake and scope rules."""

    version: str
    norms: Mapping[str, tuple[Rule, ...]]
    uptake: Uptake
    scope: Scope
    shared: tuple[Rule, ...] = ()  # the every_norm rules, also at the head of each norm


def _word_bounded(pattern: str) -> str:
    # A match may not start or end inside a word, unless its own first or last character
    # is not a word character (so '\?' or '!' still match after a word).
    return rf"(?:(?<!\w)|(?=\W))(?:{pattern})(?:(?!\w)|(?<=\W))"


def _any_of(names: Sequence[str]) -> str:
    escaped = [re.escape(Text.of(name).normalized) for name in names if name]
    # With no such name, a pattern about it can never match.
    return "(?:" + "|".join(escaped) + ")" if escaped else "(?!)"


@cache
def compiled(source: str, members: tuple[str, ...] = (), subject: str = "") -> re.Pattern[str]:
    filled = source.replace(MEMBERS, _any_of(members)).replace(SUBJECT, _any_of([subject]))
    return re.compile(_word_bounded(filled), re.IGNORECASE)


def filled(source: str, members: tuple[str, ...], subject: str) -> re.Pattern[str]:
    """A pattern with the case's names filled in (cached per distinct filling)."""
    return compiled(
        source, members if MEMBERS in source else (), subject if SUBJECT in source else ""
    )


def _expand(pattern: Any, lists: Mapping[str, list[str]], where: str) -> str:
    """A pattern with its list references spelled out, checked to compile."""
    if not isinstance(pattern, str) or not pattern:
        raise LosonaError(f"{where}: expected a pattern (non-empty text), found {pattern!r}")

    def expand(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in (MEMBERS[1:-1], SUBJECT[1:-1]):
            return match.group(0)
        if name not in lists:
            raise LosonaError(f"{where}: pattern {pattern!r} names an unknown list '{name}'")
        return "(?:" + "|".join(f"(?:{entry})" for entry in lists[name]) + ")"

    source = _LIST_REFERENCE.sub(expand, pattern)
    try:
        compiled(source, ("someone",), "author")
    except re.error as exc:
        raise LosonaError(f"{where}: pattern {pattern!r} is not a valid regex ({exc})") from None
    return source


def _rule(raw: Any, lists: Mapping[str, list[str]], where: str) -> Rule:
    if not isinstance(raw, dict):
        raise LosonaError(f"{where}: expected a mapping with id, checks and one test")
    unknown = set(raw) - {"id", "checks", "negatable", *_TESTS}
    tests = [key for key in _TESTS if key in raw]
    if unknown or len(tests) != 1:
        raise LosonaError(
            f"{where}: expected keys id, checks and exactly one of {list(_TESTS)} "
            f"(and optionally negatable), found {sorted(raw)}"
        )

    for key in ("id", "checks"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise LosonaError(f"{where}: '{key}' must be non-empty text, found {raw.get(key)!r}")
    where = f"{where} ({raw['id']})"
    negatable = raw.get("negatable", True)
    if not isinstance(negatable, bool):
        raise LosonaError(f"{where}: negatable must be true or false, found {negatable!r}")
    test = tests[0]
    value = raw[test]
    if test in ("max_words", "min_words"):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise LosonaError(f"{where}: {test} must be a whole number, found {value!r}")
        return Rule(raw["id"], raw["checks"], test, limit=value)
    if not isinstance(value, list) or not value:
        raise LosonaError(f"{where}: {test} must be a non-empty list of patterns")
    sources = tuple(_expand(p, lists, f"{where} {test}") for p in value)
    return Rule(raw["id"], raw["checks"], test, sources=sources, negatable=negatable)


def _words_list(raw: Any, where: str) -> frozenset[str]:
    if not isinstance(raw, list) or not all(isinstance(w, str) and w for w in raw):
        raise LosonaError(f"{where}: expected a list of words")
    return frozenset(Text.of(w).normalized.lower() for w in raw)


def _whole_number(raw: Any, where: str) -> int:
    if not isinstance(raw, int) or isinstance(raw, bool) or raw < 1:
        raise LosonaError(f"{where}: expected a whole number of at least 1, found {raw!r}")
    return raw


def _keys(raw: Any, keys: Sequence[str], where: str) -> dict[str, Any]:
    if not isinstance(raw, dict) or set(raw) != set(keys):
        found = sorted(raw) if isinstance(raw, dict) else raw
        raise LosonaError(f"{where}: expected exactly the keys {sorted(keys)}, found {found}")
    return raw


def _scope(raw: Any, origin: Path) -> Scope:
    raw = _keys(raw, _SCOPE_KEYS, f"{origin}: scope")
    conditionals = _words_list(raw["conditionals"], f"{origin}: scope.conditionals")
    pattern = raw["clause_break"]
    if not isinstance(pattern, str) or not pattern:
        raise LosonaError(f"{origin}: scope.clause_break: expected a pattern")
    try:
        clause_break = re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise LosonaError(f"{origin}: scope.clause_break is not a valid regex ({exc})") from None
    return Scope(
        window=_whole_number(raw["window"], f"{origin}: scope.window"),
        negators=_words_list(raw["negators"], f"{origin}: scope.negators"),
        conditionals=re.compile(
            r"\b(?:" + "|".join(re.escape(c) for c in sorted(conditionals)) + r")\b",
            re.IGNORECASE,
        ),
        clause_break=clause_break,
    )


def _uptake(raw: Any, lists: Mapping[str, list[str]], origin: Path) -> Uptake:
    keys = (*_UPTAKE_PATTERNS, *_UPTAKE_WORDS, *_UPTAKE_NUMBERS)
    raw = _keys(raw, keys, f"{origin}: uptake")
    patterns: dict[str, tuple[str, ...]] = {}
    for key in _UPTAKE_PATTERNS:
        where = f"{origin}: uptake.{key}"
        if not isinstance(raw[key], list) or not raw[key]:
            raise LosonaError(f"{where}: expected a non-empty list of patterns")
        patterns[key] = tuple(_expand(p, lists, where) for p in raw[key])
    words = {key: _words_list(raw[key], f"{origin}: uptake.{key}") for key in _UPTAKE_WORDS}
    numbers = {key: _whole_number(raw[key], f"{origin}: uptake.{key}") for key in _UPTAKE_NUMBERS}
    return Uptake(
        filler=patterns["filler"],
        cues=patterns["cues"],
        common_words=words["common_words"],
        english=words["english"],
        other_language=words["other_language"],
        echo_min_words=numbers["echo_min_words"],
        whole_echo_min_words=numbers["whole_echo_min_words"],
        stem_prefix=numbers["stem_prefix"],
        terse_max_words=numbers["terse_max_words"],
    )


def parse_rules(raw: Any, catalog: Catalog, origin: Path = RULES_PATH) -> Rulebook:
    """Build the rulebook, refusing a malformed rule or a norm without rules."""
    keys = set(_TOP_LEVEL)
    if not isinstance(raw, dict) or set(raw) != keys:
        raise LosonaError(f"{origin}: expected exactly the top-level keys {sorted(keys)}")
    lists = raw["lists"]
    if not isinstance(lists, dict) or not all(
        isinstance(v, list) and all(isinstance(e, str) for e in v) for v in lists.values()
    ):
        raise LosonaError(f"{origin}: 'lists' must map names to lists of patterns")
    norms = raw["norms"]
    if not isinstance(norms, dict):
        raise LosonaError(f"{origin}: 'norms' must map norm ids to lists of rules")
    unknown = sorted(set(norms) - set(catalog.norms))
    missing = sorted(set(catalog.norms) - set(norms))
    if unknown or missing:
        raise LosonaError(
            f"{origin}: the rules must cover exactly the catalog's norms; "
            f"unknown: {unknown}, missing: {missing}"
        )
    if not isinstance(raw["every_norm"], list):
        raise LosonaError(f"{origin}: 'every_norm' must be a list of rules")
    shared = tuple(
        _rule(r, lists, f"{origin}: every_norm[{i}]") for i, r in enumerate(raw["every_norm"])
    )
    rulebook: dict[str, tuple[Rule, ...]] = {}
    for norm_id, rules in norms.items():
        if not isinstance(rules, list) or not rules:
            raise LosonaError(f"{origin}: norms.{norm_id}: expected a non-empty list of rules")
        rulebook[norm_id] = shared + tuple(
            _rule(r, lists, f"{origin}: norms.{norm_id}[{i}]") for i, r in enumerate(rules)
        )
    return Rulebook(
        str(raw["version"]),
        rulebook,
        _uptake(raw["uptake"], lists, origin),
        _scope(raw["scope"], origin),
        shared,
    )


@cache
def load_rules(path: Path = RULES_PATH) -> Rulebook:
    """The rules file shipped with the package (read once per process)."""
    return parse_rules(read_yaml(path), load_catalog(), path)
