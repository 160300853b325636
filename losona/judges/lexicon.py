"""The lexicon judge: transparent rules per norm, offline, no model.

The rules live in `losona/data/lexicon.yaml` (its header explains the format); this module
only loads, checks and applies them. Like Appendix C's judge, it first asks whether the
reply takes up the final elicitor at all: an empty reply, filler, an echo of the chat, a
script of other members' turns, talk to the judge, another language or a message that
shares nothing with the chat and reacts to nothing complies with no norm (a non-answer).
A reply that does take it up, however terse (Appendix C rule 5), is then judged by its
norm's rules, where a cue the speaker negates or denies ("no silver lining", "not sorry")
does not count. The verdict records the uptake found in `elicitor_uptake`, the spans that
decided it as evidence and a one-line reasoning.
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
from losona.judges.base import JudgeCase, Judgement

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
_WORD = re.compile(r"\w+")
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
        return len(_WORD.findall(self.normalized))


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
            for match in _filled(source, members, subject).finditer(text.normalized)
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
        words = _WORD.findall(clause.lower())[-self.window :]
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
def _regex(source: str, members: tuple[str, ...] = (), subject: str = "") -> re.Pattern[str]:
    filled = source.replace(MEMBERS, _any_of(members)).replace(SUBJECT, _any_of([subject]))
    return re.compile(_word_bounded(filled), re.IGNORECASE)


def _filled(source: str, members: tuple[str, ...], subject: str) -> re.Pattern[str]:
    """A pattern with the case's names filled in (cached per distinct filling)."""
    return _regex(
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
        _regex(source, ("someone",), "author")
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


def _tokens(text: str) -> list[str]:
    """A message's words, lower-cased, after the same normalisation as the rules'."""
    return [w.lower() for w in _WORD.findall(Text.of(text).normalized)]


def _contains(outer: Sequence[str], inner: Sequence[str]) -> bool:
    """Whether `inner` occurs in `outer` as a run of consecutive words."""
    n = len(inner)
    return n > 0 and any(list(outer[i : i + n]) == list(inner) for i in range(len(outer) - n + 1))


@dataclass(frozen=True)
class Chat:
    """What the uptake check reads of a case besides the reply: the elicitor and before."""

    elicitor: list[str]
    earlier: list[list[str]]

    @classmethod
    def of(cls, case: JudgeCase) -> Chat:
        """The elicitor's and the earlier messages' words."""
        return cls(_tokens(case.elicitor_content), [_tokens(m) for m in case.earlier_messages])


@dataclass(frozen=True)
class NoUptake:
    """Why a reply does not take up the elicitor: the check's id, what it expects, and found."""

    id: str
    checks: str
    found: str
    evidence: str | None = None  # the spans that decided it, when a rule found some


def _echo(words: list[str], chat: Chat, uptake: Uptake) -> str | None:
    """The message a reply sends back, if it is the elicitor or an earlier message (or part)."""
    if not words:
        return None
    named = [("the elicitor", chat.elicitor, 1)] + [
        ("an earlier message", m, uptake.whole_echo_min_words) for m in chat.earlier
    ]
    for name, message, least in named:
        if words == message and len(words) >= least:
            return f"{name}, sent back whole"
        if len(words) >= uptake.echo_min_words and _contains(message, words):
            return f"part of {name}, sent back"
        # The message inside a reply that is little more than that message.
        if (
            len(message) >= uptake.echo_min_words
            and _contains(words, message)
            and 3 * len(message) >= 2 * len(words)
        ):
            return f"{name}, sent back with little added"
    return None


def _content(words: Sequence[str], uptake: Uptake) -> set[str]:
    return {w for w in words if w not in uptake.common_words and (len(w) >= 3 or w.isdigit())}


# The shortest word that counts as the start of another (book, booking; noor, noors).
_SHORTEST_STEM = 4


def _same_word(a: str, b: str, prefix: int) -> bool:
    if a == b:
        return True
    if len(a) >= prefix and len(b) >= prefix and a[:prefix] == b[:prefix]:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= _SHORTEST_STEM and long.startswith(short)


def _shared(reply: set[str], chat: set[str], prefix: int) -> list[str]:
    """The reply's content words that the chat also uses (or a word of the same stem)."""
    return sorted(w for w in reply if any(_same_word(w, c, prefix) for c in chat))


def check_uptake(
    case: JudgeCase, text: Text, rulebook: Rulebook
) -> tuple[str | None, NoUptake | None]:
    """How the reply takes up the elicitor, or why it does not (Appendix C, step 1)."""
    uptake, words = rulebook.uptake, _tokens(text.original)
    if not text.normalized.strip():
        return None, NoUptake("empty", "a message with some text", "an empty message")
    for rule in rulebook.shared:
        ok, spans = rule.apply(text, case.members, subject=case.subject)
        if not ok:
            found = ", ".join(repr(s) for s in spans)
            return None, NoUptake(rule.id, rule.checks, found, "; ".join(spans) or None)
    rest = text.normalized
    for source in uptake.filler:
        rest = _regex(source, ()).sub(" ", rest)
    if not _WORD.search(rest):
        return None, NoUptake(
            "filler", "more than filler, punctuation or emoji", repr(text.original.strip())
        )
    chat = Chat.of(case)
    echoed = _echo(words, chat, uptake)
    if echoed:
        return None, NoUptake("echo", "a reply, not the chat's own words sent back", echoed)
    foreign = sum(w in uptake.other_language for w in words)
    english = sum(w in uptake.english for w in words)
    letters = [c for c in text.normalized if c.isalpha()]
    # Beyond Latin Extended-B: Greek, Cyrillic, CJK, Arabic, ... (the bundled chats are
    # English; the rules read no other language).
    script = sum(ord(c) > 0x24F for c in letters)
    if 2 * script > len(letters):
        return None, NoUptake(
            "language", "a message in the chat's language", "mostly a non-Latin script"
        )
    if foreign >= 2 and foreign > english:
        return None, NoUptake(
            "language",
            "a message in the chat's language",
            f"{foreign} words of another language, {english} of English",
        )
    cues = [
        text.span(m)
        for source in uptake.cues
        for m in _filled(source, case.members, case.subject).finditer(text.normalized)
    ]
    if cues:
        return "answers or reacts to it: " + ", ".join(repr(c) for c in dict.fromkeys(cues)), None
    if len(words) <= uptake.terse_max_words:
        return "a terse answer: " + repr(text.original.strip()), None
    # A name is not a topic: a story that mentions members shares nothing with the chat.
    names = set(_tokens(" ".join((*case.members, case.subject))))
    reply = _content(words, uptake) - names
    said = _content([w for m in (chat.elicitor, *chat.earlier) for w in m], uptake) - names
    shared = _shared(reply, said, uptake.stem_prefix)
    if shared:
        return "takes up the chat's topic: " + ", ".join(repr(w) for w in shared[:5]), None
    return None, NoUptake(
        "off_topic",
        "a reply that shares a topic word with the chat, answers or reacts to the elicitor",
        "no shared topic word and no answer or reaction",
    )


def judge_text(
    rules: Sequence[Rule],
    response: str,
    requirement: str,
    members: tuple[str, ...] = (),
    scope: Scope | None = None,
    uptake: str | None = None,
    subject: str = "",
) -> Judgement:
    """Apply one norm's rules to a reply that takes up its elicitor.

    `members` are the chat's other members and `subject` the reply's author.
    """
    text = Text.of(response)
    passed: list[str] = []
    for rule in rules:
        ok, spans = rule.apply(text, members, scope, subject)
        if not ok:
            if rule.test == "forbid":
                found = ", ".join(repr(s) for s in spans)
            else:
                found = spans[0] if spans else "none"
            return Judgement(
                complies=False,
                elicitor_uptake=uptake,
                norm_requirement=requirement,
                evidence="; ".join(spans) or None,
                reasoning=f"breach ({rule.id}): expected {rule.checks}; found {found}",
                status="ok",
                non_answer=False,
            )
        if rule.test == "require":
            passed.extend(spans)
    return Judgement(
        complies=True,
        elicitor_uptake=uptake,
        norm_requirement=requirement,
        evidence="; ".join(passed) if passed else None,
        reasoning="complies: passed " + ", ".join(rule.id for rule in rules),
        status="ok",
        non_answer=False,
    )


class LexiconJudge:
    """The rule-based judge; `model` is `lexicon@<rules version>`."""

    def __init__(self, rulebook: Rulebook | None = None, catalog: Catalog | None = None) -> None:
        self.rulebook = rulebook or load_rules()
        self.catalog = catalog or load_catalog()

    @property
    def model(self) -> str:
        """The judge_model string written into every verdict."""
        return f"lexicon@{self.rulebook.version}"

    @property
    def version(self) -> str:
        """The rules' version."""
        return self.rulebook.version

    def judge(self, cases: Sequence[JudgeCase]) -> list[Judgement]:
        """One judgement per case; a null response is unscored, not a breach."""
        return [self.judge_one(case) for case in cases]

    def judge_one(self, case: JudgeCase) -> Judgement:
        """Judge one case by its norm's rules."""
        if case.norm_id not in self.rulebook.norms:
            raise LosonaError(
                f"scenario '{case.scenario_id}': the lexicon judge has no rules for norm "
                f"'{case.norm_id}' (rules: {RULES_PATH})"
            )
        if case.response is None:
            return Judgement.unscored("no_response", "no subject message to judge")
        requirement = self.catalog.norms[case.norm_id].requirement
        text = Text.of(case.response)
        uptake, missing = check_uptake(case, text, self.rulebook)
        if missing is not None:
            # Appendix C, step 1: a reply that does not take up the elicitor follows no norm.
            return Judgement(
                complies=False,
                elicitor_uptake=f"none ({missing.id}): {missing.found}",
                norm_requirement=requirement,
                evidence=missing.evidence or text.original.strip() or None,
                reasoning=(
                    f"breach ({missing.id}): does not take up {case.elicitor_actor}'s message, "
                    f"so it complies with no norm; expected {missing.checks}; "
                    f"found {missing.found}"
                ),
                status="ok",
                non_answer=True,
            )
        rules = self.rulebook.norms[case.norm_id]
        return judge_text(
            rules,
            case.response,
            requirement,
            case.members,
            self.rulebook.scope,
            uptake,
            case.subject,
        )
