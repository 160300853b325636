"""A stand-in group model for the local test server: `Name: message` lines, no model, no key.

    python -m losona.testing.openai_server --port 8765 --group

answers the group model's prompt of `dynamic.source: simulated` (losona/dynamic/group.py)
as a group model should: one or two lines `Name: message` by members of the cast the
prompt lists (never its subject), a sanction, a neutral continuation or a second
elicitor, whichever the prompt asks for. It reads the kind from the prompt's own task
texts (GROUP_TASKS), so a change of wording there cannot leave it answering another kind.

Which members speak, and how many, is fixed by the chat the prompt shows, so a breach's
sanction and its control's neutral continuation come from the same members, as the
scripted material's do; the words are picked from short canned lines. It does not read
the subject's reply: it tests the plumbing of the simulated source (the prompt, the
reading of the reply, the checks, the published calls), not what a group would say. Any
other request, such as a subject's or a judge's prompt, goes to `otherwise`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from losona.dynamic.group import GROUP_TASKS
from losona.testing.openai_server.replies import Body, Reply, default_reply

# The end of GROUP_TEMPLATE, where it names the subject and the members that may write.
_ASK = re.compile(
    r"from members other than (?P<subject>.+?), each on its own line as `Name: message`, "
    r"using a name from this list: (?P<names>.+)\. Output only those lines"
)

# Short lines of the kind the bundled follow-up material has; none says "norm" or names
# a habit, so each passes the checks a group model's lines must pass.
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


def _number(text: str) -> int:
    """A number fixed by the text."""
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:8], 16)


def _pick(options: Sequence[str], text: str) -> str:
    return options[_number(text) % len(options)]


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
    first = names[_number(seen) % len(names)]
    if kind == "elicitor":
        return f"{first}: {_pick(ELICITORS, seen).format(subject=subject)}"
    lines, more = (
        (SANCTIONS, SECOND_SANCTIONS) if kind == "sanction" else (NEUTRALS, SECOND_NEUTRALS)
    )
    written = [f"{first}: {_pick(lines, prompt)}"]
    if len(names) > 1 and _number("two " + seen) % 2:
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
