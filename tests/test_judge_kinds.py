"""Judge kinds: one registry, a kind added the way docs/judges.md says, and no kind asked
about anywhere else.

The docs' example kind is the code block of "Adding a judge kind", run here as it stands as
a module of its own; registered in this process, it judges, is recorded in provenance and is
judged again by reproduce. The stage scripts are processes of their own, which a registration
here does not reach, so the kind is exercised through the functions they call.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import polars as pl
import pytest
from conftest import rerun_stages, run_layout
from test_judge import responses_table, scenarios_table

from losona.audit.rejudging import determinism
from losona.audit.settings import DeterminismSettings
from losona.core.config import AggregateSettings, JudgeConfig
from losona.core.config.schemas import JUDGE_KINDS, judge_kind_settings
from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.judges.kinds import JudgeKind, judge_kind, register
from losona.judges.run import judge_responses, make_judge
from losona.models import CallOptions
from losona.provenance.record import provenance
from losona.reproduce.checks import check_verdict_origins

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "judges.md"
# Where a judge's kind may be asked: the registry. Beside JudgeConfig, the kinds' settings
# are a table keyed by their names, and nothing more.
REGISTRY = "losona/judges/kinds/"
SETTINGS = "losona/core/config/schemas.py"


def docs_example() -> str:
    """The Python block of docs/judges.md's "Adding a judge kind"."""
    section = DOCS.read_text(encoding="utf-8").split("## Adding a judge kind\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.DOTALL)
    return block


@pytest.fixture
def length_kind(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The docs' example kind, a module registered as the docs say; the registry as it was
    after."""
    settings = dict(JUDGE_KINDS)
    module = ModuleType("length_kind")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # as if imported
    try:
        exec(compile(docs_example(), str(DOCS), "exec"), module.__dict__)
        yield module
    finally:
        JUDGE_KINDS.clear()
        JUDGE_KINDS.update(settings)


# -- the registry ------------------------------------------------------------------------------


def test_every_kind_is_registered_once_with_the_module_of_its_behaviour() -> None:
    assert list(JUDGE_KINDS) == ["lexicon", "llm", "panel"]
    for name, settings in JUDGE_KINDS.items():
        assert settings.behaviour == f"losona.judges.kinds.{name}"
        assert isinstance(judge_kind(name), JudgeKind)
    lexicon = JudgeConfig.from_config({"name": "x", "kind": "lexicon"})
    assert judge_kind(lexicon) is judge_kind("lexicon")


@pytest.mark.slow  # a fresh Python process, to see what checking imports
def test_every_judge_config_is_checked_without_loading_any_judge_code() -> None:
    names = sorted(path.stem for path in (REPO / "conf" / "judge").glob("*.yaml"))
    check = (
        "import sys\n"
        "from losona.core.config import option\n"
        f"print(sorted({{option('judge', name).kind for name in {names!r}}}))\n"
        "print(sorted(m for m in sys.modules if m.startswith('losona.judges')))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", check], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert run.stdout.splitlines() == [str(sorted(JUDGE_KINDS)), "[]"]


def test_an_unknown_kind_is_refused_by_name() -> None:
    with pytest.raises(LosonaError, match=r"unknown judge kind 'oracle': expected one of \["):
        judge_kind("oracle")


def test_a_kind_is_registered_once(length_kind: ModuleType) -> None:
    with pytest.raises(LosonaError, match="a judge kind named 'length' is registered already"):
        register("length", JUDGE_KINDS["length"])
    assert judge_kind("length") is length_kind.KIND


# -- a kind added as the docs say ----------------------------------------------------------------


def test_a_config_may_name_a_registered_kind_and_is_held_to_its_settings(
    length_kind: ModuleType,
) -> None:
    assert JudgeConfig.from_config({"name": "wordy", "kind": "length"}).kind == "length"
    with pytest.raises(LosonaError, match="expected 'lexicon', 'llm', 'panel' or 'length'"):
        JudgeConfig.from_config({"name": "wordy", "kind": "oracle"})
    refused = "'judge.model': expected no such setting: the length judge calls no model"
    with pytest.raises(LosonaError, match=refused):
        JudgeConfig.from_config({"name": "wordy", "kind": "length", "model": {"name": "x"}})
    with pytest.raises(LosonaError, match="only a judge of kind panel has it"):
        JudgeConfig.from_config({"name": "wordy", "kind": "length", "rule": "majority"})


def test_the_added_kind_judges_is_recorded_and_is_judged_again_by_reproduce(
    length_kind: ModuleType, workdir: Path, scenario_row: Callable[..., dict[str, Any]]
) -> None:
    config = {"name": "wordy", "kind": "length"}
    judge = make_judge(config, CallOptions(cache_path=workdir / "calls.sqlite"))
    row = scenario_row()
    scenarios = scenarios_table(row)
    sid = row["scenario_id"]
    responses = responses_table(
        [(sid, 0, "Yes."), (sid, 1, "Yes, it finished at six."), (sid, 2, None)],
        model="m",
    )
    verdicts = judge_responses(
        scenarios, responses, judge, "wordy", model="m", condition="naive", origin="responses"
    )
    assert verdicts["complies"].to_list() == [False, True, None]
    assert verdicts["judge_model"].unique().to_list() == ["length@1"]

    record = provenance(
        scenarios=scenarios,
        dataset={"name": "bundled", "kind": "bundled"},
        sweep={"models": ["m"], "conditions": ["naive"], "judges": ["wordy"]},
        models={"m": {"name": "m", "model": "openai/m"}},
        judges={"wordy": config},
        trials=3,
        bootstrap=AggregateSettings(resamples=10, seed=0, confidence=0.9),
    )
    assert record["judges"]["wordy"] == {
        "name": "wordy",
        "label": "wordy",
        "kind": "length",
        "rules_version": "length@1",
    }

    compared, differences = check_verdict_origins(verdicts, record, "data/verdicts")
    assert (compared, differences) == (2, [])
    layout = run_layout(
        verdicts_dir=str(workdir / "verdicts"), responses_dir=str(workdir / "responses")
    )
    write_parquet(responses, layout.responses("m", "naive"))
    cell = layout.verdicts("wordy", "m", "naive")
    write_parquet(verdicts, cell)
    write_parquet(scenarios, layout.scenarios)
    check = rerun_stages(layout, record, "judge")
    assert check.ok and check.differences == []
    # A verdict changed by hand is named: the kind judged the cell again.
    write_parquet(verdicts.with_columns(complies=pl.lit(True)), cell)
    check = rerun_stages(layout, record, "judge")
    assert [(d.field, d.expected, d.found) for d in check.differences] == [
        ("complies", False, True),
        ("complies", None, True),
    ]

    # Rules never vary: the determinism audit says so rather than judging it again.
    summary, _ = determinism(
        verdicts,
        scenarios,
        ["wordy"],
        DeterminismSettings(repeats=2),
        {"wordy": "length"},
        rejudge=lambda name: pytest.fail("a rules judge was judged again"),
    )
    assert summary["method"].to_list() == ["rules"]


# -- nothing else asks which kind a judge is ------------------------------------------------------


def judge_classes() -> set[str]:
    """The classes that implement a judge: each has a `judge` method and is no Protocol."""
    names = set()
    for path in (REPO / "losona").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.ClassDef)
                and any(isinstance(f, ast.FunctionDef) and f.name == "judge" for f in node.body)
                and not any(ast.unparse(base).endswith("Protocol") for base in node.bases)
            ):
                names.add(node.name)
    return names


def kind_questions(
    source: str, kinds: set[str], classes: set[str], tables: bool = True
) -> list[str]:
    """Each place in `source` that asks which kind a judge is: a comparison with a kind's
    name, a table keyed by kinds' names (unless `tables` is False), an isinstance on a class
    that implements a judge."""
    found = []
    tree = ast.parse(source)
    # A stage's CELL maps dvc.yaml's matrix keys, where `panel` names a list of the sweep.
    cells = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.AnnAssign) and ast.unparse(node.target) == "CELL"
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(s, ast.Constant) and s.value in kinds for s in sides):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Dict) and tables and id(node) not in cells:
            if any(isinstance(k, ast.Constant) and k.value in kinds for k in node.keys):
                found.append(ast.unparse(node))
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) == "isinstance"
            and len(node.args) == 2
            and set(re.findall(r"\w+", ast.unparse(node.args[1]))) & classes
        ):
            found.append(ast.unparse(node))
    return found


@pytest.mark.parametrize(
    "asks",
    [
        'own_words = kind == "llm"',
        "own_words = isinstance(judge, LLMJudge)",
        'if entry.get("kind") == "panel":\n    pass',
        'rated = [j for j in judges if kinds.get(j) != "panel"]',
        'not_called = {"lexicon": "rules", "panel": "panel"}',
        "ok = isinstance(judge, (LexiconJudge, str))",
    ],
)
def test_the_search_finds_a_kind_asked_about(asks: str) -> None:
    assert kind_questions(asks, set(JUDGE_KINDS), judge_classes()) != []


@pytest.mark.parametrize(
    "asks_not",
    [
        'bundled = dataset.kind == "bundled"',  # a dataset's kind
        'if fault.kind == "drop":\n    pass',  # a test server fault's
        # Whether a judge calls a model, whatever its kind (losona/judges/base.py).
        "calls = isinstance(judge, CallingJudge)",
    ],
)
def test_the_search_leaves_other_kinds_alone(asks_not: str) -> None:
    assert kind_questions(asks_not, set(JUDGE_KINDS), judge_classes()) == []


def test_no_module_outside_the_registry_asks_which_kind_a_judge_is() -> None:
    classes = judge_classes()
    assert {"LLMJudge", "LexiconJudge"} <= classes
    found = []
    for path in sorted([*(REPO / "losona").rglob("*.py"), *(REPO / "stages").glob("*.py")]):
        where = path.relative_to(REPO).as_posix()
        if where.startswith(REGISTRY):
            continue
        source = path.read_text(encoding="utf-8")
        questions = kind_questions(source, set(JUDGE_KINDS), classes, tables=where != SETTINGS)
        found += [f"{where}: {q}" for q in questions]
    assert found == []


def test_a_judge_that_calls_no_model_refuses_batch_and_the_registry_names_an_unknown_kind() -> None:
    with pytest.raises(LosonaError, match=r"'judge\.batch': expected false: the lexicon judge"):
        JudgeConfig.from_config({"name": "rules", "kind": "lexicon", "batch": True})
    with pytest.raises(LosonaError, match=r"unknown judge kind 'oracle': expected one of \["):
        judge_kind_settings("oracle")
    # A judge that is not a mapping at all is named as such, not checked field by field.
    with pytest.raises(LosonaError, match="'judge': expected a valid dictionary"):
        JudgeConfig.from_config(["rules"])  # type: ignore[arg-type]
