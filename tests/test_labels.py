"""The labelling workflow: a blinded stratified sheet, and strict reading of people's labels."""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from conftest import BASE_ROW, run_layout
from test_judge import responses_table

from losona.audit.labelling import (
    Sheet,
    item_id,
    labelling_sheet,
    load_labels,
    load_responses,
    read_labels,
    sheet_html,
    write_sheet,
)
from losona.audit.tables import SHEET_KEY_SCHEMA, SHEET_SCHEMA
from losona.core.contracts import SCENARIO_SCHEMA, table
from losona.core.errors import LosonaError
from losona.core.files import sha256_text

NORMS = [f"norm_{i}" for i in range(5)]
CONDITIONS = ["naive", "norm_informed", "oracle"]
MODELS = ["secret_model_a", "secret_model_b"]


@pytest.fixture(scope="module")
def scenarios() -> pl.DataFrame:
    rows = [
        BASE_ROW
        | {
            "scenario_id": f"standup__{norm}__{i}",
            "norm_id": norm,
            "norm_statement": f"The rule of {norm}.",
            "source": "test",
        }
        for norm in NORMS
        for i in range(2)
    ]
    return table(rows, SCENARIO_SCHEMA, sort_by=["scenario_id"])


@pytest.fixture(scope="module")
def responses(scenarios: pl.DataFrame) -> pl.DataFrame:
    """2 models x 3 conditions x 10 scenarios x 2 trials: 120 responses, one of them null."""
    frames = []
    for model in MODELS:
        for condition in CONDITIONS:
            items = [
                (sid, trial, f"{model} {condition} {sid} {trial}")
                for sid in scenarios["scenario_id"]
                for trial in range(2)
            ]
            frames.append(responses_table(items, model=model, condition=condition))
    both = pl.concat(frames)
    first = (pl.col("subject_model") == MODELS[0]) & (pl.col("trial") == 0)
    is_null = first & (pl.col("condition") == "naive")
    return both.with_columns(
        response=pl.when(is_null & (pl.col("scenario_id") == "standup__norm_0__0"))
        .then(None)
        .otherwise(pl.col("response"))
    )


@pytest.fixture(scope="module")
def sheet(responses: pl.DataFrame, scenarios: pl.DataFrame) -> Sheet:
    return labelling_sheet(responses, scenarios, items=12, seed=0)


def test_the_sheet_is_a_seeded_sample_covering_every_norm_and_condition(
    sheet: Sheet, responses: pl.DataFrame, scenarios: pl.DataFrame
) -> None:
    assert sheet.items.schema == SHEET_SCHEMA
    assert sheet.key.schema == SHEET_KEY_SCHEMA
    assert sheet.items["item"].to_list() == list(range(1, 13))
    assert set(sheet.key["norm_id"]) == set(NORMS)
    assert set(sheet.key["condition"]) == set(CONDITIONS)
    assert sheet.key["item_id"].n_unique() == 12
    assert None not in sheet.items["response"].to_list()
    again = labelling_sheet(responses, scenarios, items=12, seed=0)
    assert again.items.equals(sheet.items) and again.key.equals(sheet.key)
    other = labelling_sheet(responses, scenarios, items=12, seed=1)
    assert set(other.key["item_id"]) != set(sheet.key["item_id"])


def test_coverage_holds_for_any_seed_even_at_the_smallest_size(
    responses: pl.DataFrame, scenarios: pl.DataFrame
) -> None:
    for seed in range(20):
        key = labelling_sheet(responses, scenarios, items=5, seed=seed).key
        assert set(key["norm_id"]) == set(NORMS), seed
        assert set(key["condition"]) == set(CONDITIONS), seed


def test_the_key_leads_back_to_the_exact_response_shown(
    sheet: Sheet, responses: pl.DataFrame
) -> None:
    shown = sheet.items.join(sheet.key, on="item_id")
    for row in shown.iter_rows(named=True):
        (original,) = responses.filter(
            (pl.col("scenario_id") == row["scenario_id"])
            & (pl.col("subject_model") == row["subject_model"])
            & (pl.col("condition") == row["condition"])
            & (pl.col("trial") == row["trial"])
        )["response"]
        assert row["response"] == original
        assert row["response_sha256"] == sha256_text(original)
        identity = (row["scenario_id"], row["subject_model"], row["condition"], row["trial"])
        assert row["item_id"] == item_id(*identity, original)


def test_the_sheet_is_blind_to_models_conditions_and_verdicts(
    sheet: Sheet, scenarios: pl.DataFrame
) -> None:
    # The test's responses spell out model and condition; everything else must not.
    shown = sheet.items.drop("response").write_csv() + sheet_html(
        Sheet(sheet.items.with_columns(response=pl.lit("(text)")), sheet.key)
    )
    for secret in [*MODELS, *CONDITIONS]:
        assert secret not in shown, secret
    first = sheet.items.row(0, named=True)
    key = sheet.key.filter(pl.col("item_id") == first["item_id"]).row(0, named=True)
    scenario = scenarios.filter(pl.col("scenario_id") == key["scenario_id"]).row(0, named=True)
    assert first["norm_statement"] == scenario["norm_statement"]
    assert first["elicitor"] == f"{scenario['elicitor_actor']}: {scenario['elicitor_content']}"
    assert first["transcript"].splitlines()[0] == "Ana: Morning! Is the dashboard refreshed?"
    assert first["subject"] == "Noor"
    assert first["complies"] is None


def test_the_html_sheet_is_self_contained_and_escapes_what_it_shows(sheet: Sheet) -> None:
    hostile = sheet.items.with_columns(response=pl.lit("<script>alert(1)</script> & more"))
    page = sheet_html(Sheet(hostile, sheet.key))
    assert "<script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in page
    assert "http" not in page.replace('name="viewport"', "")
    assert page.count('class="case"') == 12
    assert "Item 12 of 12" in page


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (4, "5 norms and 3 conditions must all appear: ask for at least 5"),
        (200, "the sweep has only 119 responses to label"),
    ],
)
def test_impossible_sheet_sizes_are_refused(
    responses: pl.DataFrame, scenarios: pl.DataFrame, items: int, message: str
) -> None:
    with pytest.raises(LosonaError, match=message):
        labelling_sheet(responses, scenarios, items=items, seed=0)


def test_responses_come_from_the_sweeps_files(tmp_path: Path, responses: pl.DataFrame) -> None:
    from losona.core.files import write_parquet

    for (model, condition), part in responses.group_by("subject_model", "condition"):
        write_parquet(part, tmp_path / str(model) / f"{condition}.parquet")
    layout = run_layout(responses_dir=str(tmp_path))
    loaded = load_responses(layout, MODELS[:1], ["naive", "oracle"])
    assert loaded.height == 40
    with pytest.raises(LosonaError, match=r"naive\.parquet not found: run the sample stage"):
        load_responses(layout, ["absent_model"], ["naive"])


# -- reading labels back -----------------------------------------------------------------------


def labels_file(path: Path, sheet: Sheet, values: dict[str, str] | None = None) -> Path:
    """The sheet's CSV as a labeller returns it: `complies` filled in, a note or two."""
    with path.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(SHEET_SCHEMA.names())
        for i, row in enumerate(sheet.items.iter_rows(named=True)):
            value = (values or {}).get(row["item_id"], "true" if i % 3 else "false")
            writer.writerow([*list(row.values())[:-2], value, "hm" if i == 2 else ""])
    return path


def test_labels_come_back_joined_to_the_key(tmp_path: Path, sheet: Sheet) -> None:
    path = labels_file(tmp_path / "human.csv", sheet)
    human = read_labels(path, sheet.key)
    assert human.height == 12
    assert human.columns == [*SHEET_KEY_SCHEMA.names(), "human"]
    by_item = dict(zip(sheet.items["item_id"], sheet.items["item"], strict=True))
    for row in human.iter_rows(named=True):
        assert row["human"] == ((by_item[row["item_id"]] - 1) % 3 != 0)


def test_labels_are_read_leniently_where_that_is_safe(tmp_path: Path, sheet: Sheet) -> None:
    # A spreadsheet's byte-order mark, other columns in any order, TRUE / False / spaces.
    ids = sheet.key["item_id"].to_list()
    path = tmp_path / "human.csv"
    lines = ["labeller,complies,item_id"] + [
        f"ann,{' TRUE ' if i % 2 else 'False'},{item}" for i, item in enumerate(ids)
    ]
    path.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    human = read_labels(path, sheet.key)
    expected = {item: bool(i % 2) for i, item in enumerate(ids)}
    assert dict(zip(human["item_id"], human["human"], strict=True)) == expected


def compact_labels(path: Path, sheet: Sheet) -> Path:
    """Labels as two columns, one item a line: item_id, complies (every third false)."""
    ids = sheet.items["item_id"].to_list()
    lines = ["item_id,complies"] + [
        f"{item},{'false' if i % 3 == 0 else 'true'}" for i, item in enumerate(ids)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda lines, ids: [lines[0], "rnot0nsheet,true", *lines[1:]],
            r"human.csv, line 2: item 'rnot0nsheet' is not on the sheet",
        ),
        (
            lambda lines, ids: [*lines, f"{ids[0]},false"],
            r"human.csv, line 14: item '{0}' is labelled twice \(first on line 2\)",
        ),
        (
            lambda lines, ids: [lines[0], f"{ids[0]},maybe", *lines[2:]],
            r"human.csv, line 2: item '{0}', field 'complies': expected true or false, "
            "found 'maybe'",
        ),
        (
            lambda lines, ids: [lines[0], f"{ids[0]},", *lines[2:]],
            r"line 2: item '{0}', field 'complies': expected true or false, found ''",
        ),
        (
            lambda lines, ids: [lines[0], *lines[3:]],
            r"human.csv: 2 of the sheet's 12 items have no label \(\w+, \w+\)",
        ),
        (
            lambda lines, ids: ["item_id,label", *lines[1:]],
            r"human.csv: expected the columns item_id and complies .* missing: \['complies'\]",
        ),
    ],
)
def test_bad_labels_are_refused_naming_file_line_item_and_field(
    tmp_path: Path, sheet: Sheet, edit: Callable[[list[str], list[str]], list[str]], message: str
) -> None:
    ids = sheet.items["item_id"].to_list()
    path = compact_labels(tmp_path / "human.csv", sheet)
    path.write_text("\n".join(edit(path.read_text().splitlines(), ids)) + "\n")
    with pytest.raises(LosonaError, match=message.replace("{0}", ids[0])):
        read_labels(path, sheet.key)


def test_labels_without_a_sheet_key_are_refused_and_nothing_yet_is_fine(
    tmp_path: Path, sheet: Sheet
) -> None:
    key, labels = tmp_path / "sheet_key.csv", tmp_path / "human.csv"
    assert load_labels(key, labels) == load_labels(key, labels)
    nothing = load_labels(key, labels)
    assert (nothing.key, nothing.human) == (None, None)
    write_sheet(sheet, csv_path=tmp_path / "s.csv", html_path=tmp_path / "s.html", key_path=key)
    waiting = load_labels(key, labels)
    assert waiting.key is not None and waiting.key.equals(sheet.key)
    assert waiting.human is None
    labels_file(labels, sheet)
    labelled = load_labels(key, labels)
    assert labelled.human is not None and labelled.human.height == 12
    key.unlink()
    with pytest.raises(LosonaError, match="holds labels, but there is no sheet key"):
        load_labels(key, labels)


def test_the_written_sheet_round_trips_and_reruns_byte_identically(
    tmp_path: Path, sheet: Sheet, responses: pl.DataFrame, scenarios: pl.DataFrame
) -> None:
    paths = {n: tmp_path / f"sheet.{n}" for n in ("csv", "html")}
    write_sheet(sheet, csv_path=paths["csv"], html_path=paths["html"], key_path=tmp_path / "k.csv")
    first = [p.read_bytes() for p in (*paths.values(), tmp_path / "k.csv")]
    again = labelling_sheet(responses, scenarios, items=12, seed=0)
    write_sheet(again, csv_path=paths["csv"], html_path=paths["html"], key_path=tmp_path / "k.csv")
    assert first == [p.read_bytes() for p in (*paths.values(), tmp_path / "k.csv")]
    assert pl.read_csv(paths["csv"], schema=SHEET_SCHEMA).equals(sheet.items)
