"""The lexicon judge's rules (losona/data/lexicon.yaml; its header explains the format),
read and checked by the config checker, and one rule applied to a reply's normalised text."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import Field, StrictStr, ValidationInfo, field_validator, model_validator

from losona.core.catalog import Catalog, load_catalog
from losona.core.config.checker import Refusal, check
from losona.core.config.values import Count, Flag, Schema, WholeNumber
from losona.core.config.values import Text as NonEmptyText  # `Text` here is a reply as rules see it
from losona.core.errors import LosonaError
from losona.core.files import read_yaml

RULES_PATH = Path(str(resources.files("losona") / "data" / "lexicon.yaml"))

_TESTS = ("forbid", "require", "max_words", "min_words")
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
        """Whether the text passes, and the spans (or the count) that decided it; with a
        scope, a cue the speaker negates ("not sorry") is not found."""

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
    cues: Rule  # requires an answer or a reaction to the elicitor: found, the reply takes it up
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
    shared: tuple[Rule, ...]  # the every_norm rules, also at the head of each norm


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


def _expand(pattern: str, lists: Mapping[str, Sequence[str]]) -> str:
    """A pattern with its list references spelled out, checked to compile."""

    def expand(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in (MEMBERS[1:-1], SUBJECT[1:-1]):
            return match.group(0)
        if name not in lists:
            raise Refusal(
                f"a pattern naming only lists under 'lists' (or {MEMBERS}, {SUBJECT})",
                f"{pattern!r}, which names an unknown list '{name}'",
            )
        return "(?:" + "|".join(f"(?:{entry})" for entry in lists[name]) + ")"

    source = _LIST_REFERENCE.sub(expand, pattern)
    try:
        compiled(source, ("someone",), "author")
    except re.error as exc:
        raise Refusal("a valid regular expression", f"{pattern!r} ({exc})") from None
    return source


# -- the rules file as written, checked by the config checker (losona/core/config/) -----------

# Lists, not tuples: pydantic counts only a tuple's valid items against its min_length, so
# one bad pattern would also be reported as a list too short.
Pattern = Annotated[StrictStr, Field(min_length=1)]
PATTERNS = "a non-empty list of patterns (each non-empty text)"
Patterns = Annotated[list[Pattern], Field(min_length=1, description=PATTERNS)]
Words = Annotated[
    list[Annotated[StrictStr, Field(min_length=1)]],
    Field(description="a list of words (each non-empty text)"),
]
WORD_COUNT = "an integer of at least 0"
EACH_RULE = "each a mapping with id, checks and one test"


class _RuleEntry(Schema):
    """One rule as written: an id, a checks line and exactly one test (see the file's header)."""

    id: NonEmptyText
    checks: NonEmptyText
    negatable: Flag = True
    forbid: Annotated[Patterns | None, Field(description=PATTERNS)] = None
    require: Annotated[Patterns | None, Field(description=PATTERNS)] = None
    max_words: Annotated[WholeNumber | None, Field(description=WORD_COUNT)] = None
    min_words: Annotated[WholeNumber | None, Field(description=WORD_COUNT)] = None

    @model_validator(mode="before")
    @classmethod
    def _one_test(cls, node: Any) -> Any:
        if isinstance(node, Mapping):
            tests = [key for key in _TESTS if key in node]
            if len(tests) != 1:
                raise Refusal(f"exactly one test of {list(_TESTS)}", f"{tests}")
        return node

    @field_validator(*_TESTS, mode="before")
    @classmethod
    def _not_null(cls, value: Any, info: ValidationInfo) -> Any:
        # None stands for a test not written (the default); a test written as null is refused.
        if value is None:
            raise Refusal(cls.model_fields[str(info.field_name)].description or "a value")
        return value

    @property
    def test(self) -> str:
        """The rule's one test (the validator above made sure there is exactly one)."""
        return next(key for key in _TESTS if getattr(self, key) is not None)


class _ScopeEntry(Schema):
    """When a cue counts as negated (see Scope)."""

    window: Count
    negators: Words
    conditionals: Words
    clause_break: Annotated[Pattern, Field(description="a regular expression (non-empty text)")]

    @field_validator("clause_break")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise Refusal("a valid regular expression", f"{pattern!r} ({exc})") from None
        return pattern


class _UptakeEntry(Schema):
    """What the uptake check reads (see Uptake)."""

    filler: Patterns
    cues: Patterns
    common_words: Words
    english: Words
    other_language: Words
    echo_min_words: Count
    whole_echo_min_words: Count
    stem_prefix: Count
    terse_max_words: Count


class _RulesFile(Schema):
    """The rules file as written: checked by the config checker, like every config."""

    version: NonEmptyText
    lists: Annotated[
        dict[StrictStr, Patterns],
        Field(description="a mapping of list names to non-empty lists of patterns"),
    ]
    scope: _ScopeEntry
    uptake: _UptakeEntry
    every_norm: Annotated[list[_RuleEntry], Field(description=f"a list of rules ({EACH_RULE})")]
    norms: Annotated[
        dict[StrictStr, Annotated[list[_RuleEntry], Field(min_length=1)]],
        Field(description=f"a mapping of norm ids to non-empty lists of rules ({EACH_RULE})"),
    ]

    @model_validator(mode="after")
    def _patterns_expand(self) -> Self:
        # A list reference names a list of this file, and every pattern compiles.
        for key, pattern in self.patterns():
            try:
                _expand(pattern, self.lists)
            except Refusal as refusal:
                raise Refusal(refusal.expected, refusal.found, key) from None
        return self

    def patterns(self) -> list[tuple[str, str]]:
        """Every pattern of the rules and the uptake check, with its dotted place."""
        placed = [
            (f"uptake.{name}.{i}", pattern)
            for name in ("filler", "cues")
            for i, pattern in enumerate(getattr(self.uptake, name))
        ]
        rules = [(f"every_norm.{i}", rule) for i, rule in enumerate(self.every_norm)] + [
            (f"norms.{norm_id}.{i}", rule)
            for norm_id, norm_rules in self.norms.items()
            for i, rule in enumerate(norm_rules)
        ]
        for where, rule in rules:
            for test in ("forbid", "require"):
                for i, pattern in enumerate(getattr(rule, test) or ()):
                    placed.append((f"{where}.{test}.{i}", pattern))
        return placed


def _rule(entry: _RuleEntry, lists: Mapping[str, Sequence[str]]) -> Rule:
    test = entry.test
    if test in ("max_words", "min_words"):
        return Rule(entry.id, entry.checks, test, limit=getattr(entry, test))
    sources = tuple(_expand(pattern, lists) for pattern in getattr(entry, test))
    return Rule(entry.id, entry.checks, test, sources=sources, negatable=entry.negatable)


def _words(words: Sequence[str]) -> frozenset[str]:
    return frozenset(Text.of(word).normalized.lower() for word in words)


def _scope(entry: _ScopeEntry) -> Scope:
    return Scope(
        window=entry.window,
        negators=_words(entry.negators),
        conditionals=re.compile(
            r"\b(?:" + "|".join(map(re.escape, sorted(_words(entry.conditionals)))) + r")\b",
            re.IGNORECASE,
        ),
        clause_break=re.compile(entry.clause_break, re.IGNORECASE),
    )


def _uptake(entry: _UptakeEntry, lists: Mapping[str, Sequence[str]]) -> Uptake:
    return Uptake(
        filler=tuple(_expand(pattern, lists) for pattern in entry.filler),
        cues=Rule(
            "cues",
            "an answer or a reaction to the elicitor",
            "require",
            sources=tuple(_expand(pattern, lists) for pattern in entry.cues),
        ),
        common_words=_words(entry.common_words),
        english=_words(entry.english),
        other_language=_words(entry.other_language),
        echo_min_words=entry.echo_min_words,
        whole_echo_min_words=entry.whole_echo_min_words,
        stem_prefix=entry.stem_prefix,
        terse_max_words=entry.terse_max_words,
    )


def parse_rules(raw: Any, catalog: Catalog) -> Rulebook:
    """Build the rulebook, refusing a malformed rule or a norm without rules."""
    checked = check(_RulesFile, raw, origin=str(RULES_PATH), key="")
    # The rules cover exactly the catalog's norms (one line per norm, as the checker writes).
    problems = [
        f"{RULES_PATH}: 'norms.{norm_id}': expected a norm of the catalog, found a norm it lacks"
        for norm_id in checked.norms
        if norm_id not in catalog.norms
    ] + [
        f"{RULES_PATH}: 'norms.{norm_id}': expected the rules of this norm of the catalog, "
        "found nothing (it is missing)"
        for norm_id in catalog.norms
        if norm_id not in checked.norms
    ]
    if problems:
        raise LosonaError("\n  ".join(problems))
    shared = tuple(_rule(entry, checked.lists) for entry in checked.every_norm)
    return Rulebook(
        checked.version,
        {
            norm_id: shared + tuple(_rule(entry, checked.lists) for entry in entries)
            for norm_id, entries in checked.norms.items()
        },
        _uptake(checked.uptake, checked.lists),
        _scope(checked.scope),
        shared,
    )


@cache
def load_rules() -> Rulebook:
    """The rules file shipped with the package (read once per process)."""
    return parse_rules(read_yaml(RULES_PATH), load_catalog())
