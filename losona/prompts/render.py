"""Renders each scenario into the subject-visible prompt for each prompting condition.

The chat has no turn numbers or markers: a tag on some turns would point at the
demonstrations.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import polars as pl

from losona.core.contracts import PROMPT_SCHEMA, Scenario, Turn, row_order, table
from losona.core.errors import LosonaError
from losona.core.files import CHUNK, Chunks, sha256_text
from losona.prompts.subject import (
    CAST_LINE,
    CONDITION_PREFIXES,
    SUBJECT_TEMPLATE,
    SUBJECT_TEMPLATE_VERSION,
)
from losona.scenarios.validate import hidden_texts, normalize

# Markers that annotate demonstrations or the elicitor in authoring formats (the paper's
# "## DEMO", a raw field name). None may ever reach a subject.
DEMO_MARKERS = ("## demo", "[demo]", "<demo>", "is_demo", "## elicitor")


class LeakError(LosonaError):
    """A rendered prompt would show the subject something only the judge may see."""


def format_transcript(turns: Iterable[Turn]) -> str:
    """The chat as the subject and the judge read it: one `Name: text` line per message."""
    return "\n".join(f"{turn.actor}: {turn.content}" for turn in turns)


def subject_prompt(scenario: Scenario, condition: str) -> str:
    """The full subject prompt for one scenario under one condition."""
    if condition not in CONDITION_PREFIXES:
        raise LosonaError(
            f"unknown condition '{condition}'; the prompt templates define "
            f"{sorted(CONDITION_PREFIXES)}"
        )
    prefix = CONDITION_PREFIXES[condition].format(elicitor_actor=scenario.elicitor_actor)
    return SUBJECT_TEMPLATE.format(
        subject=scenario.subject,
        subject_bio=scenario.subject_bio,
        channel_description=scenario.channel_description,
        venue=scenario.venue,
        cast="\n".join(CAST_LINE.format(name=m.name, bio=m.bio) for m in scenario.cast),
        condition_prefix=f"{prefix}\n\n" if prefix else "",
        prior_transcript_plus_elicitor=format_transcript([*scenario.turns, scenario.elicitor]),
    )


def check_no_leak(scenario: Scenario, condition: str, prompt: str) -> None:
    """Refuse a prompt that contains the norm id, statement, example responses or a marker."""
    text = normalize(prompt)
    hidden = hidden_texts(
        scenario.norm_id,
        scenario.norm_statement,
        scenario.example_compliant_response,
        scenario.example_breaching_response,
    )
    for what, value in hidden.items():
        needle = normalize(value)
        if needle and needle in text:
            raise LeakError(
                f"scenario '{scenario.scenario_id}', condition '{condition}': the rendered "
                f"prompt contains {what} ({value[:60]!r}); the subject must never see it"
            )
    for marker in DEMO_MARKERS:
        if marker in text:
            raise LeakError(
                f"scenario '{scenario.scenario_id}', condition '{condition}': the rendered "
                f"prompt contains the demonstration marker {marker!r}"
            )


def subject_messages(scenario: Scenario, condition: str) -> list[dict[str, str]]:
    """The chat messages sent to the subject model: the whole prompt as one user turn."""
    prompt = subject_prompt(scenario, condition)
    check_no_leak(scenario, condition, prompt)
    return [{"role": "user", "content": prompt}]


def messages_sha256(messages: Sequence[dict[str, str]]) -> str:
    """A stable hash of a message list (canonical JSON)."""
    return sha256_text(json.dumps(list(messages), sort_keys=True, ensure_ascii=False))


def render_prompts(scenarios: pl.DataFrame, conditions: Sequence[str]) -> pl.DataFrame:
    """The prompt table: one row per scenario and condition, sorted."""
    return render_table(scenarios, conditions).collect()


def render_table(scenarios: pl.DataFrame, conditions: Sequence[str]) -> Chunks:
    """`render_prompts`, for writing: made a chunk of rows at a time as it is written."""
    if not conditions:
        raise LosonaError("render: no conditions to render (sweep.conditions is empty)")
    # Row r is scenario r // len(conditions) under condition r % len(conditions).
    rows = pl.int_range(scenarios.height * len(conditions), eager=True)
    order = row_order(
        pl.DataFrame(
            {
                "scenario_id": scenarios["scenario_id"].gather(rows // len(conditions)),
                "condition": pl.Series(conditions, dtype=pl.String).gather(rows % len(conditions)),
            }
        ),
        ["scenario_id", "condition"],
    )
    scenario = functools.lru_cache(maxsize=8)(
        lambda index: Scenario.from_row(scenarios.row(index, named=True))
    )

    def prompt(row: int) -> dict[str, Any]:
        index, condition = divmod(row, len(conditions))
        messages = subject_messages(scenario(index), conditions[condition])
        return {
            "scenario_id": scenarios["scenario_id"][index],
            "condition": conditions[condition],
            "template_version": SUBJECT_TEMPLATE_VERSION,
            "messages": messages,
            "prompt_sha256": messages_sha256(messages),
        }

    def chunks() -> Iterator[pl.DataFrame]:
        for start in range(0, len(order), CHUNK):
            picked = order[start : start + CHUNK].to_list()
            yield table([prompt(row) for row in picked], PROMPT_SCHEMA, sort_by=[])

    return Chunks(PROMPT_SCHEMA, len(order), chunks)
