"""A stand-in LLM judge for the test server (`--judge`): plausible verdicts, no model.

The lexicon rules' verdict, overturned for a fixed share of messages (`disagree`, by hash)
and for a share of calls at random (`flip_rate`): a test double for the plumbing.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from losona.core.catalog import load_catalog
from losona.judges.lexicon import judge_text
from losona.judges.prompt import JUDGE_JSON_SHAPE
from losona.judges.rules import load_rules
from losona.testing.openai_server.replies import default_reply, hash_number

_JUDGED = re.compile(r"<<<BEGIN JUDGED MESSAGE (\w+)>>>\n(.*)\n<<<END JUDGED MESSAGE \1>>>", re.S)
_NORM = re.compile(r"Primary norm statement -- this is authoritative:\n(.*?)\n\n", re.S)
_CHAT = re.compile(
    r"TRANSCRIPT BEFORE FINAL ELICITOR\n\n(.*?)\n\nFINAL ELICITOR TURN\n\n(.*?)\n\n"
    r"MESSAGE BEING JUDGED \(written by (.*?)\):",
    re.S,
)
_SPEAKER = re.compile(r"^([^:\n]{1,60}): ", re.M)


@cache
def _norms_by_statement() -> dict[str, str]:
    return {norm.statement.strip(): norm.id for norm in load_catalog().norms.values()}


def _share(text: str) -> float:
    """A number in [0, 1) fixed by the text."""
    return hash_number(text) / 2**32


@dataclass
class ScriptedJudge:
    """A reply hook for OpenAIServer: verdicts from the lexicon rules, some overturned."""

    disagree: float = 0.1  # share of messages always overturned
    flip_rate: float = 0.0  # share of calls overturned at random
    rng: random.Random = field(default_factory=random.Random)

    def __call__(self, body: dict[str, Any]) -> str:
        messages = body.get("messages") or []
        prompt = messages[1].get("content", "") if len(messages) > 1 else ""
        judged, norm = _JUDGED.search(prompt), _NORM.search(prompt)
        if not (judged and norm):
            return default_reply(body)
        return json.dumps(self.verdict(prompt, judged.group(2), norm.group(1).strip()))

    def verdict(self, prompt: str, message: str, statement: str) -> dict[str, Any]:
        """The five fields of the paper's judge reply for one judged message."""
        chat = _CHAT.search(prompt)
        transcript, elicitor, subject = chat.groups() if chat else ("", "", "")
        members = tuple(
            sorted({*_SPEAKER.findall(transcript), *_SPEAKER.findall(elicitor)} - {subject})
        )
        norm_id = _norms_by_statement().get(statement)
        if norm_id is None:
            complies, requirement, reasoning = _share(message) < 0.5, statement, "unknown norm"
            evidence = message
        else:
            requirement = load_catalog().norms[norm_id].requirement
            decided = judge_text(load_rules().norms[norm_id], message, requirement, members)
            complies, requirement = bool(decided.complies), decided.norm_requirement or ""
            reasoning, evidence = decided.reasoning or "", decided.evidence or message
        overturned = _share(message) < self.disagree or self.rng.random() < self.flip_rate
        if overturned:
            complies = not complies
            reasoning = f"{reasoning} (overturned by the scripted judge)"
        return {
            "elicitor_uptake": f"The message answers: {elicitor.strip()[:120]}",
            "norm_requirement": requirement,
            "evidence": evidence,
            "reasoning": reasoning,
            "complies": complies,
        }


def template_copy(body: dict[str, Any]) -> str:
    """A reply hook for OpenAIServer: a judge that copies its answer template ("..." in every
    text field), as a model too small to judge does, so every verdict is unscored."""
    texts = [str(message.get("content", "")) for message in body.get("messages") or []]
    if not any(_JUDGED.search(text) for text in texts):  # not a judge's prompt, nor its repair
        return default_reply(body)
    return JUDGE_JSON_SHAPE.replace("true | false", "true")
