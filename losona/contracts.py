"""The tables the stages hand each other: their columns, types and row order.

Each stage builds its output through one of these schemas, so a table's shape is
written down once, here, and a rerun cannot drift in column order or dtype.
See README, "Data contracts", for what each column means.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

TURN = pl.Struct(
    {"index": pl.Int32(), "actor": pl.String(), "content": pl.String(), "is_demo": pl.Boolean()}
)
CAST_MEMBER = pl.Struct({"name": pl.String(), "bio": pl.String()})
MESSAGE = pl.Struct({"role": pl.String(), "content": pl.String()})

SCENARIO_SCHEMA = pl.Schema(
    {
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "venue": pl.String(),
        "channel_description": pl.String(),
        "subject": pl.String(),
        "subject_bio": pl.String(),
        "cast": pl.List(CAST_MEMBER),
        "turns": pl.List(TURN),
        "elicitor_index": pl.Int32(),
        "elicitor_actor": pl.String(),
        "elicitor_content": pl.String(),
        "norm_statement": pl.String(),
        "example_elicitor": pl.String(),
        "example_compliant_response": pl.String(),
        "example_breaching_response": pl.String(),
        # Generation-only: the in-fiction goal the transcript pursues. Never rendered for
        # the subject or the judge; null for sources that do not record it.
        "end_goal": pl.String(),
        "source": pl.String(),
    }
)

PROMPT_SCHEMA = pl.Schema(
    {
        "scenario_id": pl.String(),
        "condition": pl.String(),
        "template_version": pl.String(),
        "messages": pl.List(MESSAGE),
        "prompt_sha256": pl.String(),
    }
)

RESPONSE_SCHEMA = pl.Schema(
    {
        "scenario_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),  # the config name, e.g. claude_opus
        "provider_model": pl.String(),  # the litellm model string it resolved to
        "trial": pl.Int32(),  # 0 .. K-1; each trial is a distinct sample
        "prompt_sha256": pl.String(),  # links the response to the exact prompt sent
        "response": pl.String(),
        "finish_reason": pl.String(),
        "prompt_tokens": pl.Int64(),
        "completion_tokens": pl.Int64(),
        "cost_usd": pl.Float64(),
    }
)

VERDICT_SCHEMA = pl.Schema(
    {
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "condition": pl.String(),
        "subject_model": pl.String(),
        "trial": pl.Int32(),
        "response": pl.String(),
        "judge": pl.String(),
        "judge_model": pl.String(),
        "complies": pl.Boolean(),
        "elicitor_uptake": pl.String(),
        "norm_requirement": pl.String(),
        "evidence": pl.String(),
        "reasoning": pl.String(),
        "judge_status": pl.String(),
    }
)


def table(rows: Sequence[Mapping[str, Any]], schema: pl.Schema, sort_by: list[str]) -> pl.DataFrame:
    """Rows as a DataFrame with exactly `schema`'s columns, sorted for deterministic output."""
    df = pl.DataFrame([dict(r) for r in rows], schema=schema, orient="row")
    return df.sort(sort_by, maintain_order=True) if sort_by else df


@dataclass(frozen=True)
class Turn:
    """One chat message."""

    index: int
    actor: str
    content: str
    is_demo: bool


@dataclass(frozen=True)
class CastMember:
    """A non-subject participant."""

    name: str
    bio: str


@dataclass(frozen=True)
class Scenario:
    """A typed view of one validated row of the scenario table."""

    scenario_id: str
    event_type: str
    norm_id: str
    venue: str
    channel_description: str
    subject: str
    subject_bio: str
    cast: tuple[CastMember, ...]
    turns: tuple[Turn, ...]
    elicitor_index: int
    elicitor_actor: str
    elicitor_content: str
    norm_statement: str
    example_elicitor: str
    example_compliant_response: str
    example_breaching_response: str
    end_goal: str | None
    source: str

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Scenario:
        """Build from a scenario-table row (a dict as polars' `iter_rows(named=True)` gives)."""
        values = {name: row[name] for name in SCENARIO_SCHEMA.names()}
        values["cast"] = tuple(CastMember(**member) for member in row["cast"])
        values["turns"] = tuple(Turn(**turn) for turn in row["turns"])
        return cls(**values)

    @property
    def elicitor(self) -> Turn:
        """The final turn the subject answers."""
        return Turn(self.elicitor_index, self.elicitor_actor, self.elicitor_content, False)


def scenarios_from_table(df: pl.DataFrame) -> list[Scenario]:
    """Every row of a scenario table as a typed Scenario, in table order."""
    return [Scenario.from_row(row) for row in df.iter_rows(named=True)]
