"""The lexicon judge: transparent rules per norm, offline, no model.

The rules live in `losona/data/lexicon.yaml` (its header explains the format); this module
only loads, checks and applies them. A response complies when it passes the rules for
every norm and then every rule of its own norm. The judge reads the response and the
names of the chat's other members, nothing else: its verdict carries the spans that
decided it as evidence and a one-line reasoning, and no elicitor uptake, which it cannot
assess.
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
from losona.io import read_yaml
from losona.judges.base import JudgeCase, Judgement

RULES_PATH = Path(str(resources.files("losona") / "data" / "lexicon.yaml"))

_TESTS = ("forbid", "require", "max_words", "min_words")
_LIST_REFERENCE = re.compile(r"\{([a-z_]+)\}")
# Filled per case with the names of everyone else in the chat (see the rules file).
MEMBERS = "{members}"
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

    def apply(self, text: Text, members: tuple[str, ...] = ()) -> tuple[bool, list[str]]:
        """Whether the text passes, and the spans (or the count) that decided it."""
        if self.test == "max_words":
            return text.words <= self.limit, [f"{text.words} words"]
        if self.test == "min_words":
            return text.words >= self.limit, [f"{text.words} words"]
        spans = [
            text.span(match)
            for source in self.sources
            for match in _regex(source, members if MEMBERS in source else ()).finditer(
                text.normalized
            )
        ]
        spans = list(dict.fromkeys(s for s in spans if s.strip()))
        if self.test == "forbid":
            return not spans, spans
        return bool(spans), spans


@dataclass(frozen=True)
class Rulebook:
    """Every norm's rules, as loaded from the rules file."""

    version: str
    norms: Mapping[str, tuple[Rule, ...]]


def _word_bounded(pattern: str) -> str:
    # A match may not start or end inside a word, unless its own first or last character
    # is not a word character (so '\?' or '!' still match after a word).
    return rf"(?:(?<!\w)|(?=\W))(?:{pattern})(?:(?!\w)|(?<=\W))"


@cache
def _regex(source: str, members: tuple[str, ...]) -> re.Pattern[str]:
    names = [re.escape(Text.of(name).normalized) for name in members]
    # With nobody else in the chat, a pattern about other members can never match.
    filled = source.replace(MEMBERS, "(?:" + "|".join(names) + ")" if names else "(?!)")
    return re.compile(_word_bounded(filled), re.IGNORECASE)


def _expand(pattern: Any, lists: Mapping[str, list[str]], where: str) -> str:
    """A pattern with its list references spelled out, checked to compile."""
    if not isinstance(pattern, str) or not pattern:
        raise LosonaError(f"{where}: expected a pattern (non-empty text), found {pattern!r}")

    def expand(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == MEMBERS[1:-1]:
            return MEMBERS
        if name not in lists:
            raise LosonaError(f"{where}: pattern {pattern!r} names an unknown list '{name}'")
        return "(?:" + "|".join(f"(?:{entry})" for entry in lists[name]) + ")"

    source = _LIST_REFERENCE.sub(expand, pattern)
    try:
        _regex(source, ("someone",))
    except re.error as exc:
        raise LosonaError(f"{where}: pattern {pattern!r} is not a valid regex ({exc})") from None
    return source


def _rule(raw: Any, lists: Mapping[str, list[str]], where: str) -> Rule:
    if not isinstance(raw, dict):
        raise LosonaError(f"{where}: expected a mapping with id, checks and one test")
    unknown = set(raw) - {"id", "checks", *_TESTS}
    tests = [key for key in _TESTS if key in raw]
    if unknown or len(tests) != 1:
        raise LosonaError(
            f"{where}: expected keys id, checks and exactly one of {list(_TESTS)}, "
            f"found {sorted(raw)}"
        )
    for key in ("id", "checks"):
        if not isinstance(raw.get(key), str) or not raw[key].strip():
            raise LosonaError(f"{where}: '{key}' must be non-empty text, found {raw.get(key)!r}")
    where = f"{where} ({raw['id']})"
    test = tests[0]
    value = raw[test]
    if test in ("max_words", "min_words"):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise LosonaError(f"{where}: {test} must be a whole number, found {value!r}")
        return Rule(raw["id"], raw["checks"], test, limit=value)
    if not isinstance(value, list) or not value:
        raise LosonaError(f"{where}: {test} must be a non-empty list of patterns")
    sources = tuple(_expand(p, lists, f"{where} {test}") for p in value)
    return Rule(raw["id"], raw["checks"], test, sources=sources)


def parse_rules(raw: Any, catalog: Catalog, origin: Path = RULES_PATH) -> Rulebook:
    """Build the rulebook, refusing a malformed rule or a norm without rules."""
    keys = {"version", "lists", "every_norm", "norms"}
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
    return Rulebook(str(raw["version"]), rulebook)


@cache
def load_rules(path: Path = RULES_PATH) -> Rulebook:
    """The rules file shipped with the package (read once per process)."""
    return parse_rules(read_yaml(path), load_catalog(), path)


def judge_text(
    rules: Sequence[Rule], response: str, requirement: str, members: tuple[str, ...] = ()
) -> Judgement:
    """Apply one norm's rules to one response; `members` are the chat's other members."""
    text = Text.of(response)
    passed: list[str] = []
    for rule in rules:
        ok, spans = rule.apply(text, members)
        if not ok:
            if rule.test == "forbid":
                found = ", ".join(repr(s) for s in spans)
            else:
                found = spans[0] if spans else "none"
            return Judgement(
                complies=False,
                elicitor_uptake=None,
                norm_requirement=requirement,
                evidence="; ".join(spans) or None,
                reasoning=f"breach ({rule.id}): expected {rule.checks}; found {found}",
                status="ok",
            )
        if rule.test == "require":
            passed.extend(spans)
    return Judgement(
        complies=True,
        elicitor_uptake=None,
        norm_requirement=requirement,
        evidence="; ".join(passed) if passed else None,
        reasoning="complies: passed " + ", ".join(rule.id for rule in rules),
        status="ok",
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
        rules = self.rulebook.norms[case.norm_id]
        return judge_text(rules, case.response, requirement, case.members)
