"""The audit's labelling workflow: a blinded sample of responses for people, and their labels.

The sheet shows what the judge sees and nothing that could sway a labeller (no verdict,
model or condition); item ids hash a response's identity and text, so they reveal neither
and stay the same in any later sheet."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from losona.audit.tables import SHEET_KEY_SCHEMA, SHEET_SCHEMA
from losona.core.contracts import RESPONSE_SCHEMA, scenarios_from_table, table
from losona.core.errors import LosonaError
from losona.core.files import display_path, read_csv, read_parquet, sha256_text, write_text
from losona.core.layout import RunLayout
from losona.pages import fragment, render_page, section
from losona.prompts.render import format_transcript

LABELS = {"true": True, "false": False}


@dataclass(frozen=True)
class Sheet:
    """A labelling sheet: the items people see, and the key to what each one is."""

    items: pl.DataFrame  # SHEET_SCHEMA, in labelling order
    key: pl.DataFrame  # SHEET_KEY_SCHEMA, by item_id


@dataclass(frozen=True)
class Labels:
    """The sheet's key, if one was exported, and people's labels, once they are back."""

    key: pl.DataFrame | None  # SHEET_KEY_SCHEMA
    human: pl.DataFrame | None  # the key's columns and `human` (bool), one row per item


def load_responses(
    layout: RunLayout, models: Sequence[str], conditions: Sequence[str]
) -> pl.DataFrame:
    """Every response of the sweep's models x conditions in one table."""
    frames = [
        read_parquet(layout.responses(model, condition), RESPONSE_SCHEMA, "sample")
        for model in models
        for condition in conditions
    ]
    if not frames:
        raise LosonaError("the sweep lists no models or no conditions: nothing to label")
    return pl.concat(frames)


def item_id(scenario_id: str, model: str, condition: str, trial: int, response: str) -> str:
    """A response's item id: a hash of its identity and text, which reveals neither."""
    return "r" + sha256_text(f"{scenario_id}\0{model}\0{condition}\0{trial}\0{response}")[:10]


def labelling_sheet(
    responses: pl.DataFrame, scenarios: pl.DataFrame, *, items: int, seed: int
) -> Sheet:
    """A seeded random sample of `items` responses in which every norm and condition appears,
    in shuffled order; null responses have nothing to label."""
    by_id = {s.scenario_id: s for s in scenarios_from_table(scenarios)}
    unknown = sorted(set(responses["scenario_id"]) - set(by_id))
    if unknown:
        raise LosonaError(
            f"responses name scenario '{unknown[0]}', which is not in the scenario table: "
            "rerun sample after fetch"
        )
    norm_of = {sid: s.norm_id for sid, s in by_id.items()}
    pool = (
        responses.filter(pl.col("response").is_not_null())
        .with_columns(norm_id=pl.col("scenario_id").replace_strict(norm_of))
        .sort("subject_model", "condition", "scenario_id", "trial")
    )

    norms, conditions = sorted(set(pool["norm_id"])), sorted(set(pool["condition"]))
    needed = max(len(norms), len(conditions))
    if items < needed:
        raise LosonaError(
            f"audit.sheet.items is {items}, but {len(norms)} norms and {len(conditions)} "
            f"conditions must all appear: ask for at least {needed}"
        )
    if items > pool.height:
        raise LosonaError(
            f"audit.sheet.items is {items}, but the sweep has only {pool.height} responses "
            "to label: ask for fewer"
        )
    rng = np.random.default_rng(seed)
    chosen = _cover(
        pool,
        [norms[i] for i in rng.permutation(len(norms))],
        [conditions[i] for i in rng.permutation(len(conditions))],
        rng,
    )
    rest = np.setdiff1d(np.arange(pool.height), chosen)
    chosen += [int(i) for i in rng.choice(rest, size=items - len(chosen), replace=False)]
    order = [chosen[i] for i in rng.permutation(len(chosen))]

    sheet, key = [], []
    for position, index in enumerate(order, start=1):
        row = pool.row(index, named=True)
        scenario = by_id[row["scenario_id"]]
        identity = (row["scenario_id"], row["subject_model"], row["condition"], row["trial"])
        item = item_id(*identity, row["response"])
        sheet.append(
            {
                "item": position,
                "item_id": item,
                "norm_statement": scenario.norm_statement,
                "transcript": format_transcript(scenario.turns),
                "elicitor": format_transcript([scenario.elicitor]),
                "subject": scenario.subject,
                "response": row["response"],
                "complies": None,
                "note": None,
            }
        )
        key.append(
            {
                "item_id": item,
                "scenario_id": row["scenario_id"],
                "norm_id": scenario.norm_id,
                "condition": row["condition"],
                "subject_model": row["subject_model"],
                "trial": row["trial"],
                "response_sha256": sha256_text(row["response"]),
            }
        )
    if len({k["item_id"] for k in key}) != len(key):
        raise LosonaError("two responses on the sheet share an item id: draw with another seed")
    return Sheet(table(sheet, SHEET_SCHEMA, sort_by=[]), table(key, SHEET_KEY_SCHEMA, ["item_id"]))


def _cover(
    pool: pl.DataFrame, norms: list[str], conditions: list[str], rng: np.random.Generator
) -> list[int]:
    """Positions in `pool` of one response per norm and per condition, each pairing drawn."""
    norm, condition = pool["norm_id"].to_numpy(), pool["condition"].to_numpy()
    chosen: list[int] = []
    for i in range(max(len(norms), len(conditions))):
        want_norm, want_condition = norms[i % len(norms)], conditions[i % len(conditions)]
        free = np.ones(pool.height, dtype=bool)
        free[chosen] = False
        # A response of this norm under this condition; failing that (a partial run), one
        # of whichever of the two this round is there to cover.
        for mask in (
            (norm == want_norm) & (condition == want_condition),
            norm == want_norm if i < len(norms) else condition == want_condition,
        ):
            candidates = np.flatnonzero(mask & free)
            if candidates.size:
                chosen.append(int(rng.choice(candidates)))
                break
    return chosen


def write_sheet(
    sheet: Sheet, *, csv_path: str | Path, html_path: str | Path, key_path: str | Path
) -> None:
    """Write the sheet as CSV and HTML, and its key beside them, each atomically."""
    write_text(sheet.items.write_csv(), csv_path)
    write_text(sheet_html(sheet), html_path)
    write_text(sheet.key.write_csv(), key_path)


def sheet_html(sheet: Sheet) -> str:
    """The sheet as one readable, self-contained page (no script, opens offline), each item's
    chat lines split into speaker and text."""
    cards = [
        {
            **row,
            "chat": [_line(line) for line in row["transcript"].splitlines()],
            "elicitor": _line(row["elicitor"]),
        }
        for row in sheet.items.iter_rows(named=True)
    ]
    return render_page(
        "LoSoNA labelling sheet",
        fragment("sheet/lead.html"),
        [
            section("how", "How to label", "sheet/how.html"),
            section("items", f"The {len(cards)} items", "sheet/items.html", cards=cards),
        ],
    )


def _line(line: str) -> tuple[str | None, str]:
    """A `Name: text` chat line as (name, text); (None, line) when it names no one."""
    name, colon, text = line.partition(": ")
    return (name, text) if colon else (None, line)


def read_labels(path: str | Path, key: pl.DataFrame) -> pl.DataFrame:
    """People's labels for the sheet `key` describes: the key's columns and `human`."""
    path = Path(path)
    where = display_path(path)
    known = set(key["item_id"])
    seen: dict[str, int] = {}
    labels: dict[str, bool] = {}
    try:
        # utf-8-sig: spreadsheet programs often start a CSV with a byte-order mark.
        with path.open(encoding="utf-8-sig", newline="") as stream:
            reader = csv.DictReader(stream)
            columns = reader.fieldnames or []
            missing = [c for c in ("item_id", "complies") if c not in columns]
            if missing:
                raise LosonaError(
                    f"{where}: expected the columns item_id and complies (others are "
                    f"ignored), found {columns}; missing: {missing}"
                )
            for row in reader:
                line = reader.line_num
                item = (row["item_id"] or "").strip()
                if item not in known:
                    raise LosonaError(
                        f"{where}, line {line}: item '{item}' is not on the sheet (its key "
                        "does not list it); was it labelled on another sheet?"
                    )
                if item in seen:
                    raise LosonaError(
                        f"{where}, line {line}: item '{item}' is labelled twice (first on "
                        f"line {seen[item]}); keep one label per item"
                    )
                seen[item] = line
                value = (row["complies"] or "").strip().lower()
                if value not in LABELS:
                    raise LosonaError(
                        f"{where}, line {line}: item '{item}', field 'complies': expected "
                        f"true or false, found {row['complies']!r}"
                    )
                labels[item] = LABELS[value]
    except UnicodeDecodeError as exc:
        raise LosonaError(f"{where}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    unlabelled = sorted(known - set(labels))
    if unlabelled:
        more = f" and {len(unlabelled) - 3} more" if len(unlabelled) > 3 else ""
        shown = ", ".join(unlabelled[:3]) + more
        raise LosonaError(
            f"{where}: {len(unlabelled)} of the sheet's {len(known)} items have no label "
            f"({shown}); every item needs true or false in 'complies'"
        )
    human = pl.Series("human", [labels[item] for item in key["item_id"]], pl.Boolean())
    return key.with_columns(human).sort("item_id")


def load_labels(key_path: str | Path, labels_path: str | Path) -> Labels:
    """The sheet's key and people's labels, each None while it does not exist yet."""
    key_path, labels_path = Path(key_path), Path(labels_path)
    if not key_path.is_file():
        if labels_path.is_file():
            raise LosonaError(
                f"{display_path(labels_path)} holds labels, but there is no sheet key "
                f"({display_path(key_path)}) to say which responses they are for: export "
                "the sheet they were given for (python stages/audit.py audit.export=true) "
                "or point paths.label_key at its key"
            )
        return Labels(None, None)
    key = read_csv(
        key_path,
        SHEET_KEY_SCHEMA,
        "export the sheet again (python stages/audit.py audit.export=true)",
    )
    human = read_labels(labels_path, key) if labels_path.is_file() else None
    return Labels(key, human)
