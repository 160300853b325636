"""The subject's prompt: the paper's Appendix C base rendering word for word, and the
prefix each condition adds before "Recent messages:" (Section 5.1). The version string is
written into every prompt row built from these texts: change a text, bump its version.
"""

from __future__ import annotations

SUBJECT_TEMPLATE_VERSION = "subject-v1"

SUBJECT_TEMPLATE = """\
You are {subject}, a member of this group chat. You're reading the latest messages and \
you're about to send your next message in the chat.

Output ONLY the text of your message -- no quotation marks, no "{subject}:" label, no \
preamble, no commentary, no markdown formatting. Just the message text as it would appear \
in the chat.

Your bio: {subject_bio}

Channel: {channel_description}

Venue: {venue}

Cast:
{cast}

{condition_prefix}Recent messages:
{prior_transcript_plus_elicitor}

Your next message:"""

CAST_LINE = "- {name}: {bio}"

_REPLY_ONLY = "Reply only to the latest message."
_NO_RECAP = (
    "Do not recap, resolve, or respond to earlier messages unless the latest message directly "
    "asks for that. Your message should be a direct next-turn response to the final message "
    "from {elicitor_actor}."
)

# The text placed before "Recent messages:" for each condition; `naive` adds nothing.
CONDITION_PREFIXES: dict[str, str] = {
    "naive": "",
    "elicitor_only": "\n".join(
        [
            _REPLY_ONLY,
            "Use the earlier chat only to understand the situation. " + _NO_RECAP,
        ]
    ),
    "norm_informed": "\n".join(
        [
            _REPLY_ONLY,
            "Use the earlier chat to understand the situation, tone, and how this group tends "
            "to respond. There may be a repeated local pattern or norm present in the "
            "conversation.",
            _NO_RECAP,
        ]
    ),
    "style_adaptation": "\n".join(
        [
            _REPLY_ONLY,
            "Use the earlier conversation to understand the context, tone, relationships, and "
            "local habits.",
            _NO_RECAP,
        ]
    ),
    # Our wording of the strategy-revealing prompt the paper's Section 7 describes. Not a
    # reported condition: it tells the model how the benchmark works, for calibration.
    "oracle": "\n".join(
        [
            _REPLY_ONLY,
            "Earlier in this chat, other members faced situations like the one in the latest "
            "message. Find the earlier messages most similar to the final message from "
            "{elicitor_actor}, look at exactly how the other members replied to them, and "
            "reply in that same way, following their pattern even where it differs from what "
            "you would normally say.",
            _NO_RECAP,
        ]
    ),
}
