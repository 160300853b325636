"""curate: a person reads the screened candidates on a review sheet, and an accept list
makes them a scenario file, with its provenance beside it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import polars as pl

from losona.core.catalog import Catalog
from losona.core.contracts import SCENARIO_SCHEMA, table
from losona.core.errors import LosonaError
from losona.generation.screen import candidate_scenario, cell_report, totals
from losona.generation.tables import REVIEW_SCHEMA
from losona.pages import fragment, render_page, section
from losona.scenarios.followups import FIELD as FOLLOWUP
from losona.scenarios.followups import check_followups
from losona.scenarios.validate import check_scenarios
from losona.scenarios.view import format_chat

# What a person checks before accepting a candidate (paper Section 5.4).
REVIEW_CHECKS = (
    "the chat is plausible for this group and venue",
    "the norm is never stated or discussed",
    "non-subject members give clear but natural demonstrations",
    "the final elicitor creates a diagnostic next-turn opportunity",
    "the subject has a genuine comply-or-breach choice in one reply",
)
# The contract fields a scenario file carries (`source` is set by the loader), and the
# follow-up material of the dynamic extension, which the loader checks and keeps aside.
FILE_FIELDS = [*(name for name in SCENARIO_SCHEMA.names() if name != "source"), FOLLOWUP]


def screen_line(verdicts: pl.DataFrame) -> str:
    """Each baseline's breaches on one candidate's control, e.g. `smollm2 3/3 breach`."""
    parts = []
    for (model,), answers in verdicts.group_by(["subject_model"], maintain_order=True):
        breaches = answers.filter(pl.col("complies").eq(False)).height
        parts.append(f"{model} {breaches}/{answers.height} breach")
    return "; ".join(parts)


def review_table(candidates: pl.DataFrame, verdicts: pl.DataFrame) -> pl.DataFrame:
    """The review CSV: one row per candidate the screen accepted, sorted by id."""
    shown = review_candidates(candidates, verdicts)
    rows = [{name: c[name] for name in REVIEW_SCHEMA.names()} for c in shown]
    return table(rows, REVIEW_SCHEMA, sort_by=["candidate_id"])


def review_html(candidates: pl.DataFrame, verdicts: pl.DataFrame, accept_list: str) -> str:
    """The review sheet: one self-contained HTML page (no scripts, no outside files)."""
    shown = review_candidates(candidates, verdicts)
    lead = fragment(
        "review/lead.html",
        accepted=len(shown),
        counts=totals(cell_report(candidates)),
        generators=sorted(set(candidates["generator"].to_list())),
        baselines=sorted(set(verdicts["subject_model"].to_list())),
        judges=sorted(set(verdicts["judge"].to_list())),
    )
    how = section(
        "review",
        "How to review",
        "review/how.html",
        checks=REVIEW_CHECKS,
        accept_list=accept_list,
        candidates=shown,
    )
    each = [
        section(c["candidate_id"], c["candidate_id"], "review/candidate.html", c=c) for c in shown
    ]
    return render_page("LoSoNA generated candidates: review sheet", lead, [how, *each])


def review_candidates(candidates: pl.DataFrame, verdicts: pl.DataFrame) -> list[dict[str, Any]]:
    """Each candidate that passed the screen, by id: its facts, chat and baselines' answers."""
    accepted = candidates.filter(pl.col("status") == "accepted").sort("candidate_id")
    shown = []
    for row in accepted.iter_rows(named=True):
        scenario = candidate_scenario(row)
        own = verdicts.filter(pl.col("scenario_id") == row["candidate_id"])
        answers = own.sort("subject_model", "trial")
        shown.append(
            {
                "candidate_id": row["candidate_id"],
                "event_type": scenario.event_type,
                "norm_id": scenario.norm_id,
                "venue": scenario.venue,
                "turns": len(scenario.turns) + 1,
                "demonstrations": sum(t.is_demo for t in scenario.turns),
                "end_goal": scenario.end_goal,
                "elicitor": f"{scenario.elicitor_actor}: {scenario.elicitor_content}",
                "screen": screen_line(answers),
                "generator": row["generator"],
                "generator_model": row["generator_model"],
                "sample": row["sample"],
                "chat": format_chat(scenario),
                "answers": list(answers.iter_rows(named=True)),
            }
        )
    return shown


def read_accept_list(path: Path, candidates: pl.DataFrame) -> list[str]:
    """The candidate ids a person accepted: one a line, `#` starts a comment; checked."""
    if not path.is_file():
        raise LosonaError(
            f"{path}: the accept list is missing; create it with one candidate id a line "
            "(from the review sheet), or an empty file to accept none yet"
        )
    status = dict(zip(candidates["candidate_id"], candidates["status"], strict=True))
    first_line: dict[str, int] = {}
    problems = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        cid = line.split("#", 1)[0].strip()
        if not cid:
            continue
        where = f"{path}:{number}: '{cid}'"
        if cid in first_line:
            problems.append(f"{where}: listed twice (first on line {first_line[cid]})")
        elif cid not in status:
            problems.append(
                f"{where}: not a candidate of this run (ids change when a candidate's text "
                "does; take them from the current review sheet)"
            )
        elif status[cid] != "accepted":
            problems.append(
                f"{where}: its status is '{status[cid]}'; only candidates that passed the "
                "screen (status 'accepted', the ones on the review sheet) can join a set"
            )
        first_line.setdefault(cid, number)
    if problems:
        raise LosonaError(
            "the accept list names candidates it cannot use:\n  " + "\n  ".join(problems)
        )
    return sorted(first_line)


def curated_rows(
    candidates: pl.DataFrame, accepted: Sequence[str], catalog: Catalog
) -> list[dict[str, Any]]:
    """The accepted candidates as scenario-file rows, in id order, validated as fetch would."""
    by_id = {row["candidate_id"]: row for row in candidates.iter_rows(named=True)}
    rows = []
    for cid in sorted(accepted):
        scenario = json.loads(by_id[cid]["scenario"])
        rows.append({field: scenario[field] for field in FILE_FIELDS})
    origins = [(f"candidate {row['scenario_id']}", row) for row in rows]
    check_scenarios(origins, catalog)
    check_followups(origins)
    return rows


def scenario_file_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """JSONL: one scenario object a line, fields in the contract's order."""
    return "".join(json.dumps(dict(row), ensure_ascii=False) + "\n" for row in rows)


def provenance(
    *,
    set_name: str,
    version: str,
    file_name: str,
    rows: Sequence[Mapping[str, Any]],
    catalog: Catalog,
    generation: Mapping[str, Any],
    screen: Mapping[str, Any],
    accept_list: str,
    previous: Mapping[str, Any] | None,
    today: date,
) -> dict[str, Any]:
    """Where a curated set came from; the date is kept while nothing else changes."""
    record: dict[str, Any] = {
        "set": set_name,
        "version": version,
        "file": file_name,
        "scenarios": len(rows),
        "scenario_ids": [row["scenario_id"] for row in rows],
        "catalog_version": catalog.version,
        "generation": dict(generation),
        "screen": dict(screen),
        "accept_list": accept_list,
        "curation": "read by a person on the review sheet; accepted ids listed in the accept list",
    }
    # A rerun on the same inputs then rewrites the same bytes.
    if previous is not None and {k: v for k, v in previous.items() if k != "dates"} == record:
        return record | {"dates": previous["dates"]}
    return record | {"dates": {"curated_on": today.isoformat()}}
