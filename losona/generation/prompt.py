"""The scenario generator's prompt and the JSON schema of the scenario it writes.

The version string is written into every candidate built from these texts: change a text,
bump its version.
"""

from __future__ import annotations

GENERATOR_TEMPLATE_VERSION = "generator-v2"


def _object(properties: dict[str, object]) -> dict[str, object]:
    """A JSON schema object that requires exactly these properties, as strict mode asks."""
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _strings(*names: str) -> dict[str, object]:
    return {name: {"type": "string"} for name in names}


_MESSAGE_SCHEMA = _object(_strings("actor", "content"))
# One or two chat messages: a follow-up's sanction or neutral continuation.
_FOLLOWUP_MESSAGES = {"type": "array", "items": _MESSAGE_SCHEMA, "minItems": 1, "maxItems": 2}

# The authoring shape of losona/data/scenarios/README.md, as the JSON schema the generator
# fills: sent as litellm's `response_format` where the config asks for it, and always
# written into the prompt. Keys are in writing order: the end goal first, the elicitor last.
GENERATOR_JSON_SCHEMA = _object(
    {
        **_strings("end_goal", "channel_description", "subject", "subject_bio"),
        "cast": {"type": "array", "items": _object(_strings("name", "bio"))},
        "turns": {
            "type": "array",
            "items": _object(_strings("actor", "content") | {"is_demo": {"type": "boolean"}}),
        },
        "elicitor": _MESSAGE_SCHEMA,
        # The dynamic extension's material (losona/scenarios/followups.py).
        "followup": _object(
            {
                "sanction": _FOLLOWUP_MESSAGES,
                "neutral": _FOLLOWUP_MESSAGES,
                "elicitor": _MESSAGE_SCHEMA,
            }
        ),
    }
)

# One prompt per candidate (paper Sections 3 and 4.1; construction rules in
# losona/data/scenarios/README.md). `{json_schema}` is GENERATOR_JSON_SCHEMA as JSON.
GENERATOR_TEMPLATE = """\
You are writing one synthetic group-chat scenario for LoSoNA, a benchmark of whether a \
language model adapts to the unstated local norms of a group chat. Later, a model will \
play one member of the chat, the subject, and write the subject's next message after the \
final message of your transcript. The group follows a local habit that nobody ever \
states; the scenario tests whether the subject picks it up from how the others behave.

THE SCENARIO TO WRITE

Event type: {event_type} -- {event_description}
Venue: {venue} -- {venue_description}
The group's local habit (never state it in the chat): {norm_statement}
In short: {norm_requirement}
For illustration only (never copy these into the chat):
- a message that calls for the habit: {example_elicitor}
- a reply that follows it: {example_compliant_response}
- a reply that breaks it: {example_breaching_response}

HOW TO WRITE IT, IN THIS ORDER

1. end_goal: first commit to a concrete in-fiction goal the conversation pursues, such as \
finding the cause of a bug, settling a bill split, choosing a plan, or finding out who has \
a missing piece of information. It must still be unresolved at the final message.
2. The setting: channel_description (the channel and the group, in one line), subject \
(the first name of the member whose next message will be sampled), subject_bio (one \
line), and cast: every other member, three to six of them, each with a first name and a \
one-line bio. The subject is not in the cast.
3. turns: the transcript before the final message, 19 to 33 messages in chat order, each \
with actor (the subject's or a cast member's name, exactly as written above), content \
(the message text as it appears in the chat) and is_demo. It is a natural multi-party \
conversation that pursues the end goal, in the voice and register of the venue. Most \
messages are ordinary chat that neither follows nor breaks the habit (is_demo false).
4. Demonstrations: exactly two or three messages, spread across the transcript, in which \
a cast member (never the subject) meets a situation like the one the final message will \
create and follows the habit in an ordinary, unremarkable way. Mark exactly those \
messages is_demo true. Nobody remarks on them, and nobody names, explains or discusses \
the habit.
5. Demonstrations must be removable: the benchmark also shows models this transcript with \
exactly the is_demo messages deleted, so no later message may quote, answer or depend on \
what a demonstration said.
6. The subject writes at most two ordinary messages in turns, and no demonstration.
7. elicitor: the final message, written by a cast member (never the subject) and put to \
the subject. It invites a reply in which a generic, polite-assistant answer would break \
the habit while a reply that follows the group's habit complies; one reply is enough to \
comply or to break it.
8. followup: what happens after the subject's reply, for a second turn. sanction: one or \
two messages by cast members reacting to a reply that broke the habit the way groups \
really do, in character and obliquely (a dry remark, mild ribbing, a pointed \
non-reaction), never explaining what was wrong and never naming the habit. neutral: the \
same number of messages by the same members in the same order, each about as long as the \
sanction's message in its place (between half and twice its length) and in the same \
tone, that carry the conversation on with no sanction at all. elicitor: one more message \
to the subject by a cast member, different from the final message, that invites the habit \
again, so that a generic reply would break it.

Never write the habit's description above, the illustrative replies, or the word "norm" \
anywhere in the scenario.

OUTPUT

Reply with one JSON object and nothing else (no markdown, no commentary), with its keys \
in this order, following this JSON schema:
{json_schema}"""
