"""Whether a reply takes up the final elicitor at all (Appendix C, step 1): an empty reply,
filler, an echo, another language or an off-topic message complies with no norm."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from losona.judges.base import JudgeCase
from losona.judges.rules import WORD, Rulebook, Text, Uptake, compiled


def _tokens(text: str) -> list[str]:
    """A message's words, lower-cased, after the same normalisation as the rules'."""
    return [w.lower() for w in WORD.findall(Text.of(text).normalized)]


def _contains(outer: list[str], inner: list[str]) -> bool:
    """Whether `inner` occurs in `outer` as a run of consecutive words."""
    n = len(inner)
    return n > 0 and any(outer[i : i + n] == inner for i in range(len(outer) - n + 1))


@dataclass(frozen=True)
class NoUptake:
    """Why a reply does not take up the elicitor: the check's id, what it expects, and found."""

    id: str
    checks: str
    found: str
    evidence: str | None = None  # the spans that decided it, when a rule found some


def _echo(
    words: list[str], elicitor: list[str], earlier: list[list[str]], uptake: Uptake
) -> str | None:
    """The message a reply sends back, if it is the elicitor or an earlier message (or part)."""
    if not words:
        return None
    named = [("the elicitor", elicitor, 1)] + [
        ("an earlier message", m, uptake.whole_echo_min_words) for m in earlier
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
        rest = compiled(source, ()).sub(" ", rest)
    if not WORD.search(rest):
        return None, NoUptake(
            "filler", "more than filler, punctuation or emoji", repr(text.original.strip())
        )
    elicitor, earlier = _tokens(case.elicitor_content), [_tokens(m) for m in case.earlier_messages]
    echoed = _echo(words, elicitor, earlier, uptake)
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
    reacts, cues = uptake.cues.apply(text, case.members, subject=case.subject)
    if reacts:
        return "answers or reacts to it: " + ", ".join(repr(c) for c in cues), None
    if len(words) <= uptake.terse_max_words:
        return "a terse answer: " + repr(text.original.strip()), None
    # A name is not a topic: a story that mentions members shares nothing with the chat.
    names = set(_tokens(" ".join((*case.members, case.subject))))
    reply = _content(words, uptake) - names
    said = _content([w for m in (elicitor, *earlier) for w in m], uptake) - names
    shared = _shared(reply, said, uptake.stem_prefix)
    if shared:
        return "takes up the chat's topic: " + ", ".join(repr(w) for w in shared[:5]), None
    return None, NoUptake(
        "off_topic",
        "a reply that shares a topic word with the chat, answers or reacts to the elicitor",
        "no shared topic word and no answer or reaction",
    )
