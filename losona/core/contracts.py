"""The tables the first turn's stages hand each other: their columns, types and row order.

A stage family's own tables sit in its package, so that editing one reruns only the
stages that read it. docs/contracts.md shows each schema with the comment beside each
column (docs/hooks.py reads them): say there what a column means.
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

# A subset's rows carry this after the dataset's own source in `source`:
# "<source>; subset of <total>: <how chosen>" (written by losona.scenarios.datasets), so that
# every table and report downstream can say that a run covers only part of a dataset.
SUBSET_MARK = "; subset of "


def subset_source(source: str, total: int, how: str) -> str:
    """A subset row's `source`: the dataset's own, then of how many and how it was chosen."""
    return f"{source}{SUBSET_MARK}{total}: {how}"


def subset_note(scenarios: pl.DataFrame) -> str | None:
    """For a run on part of a dataset, e.g. "5 of 44 scenarios (limit 5 stratified by norm,
    seed 0)", read from the `source` column; None when the run covers the whole dataset."""
    marked = [source for source in scenarios["source"].unique() if SUBSET_MARK in source]
    subsets = sorted({tuple(s.rpartition(SUBSET_MARK)[2].split(": ", 1)) for s in marked})
    if not subsets:
        return None
    # fetch writes one subset note; a table put together from several says each.
    totals = " + ".join(total for total, _ in subsets)
    how = "; ".join(how for _, how in subsets)
    return f"{scenarios['scenario_id'].n_unique()} of {totals} scenarios ({how})"


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

# A run's calls (data/calls/..., data/calls.parquet): the model calls its response, verdict
# and control tables were built from, one row per call-cache key, sorted by key. No key,
# secret or endpoint: only what a call returned and the model string it was asked of.
CALL_SCHEMA = pl.Schema(
    {
        "key": pl.String(),  # the call cache's key (losona/models/prepare.py, call_key)
        "model": pl.String(),  # the litellm model string
        "text": pl.String(),
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
        "judge": pl.String(),  # the config name, e.g. gemini_pro
        "judge_model": pl.String(),  # the provider model string, or lexicon@<rules version>
        "judge_version": pl.String(),  # the judge template's or the lexicon rules' version
        "complies": pl.Boolean(),  # null when unscored (judge_status is not "ok")
        "elicitor_uptake": pl.String(),
        "norm_requirement": pl.String(),
        "evidence": pl.String(),
        "reasoning": pl.String(),
        "judge_status": pl.String(),  # ok | unparseable | failed | no_response
        # The reply takes up no elicitor (empty, filler, off-topic, an echo, ...): true or
        # false when the judge checks it (the lexicon judge), null when it does not say.
        "non_answer": pl.Boolean(),
    }
)

# The judge's validity controls: each scenario's example compliant and breaching responses
# judged as replies to the example elicitor (losona/judges/), one row per scenario x example.
CONTROL_SCHEMA = pl.Schema(
    {
        "scenario_id": pl.String(),
        "event_type": pl.String(),
        "norm_id": pl.String(),
        "example": pl.String(),  # compliant | breaching
        "expected": pl.Boolean(),  # the label the example should get
        "response": pl.String(),
        "judge": pl.String(),
        "judge_model": pl.String(),
        "judge_version": pl.String(),
        "complies": pl.Boolean(),
        "elicitor_uptake": pl.String(),
        "norm_requirement": pl.String(),
        "evidence": pl.String(),
        "reasoning": pl.String(),
        "judge_status": pl.String(),
        "non_answer": pl.Boolean(),
    }
)


def table(rows: Sequence[Mapping[str, Any]], schema: pl.Schema, sort_by: list[str]) -> pl.DataFrame:
    """Rows as a DataFrame with exactly `schema`'s columns, sorted for deterministic output."""
    df = pl.DataFrame([dict(r) for r in rows], schema=schema, orient="row")
    return df.sort(sort_by, maintain_order=True) if sort_by else df


def row_order(keys: pl.DataFrame, sort_by: list[str]) -> pl.Series:
    """The order `table(rows, schema, sort_by)` puts rows in, from their sort columns alone
    (a table made a chunk at a time, files.Chunks, makes its rows in this order)."""

    return keys.with_row_index("row").sort(sort_by, maintain_order=True)["row"]


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
