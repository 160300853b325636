"""generate: a generator model writes candidate scenarios, every one checked and kept.

One call per slot (cell, venue, sample), the sample index its trial, so a rerun returns the
same candidates from the call cache; each reply is one row, valid or not with its reasons.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

import polars as pl

from losona.core.catalog import Catalog
from losona.core.contracts import table
from losona.core.errors import LosonaError
from losona.core.formatting import percent
from losona.generation.candidates import (
    candidate_id,
    check_candidate,
    generator_messages,
    read_reply,
    scenario_row,
)
from losona.generation.cells import Slot
from losona.generation.prompt import GENERATOR_JSON_SCHEMA, GENERATOR_TEMPLATE_VERSION
from losona.generation.settings import GenerateSettings
from losona.generation.tables import CANDIDATE_SCHEMA
from losona.models import CallOptions, Completion, ModelSpec, Request, complete_all

# litellm's response_format for each generate.structured_output setting.
RESPONSE_FORMATS: dict[str, dict[str, Any] | None] = {
    "json_schema": {
        "type": "json_schema",
        "json_schema": {"name": "losona_scenario", "schema": GENERATOR_JSON_SCHEMA, "strict": True},
    },
    "json_object": {"type": "json_object"},
    "none": None,
}


def generator_spec(spec: ModelSpec, structured_output: str) -> ModelSpec:
    """The generator's model with the structured-output request added to its params."""
    response_format = RESPONSE_FORMATS[structured_output]
    if response_format is None:
        return spec
    return spec.with_params(response_format=response_format)


def candidate(
    slot: Slot, completion: Completion, spec: ModelSpec, catalog: Catalog
) -> dict[str, Any]:
    """One reply as a candidate-table row, checked."""
    reply = completion.text or ""
    cid = candidate_id(slot, reply)
    authored, reasons = read_reply(reply, completion.finish_reason)
    scenario = None
    if authored is not None:
        source = f"generated:{spec.name}@{GENERATOR_TEMPLATE_VERSION}"
        row = scenario_row(authored, slot, cid, catalog, source=source)
        reasons = check_candidate(row, catalog)
        scenario = json.dumps(row, ensure_ascii=False, sort_keys=True)
    return {
        "candidate_id": cid,
        "event_type": slot.event_type,
        "norm_id": slot.norm_id,
        "venue": slot.venue,
        "sample": slot.sample,
        "generator": spec.name,
        "generator_model": spec.model,
        "template_version": GENERATOR_TEMPLATE_VERSION,
        "reply": reply,
        "finish_reason": completion.finish_reason,
        "cost_usd": completion.cost_usd,
        "scenario": scenario,
        "status": "invalid" if reasons else "valid",
        "reasons": reasons,
    }


def generate_candidates(
    slots: Sequence[Slot], spec: ModelSpec, catalog: Catalog, options: CallOptions
) -> pl.DataFrame:
    """The candidate table: one checked row per slot, sorted by candidate id."""
    if not slots:
        raise LosonaError("generate: no cells selected (check generate.cells)")
    requests = [Request(generator_messages(s, catalog), trial=s.sample) for s in slots]
    completions = complete_all(spec, requests, options, to=f"the generator '{spec.name}'")
    rows = [candidate(s, c, spec, catalog) for s, c in zip(slots, completions, strict=True)]
    return table(rows, CANDIDATE_SCHEMA, sort_by=["candidate_id"])


def reason_kind(reason: str) -> str:
    """The field a reason is about, list positions dropped: `turns[3].actor` -> `turns.actor`."""
    return re.sub(r"\[\d+\]", "", reason.split(":", 1)[0])


def generation_summary(
    candidates: pl.DataFrame, spec: ModelSpec, settings: GenerateSettings
) -> dict[str, Any]:
    """What a generate run made and why it rejected candidates (for generate.json)."""
    statuses = Counter(candidates["status"].to_list())
    kinds = Counter(
        kind
        for reasons in candidates["reasons"].to_list()
        for kind in dict.fromkeys(reason_kind(r) for r in reasons)
    )
    total = candidates.height
    return {
        "generator": {
            "config": spec.name,
            "model": spec.model,
            "params": {k: v for k, v in spec.params.items() if k != "response_format"},
            "structured_output": settings.structured_output,
            "template_version": GENERATOR_TEMPLATE_VERSION,
        },
        "cells": settings.cells.describe(),
        "candidates_per_cell": settings.candidates_per_cell,
        "seed": settings.seed,
        "candidates": total,
        "valid": statuses["valid"],
        "invalid": statuses["invalid"],
        "rejected_percent": percent(statuses["invalid"], total),
        # How many candidates each kind of problem rejected (one candidate may have several).
        "rejected_for": dict(sorted(kinds.items())),
        "cost_usd": round(float(candidates["cost_usd"].sum()), 6),
    }
