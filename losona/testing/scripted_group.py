"""A stand-in group model for the test server (`--group`): `Name: message` lines, no model.

It answers the group prompt of `dynamic.source: simulated` with canned lines of the kind
its task asks for, by cast members the chat picks: a test of the plumbing, not of a group.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from losona.dynamic.group import GROUP_TASKS
from losona.testing.openai_server.replies import Body, Reply, default_reply, hash_number

# The end of GROUP_TEMPLATE, where it names the subject and the members that may write.
_ASK = re.compile(
    r"from members other than (?P<subject>.+?), each on its own line as `Name: message`, "
    r"using a name from this list: (?P<names>.+)\. Output only those lines"
)

# Short lines that pass the checks a group model's lines must pass.
SANCTIONS = (
    "well, that's one way to put it",
    "ok... noted, I guess",
    "right. anyway",
    "that was a lot",
    "mm, sure",
)
SECOND_SANCTIONS = ("moving on then", "anyway", "ok")
NEUTRALS = (
    "ok, I'll check the calendar later",
    "back in five, grabbing a coffee",
    "someone remind me about friday",
    "ok, cheers all",
    "I'll sort the rest tomorrow",
)
SECOND_NEUTRALS = ("same here", "sounds good", "cool")
ELICITORS = (
    "{subject}, what about the next one, then?",
    "{subject}, and how would you handle the other one?",
    "{subject}, quick one: what's your take on the rest?",
)


def _pick(options: Sequence[str], text: str) -> str:
    return options[hash_number(text) % len(options)]


def group_prompt(body: Body) -> str | None:
    """The group model's prompt in a request body, None when the body holds none."""
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and _ASK.search(content):
            return content
    return None


def group_lines(prompt: str) -> str:
    """What the scripted group writes for one group prompt: `Name: message` lines."""
    ask = _ASK.search(prompt)
    if ask is None:
        raise ValueError("not a group model's prompt: it names no members to write as")
    subject, names = ask.group("subject"), ask.group("names").split(", ")
    tasks = {kind: task.format(subject=subject) for kind, task in GROUP_TASKS.items()}
    kinds = [kind for kind, task in tasks.items() if task in prompt]
    if len(kinds) != 1:
        raise ValueError(f"a group prompt asks for one kind of message, found {kinds or 'none'}")
    kind = kinds[0]
    # The prompt up to its task (the chat, not what is asked) picks the speakers: a
    # breach's sanction and its control's neutral continuation come from the same members.
    seen = prompt[: prompt.index(tasks[kind])]
    first = names[hash_number(seen) % len(names)]
    if kind == "elicitor":
        return f"{first}: {_pick(ELICITORS, seen).format(subject=subject)}"
    lines, more = (
        (SANCTIONS, SECOND_SANCTIONS) if kind == "sanction" else (NEUTRALS, SECOND_NEUTRALS)
    )
    written = [f"{first}: {_pick(lines, prompt)}"]
    if len(names) > 1 and hash_number("two " + seen) % 2:
        second = names[(names.index(first) + 1) % len(names)]
        written.append(f"{second}: {_pick(more, prompt)}")
    return "\n".join(written)


@dataclass
class ScriptedGroup:
    """A reply hook for OpenAIServer: group prompts get group lines, others `otherwise`."""

    otherwise: Reply = default_reply

    def __call__(self, body: dict[str, Any]) -> str:
        prompt = group_prompt(body)
        return self.otherwise(body) if prompt is None else group_lines(prompt)
