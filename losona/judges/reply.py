"""How a judge's reply is read: the five Appendix C fields of the judge's own JSON object,
or why it is no verdict (unparseable, echoed from the judged message, copied, placeholders)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from losona.judges.base import JudgeCase, Judgement, Status
from losona.judges.prompt import fenced, judge_messages

TEXT_FIELDS = ("elicitor_uptake", "norm_requirement", "evidence", "reasoning")
FIELDS = (*TEXT_FIELDS, "complies")

# The shortest reasoning held against the texts it may have been copied from: a judge may
# say in a few words what the judged message also says ("it apologises"), but a sentence
# that is word for word in the prompt, or the subject's words as the reasoning, is a copy.
MIN_COPIED_WORDS = {"prompt": 8, "judged message": 4}
# A field left as the answer template has it ("..."), or a stand-in for a value: nothing
# but dots, an ellipsis or a <placeholder>, or a type name.
_PLACEHOLDER = re.compile(r"[.\u2026\s]*|<[^<>]*>|string|text|str", re.IGNORECASE)


class UnparseableReply(ValueError):
    """A judge reply that holds no verdict of the judge's own; the message says what is wrong,
    `status` (base.NOT_A_VERDICT) becomes judge_status if the repair does not mend it."""

    def __init__(self, problem: str, status: Status = "unparseable") -> None:
        super().__init__(problem)
        self.status = status


@dataclass(frozen=True)
class ReplyContext:
    """What a judge's reply is held against: the prompt it answers and the message it judges."""

    prompt: str  # every message the judge was sent, the judged message left out
    judged: str

    @classmethod
    def of(cls, case: JudgeCase) -> ReplyContext:
        """The context of one case's judge prompt."""
        if case.response is None:
            raise ValueError(f"scenario '{case.scenario_id}': no response to judge")
        sent = "\n".join(message["content"] for message in judge_messages(case))
        return cls(prompt=sent.replace(fenced(case.response), ""), judged=case.response)


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object that starts somewhere in the text (nested ones included)."""
    decoder = json.JSONDecoder()
    found = []
    start = text.find("{")
    while start != -1:
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            found.append(value)
        start = text.find("{", start + 1)
    return found


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and (word := value.strip().lower()) in ("true", "false"):
        return word == "true"
    raise UnparseableReply(f"'complies' must be true or false, found {json.dumps(value)}")


def _verdict(obj: Mapping[str, Any]) -> Judgement:
    missing = [field for field in FIELDS if field not in obj]
    if missing:
        raise UnparseableReply(f"the JSON object lacks the field(s) {', '.join(missing)}")
    complies = _boolean(obj["complies"])
    for field in TEXT_FIELDS:
        if obj[field] is not None and not isinstance(obj[field], str):
            raise UnparseableReply(f"'{field}' must be text, found {json.dumps(obj[field])}")
    return Judgement(complies=complies, status="ok", **{field: obj[field] for field in TEXT_FIELDS})


def _words(text: str) -> str:
    """Text compared for copying: its words in lower case, punctuation and spacing aside."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def _taken_from(source: str, obj: Mapping[str, Any], reasoning: str, what: str) -> bool:
    """Whether the verdict object is one `source` holds, or its reasoning is, word for word,
    a passage of `source` (and long enough)."""
    words = _words(reasoning)
    copied = len(words.split()) >= MIN_COPIED_WORDS[what] and f" {words} " in f" {_words(source)} "
    return copied or obj in _json_objects(source)


def _check_own(obj: Mapping[str, Any], verdict: Judgement, context: ReplyContext | None) -> None:
    """Refuse a verdict object that is not the judge's own work (see the module docstring)."""
    reasoning = verdict.reasoning or ""
    if context is not None:
        if _taken_from(context.judged, obj, reasoning, "judged message"):
            raise UnparseableReply(
                "the JSON object is taken from the judged message, not written by you",
                "echoed_message",
            )
        if _taken_from(context.prompt, obj, reasoning, "prompt"):
            raise UnparseableReply(
                "the JSON object's reasoning is copied from the prompt", "copied_prompt"
            )
    # An empty field may mean "nothing to quote"; a placeholder never means anything, and a
    # verdict without reasoning is not one.
    unfilled = [
        field
        for field in TEXT_FIELDS
        if (text := (obj[field] or "").strip()) and _PLACEHOLDER.fullmatch(text)
    ]
    if not reasoning.strip() and "reasoning" not in unfilled:
        unfilled.append("reasoning")
    if unfilled:
        raise UnparseableReply(
            f"the field(s) {', '.join(unfilled)} are not filled in", "placeholder"
        )


# Which problem to report when every object of a reply is refused: the most telling.
_PRIORITY: tuple[Status, ...] = ("echoed_message", "copied_prompt", "placeholder", "unparseable")


def parse_verdict(reply: str | None, context: ReplyContext | None = None) -> Judgement:
    """Read a judge reply into a verdict, or raise UnparseableReply saying what is wrong;
    with a `context`, an object the judged message holds or the prompt gave is refused."""

    if reply is None or not reply.strip():
        raise UnparseableReply("the reply was empty")
    objects = _json_objects(reply)
    if not objects:
        raise UnparseableReply("the reply holds no JSON object")
    verdicts: list[Judgement] = []
    problems: list[UnparseableReply] = []
    for obj in objects:
        try:
            verdict = _verdict(obj)
            _check_own(obj, verdict, context)
        except UnparseableReply as exc:
            problems.append(exc)
        else:
            verdicts.append(verdict)
    if not verdicts:
        raise min(problems, key=lambda problem: _PRIORITY.index(problem.status))
    if len({verdict.complies for verdict in verdicts}) > 1:
        raise UnparseableReply("the reply holds several verdicts that disagree on 'complies'")
    return verdicts[-1]
