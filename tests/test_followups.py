"""A scenario's follow-up material: checked by fetch, named when wrong, never in the table."""

from __future__ import annotations

import copy
import json
import shutil
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FOLLOWUP_FIXTURES

import losona.scenarios.datasets
from losona.core.catalog import load_catalog
from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.scenarios.datasets import BUNDLED_DIR, fetch_followups, fetch_scenarios, load_bundled
from losona.scenarios.followups import Followup, Message, followup_problems
from losona.scenarios.validate import ScenarioError

STANDUP = "standup__binary_answer_norm"
BUNDLED = {"name": "bundled", "kind": "bundled"}


@pytest.fixture
def bundled_with_fixtures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the bundled set whose fixture scenarios carry their follow-up block."""
    folder = tmp_path / "scenarios"
    shutil.copytree(BUNDLED_DIR, folder)
    for fixture in FOLLOWUP_FIXTURES.glob("*.yaml"):
        target = folder / fixture.name
        raw = yaml.safe_load(target.read_text(encoding="utf-8"))
        raw["followup"] = yaml.safe_load(fixture.read_text(encoding="utf-8"))["followup"]
        target.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False))
    monkeypatch.setattr(losona.scenarios.datasets, "BUNDLED_DIR", folder)
    return folder


def test_fetch_accepts_the_block_and_the_scenario_table_does_not_change(
    bundled_with_fixtures: Path, tmp_path: Path
) -> None:
    with_block = fetch_scenarios(BUNDLED)
    write_parquet(with_block, tmp_path / "with.parquet")
    for path in bundled_with_fixtures.glob("*__*.yaml"):  # every block taken out
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        raw.pop("followup", None)
        path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False))
    without = fetch_scenarios(BUNDLED)
    write_parquet(without, tmp_path / "without.parquet")
    assert "followup" not in with_block.columns
    assert (tmp_path / "with.parquet").read_bytes() == (tmp_path / "without.parquet").read_bytes()
    # The set's own version stays in `source`: the follow-ups are versioned apart.
    assert set(with_block["source"]) == {"bundled:losona-bundled@1.0"}


def test_the_material_is_read_with_its_own_version(bundled_with_fixtures: Path) -> None:
    found = fetch_followups(BUNDLED)
    assert {p.stem for p in FOLLOWUP_FIXTURES.glob("*.yaml")} <= set(found)
    standup = found[STANDUP]
    assert standup.source == "bundled:losona-bundled-followups@2"
    assert standup.sanction == (Message("Omar", "ok, that's a lot of words for a yes or no"),)
    assert standup.neutral[0].actor == "Omar" and standup.elicitor.actor == "Priya"
    manifest = bundled_with_fixtures / "manifest.yaml"
    manifest.write_text("name: losona-bundled\nversion: '1.0'\n")
    with pytest.raises(LosonaError, match=r"manifest\.yaml: 'followup_version': expected"):
        fetch_followups(BUNDLED)


def test_neither_arm_of_the_bundled_material_is_longer_by_habit() -> None:
    # Per block, within the pair rules; across the set, the neutral continuation must not be
    # the longer arm by habit (version 1: longer in 32 of 44 blocks, median 1.18x), or the
    # sanction effect would carry a length difference as well as the sanction.
    found = fetch_followups(BUNDLED)
    ratios = [
        sum(len(m.content) for m in f.neutral) / sum(len(m.content) for m in f.sanction)
        for f in found.values()
    ]
    assert ratios, "the bundled set has follow-up material"
    median = statistics.median(ratios)
    assert 0.95 <= median <= 1.05, median
    longer, shorter = sum(r > 1 for r in ratios), sum(r < 1 for r in ratios)
    assert abs(longer - shorter) <= 4, (longer, shorter)


def test_a_users_file_may_carry_the_block(
    scenario_row: Callable[..., dict[str, Any]], tmp_path: Path
) -> None:
    block = {
        "sanction": [{"actor": "Ana", "content": "ok, that's a whole essay"}],
        "neutral": [{"actor": "Ana", "content": "ok, thanks for the update"}],
        "elicitor": {"actor": "Bo", "content": "Noor, is the backup done too?"},
    }
    path = tmp_path / "s.jsonl"
    rows = [scenario_row(), scenario_row(scenario_id="other", followup=block)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    dataset = {"name": "local", "kind": "local", "path": str(path)}
    assert "followup" not in fetch_scenarios(dataset).columns
    found = fetch_followups(dataset)
    assert list(found) == ["other"]
    assert isinstance(found["other"], Followup) and found["other"].source.startswith(
        "local:s.jsonl"
    )


def fixture_block() -> dict[str, Any]:
    raw = yaml.safe_load((FOLLOWUP_FIXTURES / f"{STANDUP}.yaml").read_text(encoding="utf-8"))
    return dict(raw["followup"])


def standup_row() -> dict[str, Any]:
    rows = dict(load_bundled(load_catalog()))
    return next(row for row in rows.values() if row["scenario_id"] == STANDUP)


def mutate(change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    block = copy.deepcopy(fixture_block())
    change(block)
    return block


def two_each(block: dict[str, Any]) -> None:
    block["sanction"].append({"actor": "Lena", "content": "cool cool cool"})
    block["neutral"].append({"actor": "Lena", "content": "cool, on it now"})


CASES: list[Any] = [
    pytest.param(
        lambda b: b["sanction"][0].update(actor="Dana"),
        "followup.sanction[0].actor",
        "a cast member other than the subject",
        id="subject-speaks",
    ),
    pytest.param(
        lambda b: b["elicitor"].update(actor="Zed"),
        "followup.elicitor.actor",
        "a member of the cast",
        id="stranger",
    ),
    pytest.param(
        lambda b: b["sanction"].clear(),
        "followup.sanction",
        "a list of 1 or 2 messages",
        id="no-sanction",
    ),
    pytest.param(
        lambda b: b["sanction"].extend([b["sanction"][0]] * 2),
        "followup.sanction",
        "a list of 1 or 2 messages",
        id="three-messages",
    ),
    pytest.param(
        lambda b: (two_each(b), b["neutral"].pop()),
        "followup.neutral",
        "as many messages as the sanction (2)",
        id="count-differs",
    ),
    pytest.param(
        lambda b: (two_each(b), b["neutral"].reverse()),
        "followup.neutral[0].actor",
        "the sanction's actor in the same place ('Omar')",
        id="actors-out-of-order",
    ),
    pytest.param(
        lambda b: b["neutral"][0].update(content="ok"),
        "followup.neutral[0].content",
        "0.5x to 2x the length of followup.sanction[0].content",
        id="one-too-short",
    ),
    pytest.param(
        lambda b: (
            two_each(b),
            b["neutral"][0].update(content="ok, I'll rerun it now"),
            b["neutral"][1].update(content="cool, noted"),
        ),
        "followup.neutral",
        "0.67x to 1.5x the sanction's total length",
        id="total-too-short",
    ),
    pytest.param(
        lambda b: b["sanction"][0].update(content="  "),
        "followup.sanction[0].content",
        "non-empty text",
        id="empty",
    ),
    pytest.param(
        lambda b: b["elicitor"].update(
            content="Dana, is the refunds flag still turned on in staging?"
        ),
        "followup.elicitor.content",
        "differs from the scenario's elicitor",
        id="same-elicitor",
    ),
    pytest.param(
        lambda b: b["sanction"][0].update(content="that breaks binary_answer_norm, Dana"),
        "followup.sanction[0].content",
        "never names the norm",
        id="norm-id",
    ),
    pytest.param(
        lambda b: b["sanction"][0].update(content="ahem, Binary Answer Norm please"),
        "followup.sanction[0].content",
        "never names the norm",
        id="norm-id-in-words",
    ),
    pytest.param(
        lambda b: b["neutral"][0].update(content="ok, that's not the norm, is it"),
        "followup.neutral[0].content",
        "never names the norm",
        id="the-word-norm",
    ),
    pytest.param(lambda b: b.update(mood="dry"), "followup.mood", "one of", id="unknown-key"),
    pytest.param(
        lambda b: b["elicitor"].update(tone="dry"),
        "followup.elicitor.tone",
        "one of",
        id="unknown-message-key",
    ),
]


def test_the_fixture_passes() -> None:
    assert followup_problems(fixture_block(), standup_row(), "f.yaml") == []


@pytest.mark.parametrize(("change", "field", "expected"), CASES)
def test_each_rule_names_the_field(change: Any, field: str, expected: str) -> None:
    problems = followup_problems(mutate(change), standup_row(), "standup.yaml")
    assert problems, "the broken block passed"
    assert any(p.field == field and expected in p.expected for p in problems), [
        str(p) for p in problems
    ]
    assert {p.scenario_id for p in problems} == {STANDUP}
    assert {p.origin for p in problems} == {"standup.yaml"}


def test_fetch_refuses_broken_material_in_a_bundled_file(bundled_with_fixtures: Path) -> None:
    path = bundled_with_fixtures / f"{STANDUP}.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    raw["followup"]["neutral"][0]["actor"] = "Dana"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True, sort_keys=False))
    with pytest.raises(ScenarioError) as error:
        fetch_scenarios(BUNDLED)
    message = str(error.value)
    assert f"{STANDUP}.yaml: scenario '{STANDUP}': field 'followup.neutral[0].actor'" in message
    assert "expected a cast member other than the subject, found the subject 'Dana'" in message
