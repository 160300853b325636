"""The board stage (`python -m losona.board.page`): every submission's rows merged into
reports/board.parquet, the page and reports/metrics.json. Rows are ranked only with rows
they can be compared with (`GROUP_KEYS`); a submission not verified is never ranked."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from importlib.metadata import version
from typing import Any

import polars as pl

from losona.board.settings import BoardFiles, Submission, read_submissions
from losona.board.tables import GROUP_KEYS, ROW_SCHEMA
from losona.core.cli import USER_ERROR_EXIT
from losona.core.contracts import table
from losona.core.errors import LosonaError
from losona.core.files import write_json, write_parquet, write_text
from losona.core.formatting import MISSING, is_test_double, number
from losona.pages import Section, render_page, section

# How a group differs from another that it is not ranked with, by the keys that differ.
# (what differs, how the other group's value reads)
APART = {
    ("k",): ("K", "K = {}"),
    ("judge_identity",): ("the judge", "the judge {}"),
}
# The rows groups rank: a verified submission's cells (one with no cell has a row, judge null).
RANKED = pl.col("verified") & pl.col("judge").is_not_null()


def merged_rows(submissions: Mapping[str, Submission], files: BoardFiles) -> pl.DataFrame:
    """Every submission's rows; one whose rows are absent or unreadable, not verified."""
    frames = []
    for name in sorted(submissions):
        path = files.rows(name)
        try:
            frames.append(pl.read_parquet(path).select(ROW_SCHEMA.names()).cast(ROW_SCHEMA))
        except (OSError, pl.exceptions.PolarsError):
            reason = f"its verify stage left no readable {path}: run dvc repro"
            row = {"submission": name, "verified": False, "reason": reason}
            frames.append(table([row], ROW_SCHEMA, []))
    if not frames:
        return pl.DataFrame(schema=ROW_SCHEMA)
    return pl.concat(frames)


def groups(verified: pl.DataFrame) -> list[dict[str, Any]]:
    """The verified rows as groups of comparable runs, each ranked per condition."""
    keyed = verified.sort([*GROUP_KEYS, "condition"], nulls_last=True)
    found = []
    for key, rows in keyed.group_by(list(GROUP_KEYS), maintain_order=True):
        facts = dict(zip(GROUP_KEYS, key, strict=True))
        conditions = []
        for _, cell in rows.group_by("condition", maintain_order=True):
            ranked = cell.sort(
                ["acc_at_k", "submission"], descending=[True, False], nulls_last=True
            )
            conditions.append(
                {
                    "label": ranked["condition_label"][0],
                    "rows": [_ranked(i, r) for i, r in enumerate(ranked.iter_rows(named=True), 1)],
                }
            )
        found.append({**facts, "conditions": conditions, "apart": []})
    for group in found:
        group["apart"] = _apart_notes(group, found)
    return found


def _ranked(rank: int, row: Mapping[str, Any]) -> dict[str, Any]:
    corrected = row["corrected"]
    interval = f"[{number(row['corrected_low'])}, {number(row['corrected_high'])}]"
    return {
        "rank": rank,
        "model": row["model_label"],
        "judge": row["judge_label"],
        "test_double": any(is_test_double(row[c] or "") for c in ("model_label", "judge_label")),
        "acc": number(row["acc_at_k"]),
        "interval": f"[{number(row['acc_low'])}, {number(row['acc_high'])}]",
        "corrected": MISSING if corrected is None else f"{number(corrected)} {interval}",
        "n": row["scenarios"],
        "k": row["k"],
        "submission": row["submission"],
        "commit": (row["commit"] or "")[:12],
        "version": row["pipeline_version"],
    }


def _apart_notes(group: Mapping[str, Any], every: Sequence[Mapping[str, Any]]) -> list[str]:
    notes = []
    for other in every:
        differing = tuple(k for k in GROUP_KEYS if group[k] != other[k])
        if differing in APART:
            what, value = APART[differing]
            notes.append(
                f"Runs on the same scenarios with {value.format(other[differing[0]])} are in a "
                f"group of their own: they differ only in {what}, so they are not ranked with "
                "these."
            )
    return notes


def board_page(rows: pl.DataFrame, submissions: Mapping[str, Submission]) -> str:
    """The page: a section per group of comparable runs, then the submissions not verified."""
    found = groups(rows.filter(RANKED))
    sections: list[Section] = [
        section(
            f"group-{i}",
            f"Group {i}: {g['judge_identity']}, K = {g['k']}, scenarios {g['scenario_set'][:12]}",
            "board/group.html",
            group=g,
        )
        for i, g in enumerate(found, 1)
    ]
    failed = rows.filter(~pl.col("verified")).unique("submission", maintain_order=True)
    sections.append(
        section(
            "not-verified",
            "Not verified",
            "board/unverified.html",
            rows=[
                {
                    "submission": r["submission"],
                    "repo": submissions[r["submission"]].repo,
                    "rev": submissions[r["submission"]].rev,
                    "commit": (r["commit"] or MISSING)[:12],
                    "reason": r["reason"],
                }
                for r in failed.iter_rows(named=True)
            ],
        )
    )
    checked = rows["submission"].n_unique()
    lead = (
        f"{checked} submissions, {checked - failed.height} verified, {failed.height} not. Each "
        "verified row was recomputed by this board's pipeline (losona "
        f"{version('losona')}) from the run's own published outputs, with no model call: "
        "the numbers follow from the calls the run recorded, which the board cannot prove a "
        "provider sent. Rows are ranked only within a group of the same scenarios, judge, K "
        "and vote rule; a row marked [TEST DOUBLE] is a stand-in's, not a model's."
    )
    return render_page("LoSoNA board", lead, sections)


def metrics(rows: pl.DataFrame) -> dict[str, int]:
    """The board's headline counts (DVC metrics)."""
    ranked = rows.filter(RANKED)
    return {
        "submissions": rows["submission"].n_unique(),
        "verified": rows.filter(pl.col("verified"))["submission"].n_unique(),
        "not_verified": rows.filter(~pl.col("verified"))["submission"].n_unique(),
        "groups": ranked.select(GROUP_KEYS).unique().height,
        "ranked_rows": ranked.height,
    }


def main(argv: list[str] | None = None) -> int:
    """Make the board from every submission's rows; return the exit status."""
    argparse.ArgumentParser(
        prog="python -m losona.board.page",
        description="Merge every verified submission's rows into the board's page.",
    ).parse_args(sys.argv[1:] if argv is None else argv)
    files = BoardFiles()
    try:
        submissions = read_submissions()
    except LosonaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    rows = merged_rows(submissions, files)
    write_parquet(rows, files.board)
    write_text(board_page(rows, submissions), files.page)
    counts = metrics(rows)
    write_json(counts, files.metrics)
    print(
        f"board: {counts['verified']} of {counts['submissions']} submissions verified, "
        f"{counts['groups']} group(s) -> {files.page}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
