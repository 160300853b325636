"""reports/provenance.json: what a run rests on, deterministic and free of secrets."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import run_stage
from omegaconf import DictConfig

from losona.core.config import AggregateSettings, chosen, load_option, plain
from losona.core.contracts import SCENARIO_SCHEMA, table
from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.core.layout import RunLayout
from losona.judges import prompt as judge_prompt
from losona.pipeline.provenance import run_provenance
from losona.prompts import subject as subject_prompt
from losona.provenance.record import (
    PACKAGES,
    package_versions,
    provenance,
    scenarios_sha256,
    template_hashes,
)

BOOTSTRAP = AggregateSettings(resamples=1000, seed=7, confidence=0.9)


def scenarios(make_row: Callable[..., dict[str, Any]], n: int = 3) -> pl.DataFrame:
    rows = [make_row(scenario_id=f"s{i}", source="test@1") for i in range(n)]
    return table(rows, SCENARIO_SCHEMA, sort_by=["scenario_id"])


def record(df: pl.DataFrame, **models: dict[str, Any]) -> dict[str, Any]:
    return provenance(
        scenarios=df,
        dataset={"name": "bundled", "kind": "bundled"},
        sweep={
            "models": list(models),
            "conditions": ["naive"],
            "judges": ["lexicon", "gemini_pro"],
        },
        models=models,
        judges={j: plain(load_option("judge", j)) for j in ("lexicon", "gemini_pro")},
        trials=3,
        bootstrap=BOOTSTRAP,
    )


def test_the_record_names_configs_templates_and_policies(
    workdir: Path, scenario_row: Callable[..., dict[str, Any]]
) -> None:
    opus = plain(load_option("model", "claude_opus"))
    made = record(scenarios(scenario_row), claude_opus=opus)
    assert set(PACKAGES) | {"python"} == set(made["packages"])
    assert made["packages"]["polars"] == pl.__version__
    assert made["models"]["claude_opus"]["model"] == "anthropic/claude-opus-4-8"
    assert made["models"]["claude_opus"]["params"] == {"temperature": 0.9}
    judge = made["judges"]["gemini_pro"]
    assert judge["model"]["model"] == "gemini/gemini-3.1-pro-preview"
    assert judge["model"]["params"] == {"temperature": 0}
    assert judge["template_version"] == judge_prompt.JUDGE_TEMPLATE_VERSION
    assert (
        made["judges"]["lexicon"]["rules_version"] == made["templates"]["lexicon_rules"]["version"]
    )
    assert made["templates"]["subject"]["version"] == subject_prompt.SUBJECT_TEMPLATE_VERSION
    assert made["sampling"] == {"trials": 3}
    assert made["aggregate"]["bootstrap"] == {"resamples": 1000, "seed": 7, "confidence": 0.9}
    assert made["aggregate"]["unscored_policy"] == "settled-by-scored-trials"
    assert made["dataset"]["sources"] == ["test@1"] and made["dataset"]["scenarios"] == 3


def test_no_secret_reaches_the_record(
    workdir: Path, scenario_row: Callable[..., dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POOL_KEY", "sk-very-secret-value")
    pool = {
        "name": "pool",
        "model": "hosted_vllm/q",
        "api_key_env": "POOL_KEY",
        "endpoints": ["http://bob:hunter2@gpu-2:8000/v1", "http://gpu-1:8000/v1"],
    }
    text = json.dumps(record(scenarios(scenario_row), pool=pool))
    assert "sk-very-secret-value" not in text and "hunter2" not in text and "bob" not in text
    assert '"endpoints": ["http://gpu-1:8000/v1", "http://gpu-2:8000/v1"]' in text
    assert '"api_key_env": "POOL_KEY"' in text


def test_the_dataset_hash_follows_content_not_bytes_or_order(
    tmp_path: Path, scenario_row: Callable[..., dict[str, Any]]
) -> None:
    df = scenarios(scenario_row)
    df.reverse().write_parquet(tmp_path / "a.parquet", compression="snappy")
    df.write_parquet(tmp_path / "b.parquet", compression="zstd", statistics=False)
    assert pl.read_parquet(tmp_path / "a.parquet").equals(df.reverse())
    hashes = {scenarios_sha256(pl.read_parquet(tmp_path / n)) for n in ("a.parquet", "b.parquet")}
    assert hashes == {scenarios_sha256(df)}

    turns = df["turns"].to_list()
    turns[1][0]["content"] += "!"
    assert scenarios_sha256(df.with_columns(turns=pl.Series(turns, dtype=df["turns"].dtype))) != (
        scenarios_sha256(df)
    )


def test_a_template_hash_moves_with_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    before = template_hashes()
    prefixes = subject_prompt.CONDITION_PREFIXES | {"naive": "Be yourself."}
    monkeypatch.setattr(subject_prompt, "CONDITION_PREFIXES", prefixes)
    after = template_hashes()
    assert after["subject"]["sha256"] != before["subject"]["sha256"]
    assert {k: v for k, v in after.items() if k != "subject"} == {
        k: v for k, v in before.items() if k != "subject"
    }


def provenance_in_process(make_cfg: Callable[..., DictConfig], *overrides: str) -> None:
    """What `python stages/provenance.py ...` does, called in this process."""
    cfg = make_cfg(*overrides)
    run_provenance(
        RunLayout(chosen(cfg, "paths")),
        plain(cfg.sweep),
        chosen(cfg, "dataset"),
        chosen(cfg, "sampling").trials,
        chosen(cfg, "aggregate"),
    )


def test_the_stage_function_records_the_composed_run(
    workdir: Path,
    make_cfg: Callable[..., DictConfig],
    scenario_row: Callable[..., dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(LosonaError, match=r"data/scenarios\.parquet not found"):
        provenance_in_process(make_cfg)
    assert not Path("reports/provenance.json").exists()

    write_parquet(scenarios(scenario_row), "data/scenarios.parquet")
    provenance_in_process(make_cfg, "sampling.trials=2", "aggregate.seed=11")
    assert capsys.readouterr().out == "provenance -> reports/provenance.json\n"
    written = json.loads(Path("reports/provenance.json").read_text())
    assert written["sweep"]["conditions"] == ["naive"]  # make_cfg's sweep
    assert written["models"]["smollm2"]["model"] == "smollm2/SmolLM2-135M-Instruct"
    assert set(written["judges"]) == {"lexicon"}
    assert written["dataset"]["config"]["name"] == "bundled"
    assert written["dataset"]["scenarios"] == 3
    assert written["sampling"] == {"trials": 2}
    assert written["aggregate"]["bootstrap"]["seed"] == 11


@pytest.mark.slow  # starts a Python process
def test_the_stage_writes_the_same_bytes_twice_and_refuses_a_missing_table(
    workdir: Path, scenario_row: Callable[..., dict[str, Any]]
) -> None:
    failed = run_stage("provenance")
    assert failed.returncode == 2 and "Traceback" not in failed.stderr
    assert "error: data/scenarios.parquet not found: run the fetch stage first" in failed.stderr
    assert not Path("reports/provenance.json").exists()

    write_parquet(scenarios(scenario_row), "data/scenarios.parquet")
    assert run_stage("provenance").returncode == 0
    first = Path("reports/provenance.json").read_bytes()
    assert run_stage("provenance").returncode == 0
    assert Path("reports/provenance.json").read_bytes() == first
    written = json.loads(first)
    assert written["sweep"]["models"] == ["smollm2"]
    assert written["models"]["smollm2"]["model"] == "smollm2/SmolLM2-135M-Instruct"

    bad = run_stage("provenance", "sampling.trials=-1")
    assert bad.returncode == 2
    expected = "'sampling.trials': expected an integer of at least 1, found -1"
    assert f"error: the command line (sampling.trials=...): {expected}" in bad.stderr


def test_a_package_that_is_not_installed_is_recorded_as_such(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("losona.provenance.record.PACKAGES", ("polars", "no-such-package-losona"))
    versions = package_versions()
    assert versions["no-such-package-losona"] == "not installed"
    assert versions["polars"] == pl.__version__ and set(versions) == {
        "python",
        "polars",
        "no-such-package-losona",
    }
