"""The three scenario sources: bundled, a user's file, and a Hub-style snapshot."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import CONF_DIR
from omegaconf import OmegaConf

from losona.core.catalog import load_catalog
from losona.core.contracts import SCENARIO_SCHEMA
from losona.core.errors import LosonaError
from losona.scenarios import datasets
from losona.scenarios.datasets import fetch_scenarios
from losona.scenarios.validate import ScenarioError

Row = Callable[..., dict[str, Any]]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_bundled_set_loads_with_judge_text_from_the_catalog() -> None:
    df = fetch_scenarios({"kind": "bundled", "name": "bundled"})
    assert df.schema == SCENARIO_SCHEMA
    assert df["scenario_id"].to_list() == sorted(df["scenario_id"].to_list())
    row = df.filter(pl.col("scenario_id") == "standup__binary_answer_norm").row(0, named=True)
    norm = load_catalog().norms["binary_answer_norm"]
    assert row["norm_statement"] == norm.statement
    assert row["example_breaching_response"] == norm.example_breaching_response
    assert row["turns"][0]["index"] == 1
    assert row["elicitor_index"] == len(row["turns"]) + 1
    assert row["source"] == f"bundled:{datasets.bundled_version()}"


def test_local_jsonl_and_parquet_give_the_same_table(tmp_path: Path, scenario_row: Row) -> None:
    rows = [scenario_row(), scenario_row(scenario_id="b_second")]
    from_jsonl = fetch_scenarios({"kind": "local", "path": write_jsonl(tmp_path / "s.jsonl", rows)})
    parquet = tmp_path / "s.parquet"
    from_jsonl.drop("source").write_parquet(parquet)
    from_parquet = fetch_scenarios({"kind": "local", "path": parquet})
    assert from_jsonl.drop("source").equals(from_parquet.drop("source"))
    assert from_jsonl["source"][0].startswith("local:s.jsonl@sha256:")


def test_local_file_problems_name_the_line(tmp_path: Path, scenario_row: Row) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(scenario_row()) + "\n{not json\n", encoding="utf-8")
    with pytest.raises(ScenarioError, match=r"s\.jsonl:2: a scenario with no id: field '\(line\)'"):
        fetch_scenarios({"kind": "local", "path": path})


def test_unknown_fields_are_refused(tmp_path: Path, scenario_row: Row) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [scenario_row(elicitor="oops")])
    with pytest.raises(ScenarioError, match="field 'elicitor': expected a field of the scenario"):
        fetch_scenarios({"kind": "local", "path": path})


def test_non_utf8_and_truncated_files_are_refused(tmp_path: Path, scenario_row: Row) -> None:
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes(json.dumps(scenario_row()).replace("Noor", "N\\u00f6or").encode() + b"\xe9\n")
    with pytest.raises(LosonaError, match=r"latin\.jsonl: not UTF-8"):
        fetch_scenarios({"kind": "local", "path": latin})
    good = tmp_path / "good.parquet"
    fetch_scenarios(
        {"kind": "local", "path": write_jsonl(tmp_path / "g.jsonl", [scenario_row()])}
    ).drop("source").write_parquet(good)
    truncated = tmp_path / "cut.parquet"
    truncated.write_bytes(good.read_bytes()[:200])
    with pytest.raises(LosonaError, match=r"cut\.parquet: cannot be read as Parquet"):
        fetch_scenarios({"kind": "local", "path": truncated})


def hub_config(local_dir: Path | None) -> dict[str, Any]:
    config: dict[str, Any] = OmegaConf.to_container(  # type: ignore[assignment]
        OmegaConf.load(CONF_DIR / "dataset" / "losona_hf.yaml")
    )
    config["local_dir"] = str(local_dir) if local_dir else None
    return config


def write_snapshot(root: Path, rows: list[dict[str, Any]]) -> Path:
    """A folder laid out like a Hub dataset snapshot: a card and a Parquet data split."""
    (root / "data").mkdir(parents=True)
    (root / "README.md").write_text("---\nlicense: cc-by-4.0\n---\n# LoSoNA\n", encoding="utf-8")
    release_schema = {k: v for k, v in SCENARIO_SCHEMA.items() if k not in ("source", "end_goal")}
    columns = [
        {k: r[k] for k in release_schema if k in r}
        | {k: r[k] for k in r if k not in SCENARIO_SCHEMA}
        for r in rows
    ]
    pl.DataFrame(columns).write_parquet(root / "data" / "test-00000-of-00001.parquet")
    return root


def test_hub_snapshot_loads_through_the_column_mapping(tmp_path: Path, scenario_row: Row) -> None:
    root = write_snapshot(tmp_path / "snap", [scenario_row()])
    df = fetch_scenarios(hub_config(root))
    assert df.height == 1
    assert df["source"][0].startswith("hf:Humalike-ai/LoSoNA@main:local-copy-sha256:")
    assert df["end_goal"][0] is None


def test_hub_snapshot_with_renamed_column_says_what_was_expected(
    tmp_path: Path, scenario_row: Row
) -> None:
    row = scenario_row()
    row["speaker_bio"] = row.pop("subject_bio")
    root = write_snapshot(tmp_path / "snap", [row])
    with pytest.raises(LosonaError) as caught:
        fetch_scenarios(hub_config(root))
    message = str(caught.value)
    assert "expected the release column 'subject_bio'" in message
    assert "'speaker_bio'" in message and "dataset.local_dir" in message


def test_failed_download_explains_how_to_use_a_local_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub

    def offline(**_: Any) -> str:
        raise ConnectionError("Hub unreachable")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", offline)
    with pytest.raises(LosonaError) as caught:
        fetch_scenarios(hub_config(None))
    message = str(caught.value)
    assert "Humalike-ai/LoSoNA at revision main" in message
    assert "ConnectionError: Hub unreachable" in message
    assert "dataset.local_dir=/path/to/snapshot" in message


# --- subsets -----------------------------------------------------------------------------

BUNDLED = {"name": "bundled", "kind": "bundled"}


@pytest.mark.slow  # 20 to 60 s each on a loaded 2-core machine
def test_a_limit_keeps_that_many_scenarios_one_norm_each_first_and_says_so() -> None:
    full = fetch_scenarios(BUNDLED)
    five = fetch_scenarios(BUNDLED | {"limit": 5})
    assert five.height == 5 and five["norm_id"].n_unique() == 5
    assert set(five["scenario_id"]) <= set(full["scenario_id"])
    assert five["source"].unique().to_list() == [
        f"{full['source'][0]}; subset of {full.height}: limit 5 stratified by norm, seed 0"
    ]
    # Deterministic, and the seed chooses.
    assert fetch_scenarios(BUNDLED | {"limit": 5}).equals(five)
    other = fetch_scenarios(BUNDLED | {"limit": 5, "limit_seed": 1})
    assert set(other["scenario_id"]) != set(five["scenario_id"])
    # Every norm appears before any appears twice.
    norms = full["norm_id"].n_unique()
    counts = fetch_scenarios(BUNDLED | {"limit": norms + 1})["norm_id"].value_counts()
    assert counts.height == norms and sorted(counts["count"])[-2:] == [1, 2]


@pytest.mark.slow  # 20 to 60 s each on a loaded 2-core machine
def test_scenario_ids_keep_the_named_ones() -> None:
    ids = fetch_scenarios(BUNDLED)["scenario_id"].to_list()[3:6]
    chosen = fetch_scenarios(BUNDLED | {"scenario_ids": ids})
    assert chosen["scenario_id"].to_list() == sorted(ids)
    assert chosen["source"][0].endswith("; subset of 44: 3 scenario_ids")


def test_a_limit_past_the_set_is_refused_naming_its_size(tmp_path: Path, scenario_row: Row) -> None:
    """A limit past the size would run, and pay for, every scenario, set as a subset."""
    rows = [scenario_row(), scenario_row(scenario_id="b_second")]
    mine = {"kind": "local", "name": "mine", "path": write_jsonl(tmp_path / "s.jsonl", rows)}
    with pytest.raises(LosonaError) as caught:
        fetch_scenarios(mine | {"limit": 3}, origin=lambda key: f"conf/run.yaml ({key})")
    assert str(caught.value) == (
        "conf/run.yaml (dataset.limit): 'dataset.limit': 3 is more than the 2 scenarios of "
        "dataset 'mine'; set a smaller limit, or null for every scenario"
    )
    # What the limit would cut is what scenario_ids keeps, when they are set.
    with pytest.raises(LosonaError) as caught:
        fetch_scenarios(mine | {"limit": 2, "scenario_ids": ["b_second"]})
    assert str(caught.value).startswith(
        "conf/dataset/mine.yaml: 'dataset.limit': 2 is more than the 1 scenario of dataset "
        "'mine' that 'dataset.scenario_ids' keeps;"
    )
    # A limit of the size keeps the whole set, unmarked.
    assert fetch_scenarios(mine | {"limit": 2}).equals(fetch_scenarios(mine))


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"limit": 0}, "'dataset.limit': expected a positive whole number"),
        ({"limit": -2}, "'dataset.limit': expected a positive whole number"),
        ({"limit": float("inf")}, "found inf"),
        ({"limit": float("nan")}, "found nan"),
        ({"limit": 2.5}, "found 2.5"),
        ({"limit": True}, "found True"),
        ({"limit_seed": "x"}, "'dataset.limit_seed': expected an integer"),
        ({"scenario_ids": ["nope"]}, "'dataset.scenario_ids': expected ids of the dataset's"),
        ({"scenario_ids": ["nope"]}, "found ids not in the dataset: ['nope']"),
        ({"scenario_ids": "abc"}, "'dataset.scenario_ids': expected a list of ids"),
    ],
)
def test_a_bad_subset_names_the_file_and_field(setting: dict[str, Any], message: str) -> None:
    with pytest.raises(LosonaError) as caught:
        fetch_scenarios(BUNDLED | setting)
    assert str(caught.value).startswith("conf/dataset/bundled.yaml: ")
    assert message in str(caught.value)
