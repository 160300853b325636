"""The group model of `dynamic.source: simulated`: the members' reaction to the subject's
actual reply (a sanction after a breach, a neutral continuation otherwise), and a second
elicitor for a scenario without a scripted one. What it writes is checked like scripted
material; a reply that fails leaves its trial out, never guessed."""

from __future__ import annotations

import json
import re
from itertools import islice
from typing import Any

from losona.core.contracts import Scenario, Turn
from losona.core.files import sha256_text
from losona.prompts.render import format_transcript
from losona.scenarios.followups import Message, message_problems
from losona.scenarios.validate import normalize

GROUP_TEMPLATE_VERSION = "group-v1"

GROUP_TEMPLATE = """\
You are writing the next messages of a group chat for a research benchmark about how \
groups react to their members. Write as the members themselves, in their own voices and \
in the register of this chat.

Channel: {channel_description}

Venue: {venue}

Members:
{members}

The group's unwritten habit (nobody in the chat ever states, names or explains it):
{norm_statement}

Recent messages:
{transcript}

{task}

Write {count} from members other than {subject}, each on its own line as `Name: message`, \
using a name from this list: {names}. Output only those lines: no quotation marks, no \
commentary, no markdown, and never the word "norm"."""

# What each kind of request asks for, after the chat.
GROUP_TASKS = {
    "sanction": (
        "{subject}'s last message breaks the group's habit. Write how the group reacts, the "
        "way real group chats sanction a breach: in character and obliquely (a dry remark, "
        "mild ribbing, a pointed non-reaction to what {subject} said, or carrying on as if the "
        "message had been a little odd), never explaining what was wrong and never naming the "
        "habit."
    ),
    "neutral": (
        "Write how the group carries on after {subject}'s last message: ordinary chat, of the "
        "length and tone a short reaction would have, neither approving nor disapproving of "
        "how {subject} wrote it, and with no hint about the habit."
    ),
    "elicitor": (
        "Write the next message to {subject}: a natural next question or remark in this same "
        "conversation, different from the last message, that invites a reply where the "
        "group's habit applies again, so that a reply can follow the habit or break it and a "
        "generic, polite reply would break it."
    ),
}
COUNTS = {
    "sanction": "one or two messages",
    "neutral": "one or two messages",
    "elicitor": "one message",
}
LIMITS = {"sanction": 2, "neutral": 2, "elicitor": 1}

# `Name: message`, tolerating the markdown bold a model may put around the name.
_LINE = re.compile(r"^\s*[*_]*([^:*_\n]{1,60}?)[*_]*\s*:\s*(\S.*?)\s*$")


def group_messages(
    scenario: Scenario, kind: str, first_response: str | None
) -> list[dict[str, str]]:
    """The group model's prompt: the chat up to the subject's reply (or the first elicitor)."""
    chat: list[Turn] = [*scenario.turns, scenario.elicitor]
    if first_response is not None:
        chat.append(Turn(scenario.elicitor_index + 1, scenario.subject, first_response, False))
    members = [(scenario.subject, scenario.subject_bio), *((m.name, m.bio) for m in scenario.cast)]
    prompt = GROUP_TEMPLATE.format(
        channel_description=scenario.channel_description,
        venue=scenario.venue,
        members="\n".join(f"- {name}: {bio}" for name, bio in members),
        norm_statement=scenario.norm_statement,
        transcript=format_transcript(chat),
        task=GROUP_TASKS[kind].format(subject=scenario.subject),
        count=COUNTS[kind],
        subject=scenario.subject,
        names=", ".join(m.name for m in scenario.cast),
    )
    return [{"role": "user", "content": prompt}]


def read_group_reply(
    reply: str, scenario: Scenario, kind: str
) -> tuple[tuple[Message, ...], str | None]:
    """The messages in a group model's reply, or none and why they cannot be used: its
    `Name: message` lines by a cast member, up to the kind's limit, checked like scripted
    material (losona/scenarios/followups.py)."""

    names = {m.name.casefold(): m.name for m in scenario.cast}
    by_members = (
        Message(names[name], match.group(2))
        for match in map(_LINE.match, reply.splitlines())
        if match and (name := match.group(1).strip().casefold()) in names
    )
    found = list(islice(by_members, LIMITS[kind]))
    if not found:
        return (), (
            f"the group model's {kind} reply holds no `Name: message` line by a member other "
            f"than {scenario.subject}: {reply[:80]!r}"
        )
    problems = message_problems(found, _checked_fields(scenario), "group model", f".{kind}")
    if problems:
        first = problems[0]
        return (), (
            f"the group model's {kind} reply: {first.field}: expected {first.expected}, "
            f"found {first.found}"
        )
    if kind == "elicitor" and normalize(found[0].content) == normalize(scenario.elicitor_content):
        return (), "the group model's elicitor repeats the scenario's elicitor"
    return tuple(found), None


def _checked_fields(scenario: Scenario) -> dict[str, Any]:
    """The fields of a scenario's contract row that the follow-up checks read."""
    return {
        "scenario_id": scenario.scenario_id,
        "norm_id": scenario.norm_id,
        "subject": scenario.subject,
        "cast": [{"name": m.name, "bio": m.bio} for m in scenario.cast],
        "norm_statement": scenario.norm_statement,
        "example_compliant_response": scenario.example_compliant_response,
        "example_breaching_response": scenario.example_breaching_response,
    }


def group_template_sha256() -> str:
    """A hash of every text the group prompt is built from, recorded with its version."""
    texts = {"GROUP_TEMPLATE": GROUP_TEMPLATE, "GROUP_TASKS": GROUP_TASKS, "COUNTS": COUNTS}
    return sha256_text(json.dumps(texts, sort_keys=True, ensure_ascii=False))
