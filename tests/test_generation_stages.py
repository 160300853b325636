"""The generation stages called in-process with the composed config: generate, screen and
curate, on the scripted generator and baseline of tests/test_generation.py served by the
local test server. Their scripts run under DVC in tests/test_generation_pipeline.py, and
refuse bad input in tests/test_bad_input.py.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import CONF_DIR, REPO, compose_config
from test_generation import BUG, CELLS, EXPECTED_REASONS, ONE_BASELINE, STANDUP, Scripted

from losona.core.config import chosen
from losona.core.errors import LosonaError
from losona.core.layout import GenerationFiles, RunLayout
from losona.generation.settings import GenerationSettings
from losona.pipeline.curate import run_curate
from losona.pipeline.generate import run_generate
from losona.pipeline.screen import run_screen
from losona.testing.openai_server import OpenAIServer

# The models the stages name by option, as the scripted server serves them.
MODELS = {"scripted_generator": "generator", "baseline_a": "baseline-a"}
OVERRIDES = (
    "generate.generator=scripted_generator",
    f"generate.cells.list=[{','.join(cell.replace('__', '/') for cell in CELLS)}]",
    "generate.cells.venues=[workplace]",
    "screen.models=[baseline_a]",
)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(reply=Scripted(ONE_BASELINE)) as running:
        yield running


@pytest.fixture
def scripted_dir(server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory like the repo root, whose conf/model/ also holds the scripted
    generator and baseline: the stages read an option they name from ./conf/<group>/."""
    conf = tmp_path / "conf"
    conf.mkdir()
    for entry in CONF_DIR.iterdir():
        if entry.name != "model":
            (conf / entry.name).symlink_to(entry)
    (conf / "model").mkdir()
    for entry in (CONF_DIR / "model").iterdir():
        (conf / "model" / entry.name).symlink_to(entry)
    for name, model in MODELS.items():
        node = server.model_config(name, model=f"openai/{model}")
        (conf / "model" / f"{name}.yaml").write_text(yaml.safe_dump(node), encoding="utf-8")
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def composed(*overrides: str) -> tuple[GenerationSettings, RunLayout]:
    """The generation node and the layout, as a stage script composes and checks them."""
    cfg = compose_config([*OVERRIDES, *overrides])
    return chosen(cfg, "generation"), RunLayout(chosen(cfg, "paths"))


@pytest.fixture
def generated(scripted_dir: Path, capsys: pytest.CaptureFixture[str]) -> GenerationFiles:
    settings, layout = composed()
    run_generate(settings.generate, layout)
    capsys.readouterr()
    return layout.generation


@pytest.fixture
def screened(generated: GenerationFiles, capsys: pytest.CaptureFixture[str]) -> GenerationFiles:
    settings, layout = composed()
    run_screen(settings.screen, layout)
    capsys.readouterr()
    return generated


def by_cell(table: pl.DataFrame) -> dict[str, dict[str, object]]:
    return {row["candidate_id"].rsplit("__", 1)[0]: row for row in table.iter_rows(named=True)}


def test_generate_writes_every_candidate_and_its_summary(
    scripted_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings, layout = composed()
    run_generate(settings.generate, layout)
    files = layout.generation
    assert capsys.readouterr().out.splitlines() == [
        "generate: 6 candidates for 6 cells from scripted_generator (openai/generator): "
        "2 valid, 4 rejected by validation (66.7%), $0.0000 -> "
        "data/generation/candidates.parquet",
        "  rejected for elicitor_actor: 1",
        "  rejected for reply: 1",
        "  rejected for turns: 1",
        "  rejected for turns.content: 1",
    ]
    candidates = by_cell(pl.read_parquet(scripted_dir / "data/generation/candidates.parquet"))
    assert sorted(candidates) == CELLS
    assert {cell for cell, row in candidates.items() if row["status"] == "valid"} == {BUG, STANDUP}
    assert {row["venue"] for row in candidates.values()} == {"workplace"}
    summary = json.loads(files.generate_summary.read_text(encoding="utf-8"))
    assert files.generate_summary == Path("reports/generation/generate.json")
    assert summary["generator"]["config"] == "scripted_generator"
    assert summary["generator"]["params"] == {"max_tokens": 2048, "temperature": 1.0}
    assert (summary["candidates"], summary["valid"], summary["invalid"]) == (6, 2, 4)
    # The run log sits beside the tables, not in them.
    assert (files.run_logs / "generate.log.json").is_file()


def test_screen_writes_the_outcomes_the_verdicts_and_the_cell_counts(
    generated: GenerationFiles, capsys: pytest.CaptureFixture[str]
) -> None:
    settings, layout = composed()
    run_screen(settings.screen, layout)
    account, *table = capsys.readouterr().out.splitlines()
    assert account.startswith(
        "screen: baseline_a x 3 answers on each valid candidate's no-demonstration control, "
        "judged by lexicon ("
    )
    assert account.endswith("), keep: all -> data/generation/screened.parquet")
    assert "of 6 candidates: 66.7% rejected by validation, 16.7% by screening" in "\n".join(table)
    outcomes = by_cell(pl.read_parquet(generated.screened))
    assert outcomes[BUG]["status"] == "accepted" and outcomes[STANDUP]["status"] == "screened_out"
    assert {outcomes[cell]["status"] for cell in EXPECTED_REASONS} == {"invalid"}
    verdicts = pl.read_parquet(generated.screen_verdicts)
    assert verdicts.height == 2 * 3 and set(verdicts["subject_model"]) == {"baseline_a"}
    cells = pl.read_csv(generated.cells)
    assert (cells.height, cells["accepted"].sum(), cells["rejected_screening"].sum()) == (6, 1, 1)
    summary = json.loads(generated.screen_summary.read_text(encoding="utf-8"))
    assert summary["baselines"] == [{"config": "baseline_a", "model": "openai/baseline-a"}]
    assert summary["judge"]["config"] == "lexicon" and summary["keep"] == "all"


def test_curate_writes_the_review_sheet_then_the_accepted_set(
    screened: GenerationFiles, capsys: pytest.CaptureFixture[str]
) -> None:
    settings, layout = composed()
    [accepted] = pl.read_parquet(screened.screened).filter(pl.col("status") == "accepted")[
        "candidate_id"
    ]
    screened.accept_list.parent.mkdir()
    screened.accept_list.write_text("# reviewed\n", encoding="utf-8")
    out = Path("data/generated/losona-generated-v1.jsonl")
    sidecar = out.with_name("losona-generated-v1.provenance.json")

    run_curate(settings.curate, layout)
    assert capsys.readouterr().out.splitlines() == [
        "curate: 1 candidates to review -> reports/generation/review.html",
        f"curate: generation/accept.txt accepts no candidate yet, so {out} is empty: read "
        "reports/generation/review.html, add the ids you accept, and rerun",
    ]
    assert out.read_text(encoding="utf-8") == ""
    assert pl.read_csv(screened.review_csv)["candidate_id"].to_list() == [accepted]
    assert screened.review_html.read_text(encoding="utf-8").count(accepted) >= 2

    screened.accept_list.write_text(f"{accepted}  # plausible\n", encoding="utf-8")
    run_curate(settings.curate, layout)
    assert capsys.readouterr().out.splitlines()[1] == (
        f"curate: 1 accepted scenarios -> {out} (provenance: {sidecar.name}); evaluate them "
        f"from: python stages/fetch.py dataset=local dataset.path={out}"
    )
    [row] = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert row["scenario_id"] == accepted
    record = json.loads(sidecar.read_text(encoding="utf-8"))
    assert record["scenario_ids"] == [accepted] and record["accept_list"] == "generation/accept.txt"
    assert record["generation"]["generator"]["config"] == "scripted_generator"
    assert record["screen"]["baselines"] == [{"config": "baseline_a", "model": "openai/baseline-a"}]

    # Another version is a file of its own; the first is left as it was.
    before = sidecar.read_bytes()
    other, _ = composed("curate.version=2")
    run_curate(other.curate, layout)
    assert Path("data/generated/losona-generated-v2.jsonl").read_text(encoding="utf-8") == (
        out.read_text(encoding="utf-8")
    )
    assert sidecar.read_bytes() == before


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("generate_summary", "reports/generation/generate.json not found: run the generate stage"),
        ("screen_summary", "reports/generation/screen.json not found: run the screen stage"),
        ("accept_list", "the accept list is missing"),
    ],
)
def test_curate_refuses_a_missing_input_and_writes_nothing(
    screened: GenerationFiles, missing: str, message: str
) -> None:
    settings, layout = composed()
    screened.accept_list.parent.mkdir()
    screened.accept_list.write_text("", encoding="utf-8")
    getattr(screened, missing).unlink()
    with pytest.raises(LosonaError, match=message):
        run_curate(settings.curate, layout)
    assert not screened.review_html.exists() and not screened.generated_folder.exists()
