"""Bad input, everywhere: every stage refuses broken input with one clear message.

Each case copies a small complete run (every stage's inputs and outputs), breaks one
thing, runs one stage as a user would, and checks the contract of a refusal: exit code
2, a message starting `error:` that names the file (and the scenario, item and field
where there is one), no traceback, and not one byte changed on disk, so a failed run
never leaves a half-written output behind. The stage script's own main runs in this
process (`call_stage`), composed as the script composes it; what Hydra refuses before a
stage starts is tested through the script itself (`run_stage`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import BASE_ROW, CONF_DIR, call_stage, run_stage
from test_judge_stage import write_responses

from losona.core.contracts import VERDICT_SCHEMA
from losona.core.files import write_parquet
from losona.generation.tables import CANDIDATE_SCHEMA
from losona.scenarios.datasets import fetch_scenarios

# About a hundred stage runs, on a run built once per module: on one worker (make test's
# --dist loadgroup), so it is built once per test run, not once per worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("bad_input")]

Mutation = Callable[[Path], object]
SID = BASE_ROW["scenario_id"]
# A port nobody listens on: a model pointed here could never answer, and no case gets
# as far as calling it (each fails on its input first).
NOWHERE = "http://127.0.0.1:9/v1"
SERVERLESS_MODEL = [
    "model=gpt_5_5",
    "model.api_key_env=null",
    f"+model.api_base={NOWHERE}",
    "+model.max_attempts=1",
]
SERVERLESS_JUDGE = [
    "judge=gemini_pro",
    "judge.model.api_key_env=null",
    f"+judge.model.api_base={NOWHERE}",
    "+judge.model.max_attempts=1",
]
QUICK_BOOTSTRAP = "aggregate.resamples=50"
PARAMS = """\
dataset: bundled
sweep:
  models: [smollm2]
  conditions: [naive, elicitor_only]
  judges: [lexicon]
"""


# -- a complete small run, built once ---------------------------------------------------


def _stage(name: str, *overrides: str, cwd: Path) -> None:
    result = call_stage(name, *overrides, cwd=cwd)
    assert result.returncode == 0, f"{name}: {result.stderr}"


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every stage's outputs for the bundled set, one model, two conditions, the lexicon judge.

    Responses are written directly (no model runs); a labelling sheet and its key are
    exported, so the human-label cases have a key to label against.
    """
    root = tmp_path_factory.mktemp("complete") / "run"
    root.mkdir()
    (root / "conf").symlink_to(CONF_DIR)
    (root / "params.yaml").write_text(PARAMS, encoding="utf-8")
    write_parquet(
        fetch_scenarios({"name": "bundled", "kind": "bundled"}), root / "data" / "scenarios.parquet"
    )
    for condition in ("naive", "elicitor_only"):
        write_responses(root, condition=condition)
    _stage("render", cwd=root)
    for condition in ("naive", "elicitor_only"):
        _stage("judge", f"condition={condition}", cwd=root)
    _stage("judge_controls", cwd=root)
    _stage("aggregate", QUICK_BOOTSTRAP, cwd=root)
    _stage("audit", "audit.export=true", "audit.sheet.items=30", cwd=root)
    _stage("audit", QUICK_BOOTSTRAP, cwd=root)
    _stage("plot", cwd=root)
    return root


@pytest.fixture
def run(complete_run: Path, tmp_path: Path) -> Path:
    """A private copy of the complete run to break."""
    copy = tmp_path / "run"
    shutil.copytree(complete_run, copy, symlinks=True)
    return copy


def snapshot(root: Path) -> dict[str, str]:
    """Every file under `root` (not following the conf/ link) and the hash of its bytes."""
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            # SQLite's own sidecar files of an open database, not outputs of ours.
            if not path.is_symlink() and not name.endswith(("-wal", "-shm")):
                files[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def refused(root: Path, stage: str, *overrides: str) -> str:
    """Run `stage` in `root`; assert a clean refusal that changed nothing; return stderr."""
    before = snapshot(root)
    result = call_stage(stage, *overrides, cwd=root)
    stderr = result.stderr
    assert "Traceback" not in stderr, stderr
    assert result.returncode == 2, f"exit {result.returncode}: {stderr}"
    assert stderr.startswith("error: "), stderr
    # One message, not a dump of the input (the 10 MB message must not come back).
    assert len(stderr) < 4000, stderr[:4000]
    assert snapshot(root) == before, "a refused run changed files on disk"
    return stderr


def assert_names(message: str, *fragments: str) -> None:
    """Every fragment (file, scenario, field, expectation) appears in the message."""
    missing = [f for f in fragments if f not in message]
    assert not missing, f"{missing} not in:\n{message}"


# -- broken scenario files (fetch) ------------------------------------------------------


def row(**changes: Any) -> dict[str, Any]:
    return {**json.loads(json.dumps(BASE_ROW)), **changes}


def turns(*changes: dict[str, Any]) -> list[dict[str, Any]]:
    """The base turns with each given mapping merged into the turn at the same position."""
    return [{**turn, **change} for turn, change in zip(BASE_ROW["turns"], changes, strict=False)]


def jsonl(*rows: dict[str, Any]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def parquet(*rows: dict[str, Any]) -> Callable[[Path], object]:
    return lambda path: pl.DataFrame(list(rows)).write_parquet(path)


def cut_parquet(path: Path) -> None:
    pl.DataFrame([row()]).write_parquet(path)
    path.write_bytes(path.read_bytes()[:300])


WHERE = f"s.jsonl:1: scenario '{SID}'"
SCENARIO_FILES: list[Any] = [
    pytest.param(
        jsonl(row(), row()),
        [
            f"s.jsonl:2: scenario '{SID}'",
            "'scenario_id'",
            "a duplicate of the scenario in s.jsonl:1",
        ],
        id="duplicate-id",
    ),
    pytest.param(
        jsonl(row(norm_id="be_nice_norm")),
        [WHERE, "'norm_id'", "from the catalog"],
        id="unknown-norm",
    ),
    pytest.param(
        jsonl(row(event_type="party")),
        [WHERE, "'event_type'", "from the catalog"],
        id="unknown-event",
    ),
    pytest.param(jsonl(row(turns=[])), [WHERE, "'turns'", "non-empty list"], id="no-turns"),
    pytest.param(
        jsonl(row(turns=turns({}, {"index": 1}))),
        [WHERE, "'turns[1].index'", "greater than 1"],
        id="turns-out-of-order",
    ),
    pytest.param(
        jsonl(row(elicitor_actor="Noor")),
        [WHERE, "'elicitor_actor'", "the subject"],
        id="subject-elicits",
    ),
    pytest.param(
        jsonl(row(elicitor_actor="Zed")),
        [WHERE, "'elicitor_actor'", "a member of the cast"],
        id="stranger-elicits",
    ),
    pytest.param(
        jsonl(row(turns=turns({}, {"is_demo": False}))),
        [WHERE, "'turns'", "at least one demonstration turn"],
        id="no-demonstration",
    ),
    pytest.param(
        jsonl(row(elicitor_content="Remember: " + BASE_ROW["norm_statement"])),
        [WHERE, "'elicitor_content'", "the norm statement written out"],
        id="norm-stated-in-chat",
    ),
    pytest.param(
        jsonl(row(norm_statement=None)),
        [WHERE, "'norm_statement'", "non-empty text"],
        id="judge-field-missing",
    ),
    pytest.param(
        jsonl(row(elicitor_index="4", cast="Ana, Bo", turns=turns({"is_demo": "yes"}))),
        [WHERE, "'elicitor_index'", "'cast'", "'turns[0].is_demo'", "true or false"],
        id="wrong-types",
    ),
    pytest.param(
        jsonl(row(elicitor_index=2**40)),
        [WHERE, "'elicitor_index'", "2147483647"],
        id="index-beyond-int32",
    ),
    pytest.param(
        jsonl(row()).replace(b'"Yes."', b'"Yes.\\ud800"', 1),
        [WHERE, "'turns[1].content'", "valid Unicode text", "lone surrogate"],
        id="lone-surrogate",
    ),
    pytest.param(
        jsonl(row(elicitor_content="a" * 10_000_000)),
        [WHERE, "'elicitor_content'", "at most 20000 characters", "10000000 characters"],
        id="10-MB-message",
    ),
    pytest.param(
        jsonl(row()).replace(b"Morning", b"Ma\xf1ana"), ["s.jsonl: not UTF-8 text"], id="non-utf8"
    ),
    pytest.param(b"{not json\n", ["s.jsonl:1:", "invalid JSON"], id="invalid-json"),
    pytest.param(
        b"[" * 100_000 + b"]" * 100_000 + b"\n", ["s.jsonl:1:", "nested too deeply"], id="deep-json"
    ),
    pytest.param(b"", ["s.jsonl: no scenarios in the file"], id="empty-file"),
    pytest.param(
        jsonl(row(mood="sunny")), [WHERE, "'mood'", "an unknown field"], id="unknown-field"
    ),
]


@pytest.mark.parametrize(("content", "fragments"), SCENARIO_FILES)
def test_fetch_refuses_a_broken_scenario_file(
    run: Path, content: bytes, fragments: list[str]
) -> None:
    (run / "s.jsonl").write_bytes(content)
    message = refused(run, "fetch", "dataset=local", "dataset.path=s.jsonl")
    assert_names(message, *fragments)


@pytest.mark.parametrize(
    ("write", "fragments"),
    [
        (cut_parquet, ["s.parquet: cannot be read as Parquet"]),
        (parquet(row(cast=7)), [f"s.parquet:row 1: scenario '{SID}'", "'cast'"]),
        (lambda path: path.write_bytes(b""), ["s.parquet: cannot be read as Parquet"]),
    ],
    ids=["truncated", "wrong-column-type", "zero-bytes"],
)
def test_fetch_refuses_a_broken_parquet_file(
    run: Path, write: Mutation, fragments: list[str]
) -> None:
    write(run / "s.parquet")
    message = refused(run, "fetch", "dataset=local", "dataset.path=s.parquet")
    assert_names(message, *fragments)


def release_row(**changes: Any) -> dict[str, Any]:
    """A row as the Hub release would hold it (the contract without our own columns)."""
    return {k: v for k, v in row(**changes).items() if k != "end_goal"}


@pytest.mark.parametrize(
    ("write", "overrides", "fragments"),
    [
        (cut_parquet, [], ["x.parquet: cannot be read as parquet data"]),
        (parquet(release_row(turns=5)), [], ["x.parquet:row 1", "'turns'", "non-empty list"]),
        (
            parquet(release_row(turns=["a", "b"])),
            ["dataset.elicitor_is_last_turn=true"],
            [SID, "the last turn is the elicitor", "losona_hf.yaml", "must be a mapping"],
        ),
    ],
    ids=["truncated", "turns-not-a-list", "elicitor-turn-not-a-mapping"],
)
def test_fetch_refuses_a_broken_hub_snapshot(
    run: Path, write: Mutation, overrides: list[str], fragments: list[str]
) -> None:
    (run / "snapshot" / "data").mkdir(parents=True)
    write(run / "snapshot" / "data" / "x.parquet")
    message = refused(run, "fetch", "dataset=losona_hf", "dataset.local_dir=snapshot", *overrides)
    assert_names(message, *fragments)


# A value given on the command line is named there; the file of its option otherwise.
LIMIT = ["the command line (dataset.limit=", "'dataset.limit'", "a positive whole number"]


@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        (["dataset.limit=0"], [*LIMIT, "found 0"]),
        (["dataset.limit=-3"], [*LIMIT, "found -3"]),
        (["dataset.limit=five"], [*LIMIT, "found 'five'"]),
        (["dataset.limit=2.5"], [*LIMIT, "found 2.5"]),
        (["dataset.limit=nan"], [*LIMIT, "found nan"]),
        (["dataset.limit=true"], [*LIMIT, "found True"]),
        (
            ["dataset.limit=1000"],
            [
                "the command line (dataset.limit=...): 'dataset.limit': 1000 is more than the 44 "
                "scenarios of dataset 'bundled'; set a smaller limit, or null for every scenario"
            ],
        ),
        (
            ["dataset.limit_seed=x"],
            [
                "the command line (dataset.limit_seed=...)",
                "'dataset.limit_seed'",
                "an integer",
                "found 'x'",
            ],
        ),
        (
            ["dataset.scenario_ids=[no_such_scenario]"],
            [
                "the command line (dataset.scenario_ids=...)",
                "'dataset.scenario_ids'",
                "not in the dataset",
                "no_such",
            ],
        ),
        (
            [f"dataset.scenario_ids=[{SID},{SID}]"],
            [
                "the command line (dataset.scenario_ids=",
                "'dataset.scenario_ids'",
                "listed twice",
                SID,
            ],
        ),
        (
            ["dataset.scenario_ids=just_one"],
            [
                "(dataset.scenario_ids=...)",
                "'dataset.scenario_ids'",
                "a list of ids",
                "just_one",
            ],
        ),
        (
            ["dataset=local", "dataset.path=s.jsonl", "dataset.scenario_ids=[other]"],
            ["the command line (dataset.scenario_ids=...)", "not in the dataset", "'other'"],
        ),
    ],
    ids=[
        "limit-zero",
        "limit-negative",
        "limit-not-a-number",
        "limit-fractional",
        "limit-nan",
        "limit-boolean",
        "limit-past-the-dataset",
        "seed-not-an-integer",
        "unknown-id",
        "id-twice",
        "ids-not-a-list",
        "unknown-id-in-a-local-file",
    ],
)
def test_fetch_refuses_a_bad_subset(run: Path, overrides: list[str], fragments: list[str]) -> None:
    # fetch's output is already there: a refused subset must leave it as it was.
    (run / "s.jsonl").write_bytes(jsonl(row()))
    assert_names(refused(run, "fetch", *overrides), *fragments)


# -- broken stage inputs ----------------------------------------------------------------


def cut(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def latin1(path: Path) -> None:
    path.write_bytes(path.read_bytes() + "café\n".encode("latin-1"))


def drop_column(column: str) -> Mutation:
    return lambda path: pl.read_parquet(path).drop(column).write_parquet(path)


def write_bytes(data: bytes) -> Mutation:
    return lambda path: path.write_bytes(data)


VERDICTS = "data/verdicts/lexicon/smollm2/naive.parquet"


@pytest.mark.parametrize(
    ("stage", "overrides", "target", "mutate", "fragments"),
    [
        ("render", [], "data/scenarios.parquet", cut, ["cannot be read as Parquet", "rerun fetch"]),
        ("render", [], "data/scenarios.parquet", drop_column("venue"), ["expected the columns"]),
        (
            "sample",
            ["condition=naive", *SERVERLESS_MODEL],
            "data/prompts.parquet",
            cut,
            ["data/prompts.parquet", "rerun render"],
        ),
        (
            "judge",
            ["condition=naive"],
            "data/responses/smollm2/naive.parquet",
            cut,
            ["naive.parquet", "rerun sample"],
        ),
        (
            "judge",
            ["condition=naive"],
            "data/responses/smollm2/naive.parquet",
            drop_column("trial"),
            ["naive.parquet", "expected the columns"],
        ),
        (
            "judge_controls",
            [],
            "data/scenarios.parquet",
            latin1,
            ["data/scenarios.parquet", "rerun fetch"],
        ),
        ("aggregate", [QUICK_BOOTSTRAP], VERDICTS, cut, [VERDICTS, "rerun judge"]),
        (
            "aggregate",
            [QUICK_BOOTSTRAP],
            VERDICTS,
            write_bytes(b""),
            [VERDICTS, "cannot be read as Parquet"],
        ),
        (
            "aggregate",
            [QUICK_BOOTSTRAP],
            VERDICTS,
            drop_column("complies"),
            [VERDICTS, "expected the columns"],
        ),
        (
            "aggregate",
            [QUICK_BOOTSTRAP],
            VERDICTS,
            lambda p: pl.read_parquet(p).with_columns(scenario_id=pl.lit("ghost")).write_parquet(p),
            [
                "judge 'lexicon', model 'smollm2', condition 'naive'",
                "scenario 'ghost'",
                "not in the scenario table",
            ],
        ),
        (
            "audit",
            [QUICK_BOOTSTRAP],
            "reports/results.csv",
            latin1,
            ["reports/results.csv: not UTF-8 text", "rerun aggregate"],
        ),
        (
            "audit",
            [QUICK_BOOTSTRAP],
            "reports/results.csv",
            cut,
            ["reports/results.csv", "cut short"],
        ),
        (
            "audit",
            [QUICK_BOOTSTRAP],
            "reports/deltas.csv",
            write_bytes(b""),
            ["reports/deltas.csv: expected the columns"],
        ),
        (
            "audit",
            [QUICK_BOOTSTRAP],
            "data/judge_controls/lexicon.parquet",
            cut,
            ["lexicon.parquet", "rerun judge_controls"],
        ),
        (
            "plot",
            [],
            "reports/metrics.json",
            write_bytes(b"{not json"),
            ["reports/metrics.json: not JSON"],
        ),
        (
            "plot",
            [],
            "reports/metrics.json",
            write_bytes(b"[1, 2]"),
            ["reports/metrics.json: expected a JSON object"],
        ),
        (
            "plot",
            [],
            "reports/table1.md",
            write_bytes(b"\xff\xfe"),
            ["reports/table1.md: not UTF-8 text"],
        ),
        (
            "plot",
            [],
            "reports/audit/controls.csv",
            cut,
            ["reports/audit/controls.csv", "cut short", "rerun audit"],
        ),
        (
            "plot",
            [],
            "reports/audit/metrics.json",
            write_bytes(b"{}"),
            ["reports/audit/metrics.json: expected the keys"],
        ),
        (
            "curate",
            [],
            "data/generation/screened.parquet",
            write_bytes(b"PAR1"),
            ["screened.parquet", "rerun screen"],
        ),
    ],
)
def test_a_stage_refuses_a_broken_input_file(
    run: Path,
    stage: str,
    overrides: list[str],
    target: str,
    mutate: Mutation,
    fragments: list[str],
) -> None:
    path = run / target
    path.parent.mkdir(parents=True, exist_ok=True)
    mutate(path)
    assert_names(refused(run, stage, *overrides), *fragments)


def screened_run(run: Path) -> None:
    """What curate reads from generate and screen: no candidates, valid summaries, no ids."""
    generation = run / "data" / "generation"
    generation.mkdir(parents=True)
    write_parquet(pl.DataFrame(schema=CANDIDATE_SCHEMA), generation / "screened.parquet")
    write_parquet(pl.DataFrame(schema=VERDICT_SCHEMA), generation / "screen_verdicts.parquet")
    summaries = run / "reports" / "generation"
    summaries.mkdir(parents=True)
    for name in ("generate.json", "screen.json"):
        (summaries / name).write_text("{}\n", encoding="utf-8")
    (run / "generation").mkdir()
    (run / "generation" / "accept.txt").write_text("", encoding="utf-8")


@pytest.mark.parametrize(
    ("target", "content", "fragments"),
    [
        (
            "reports/generation/generate.json",
            b"{not json",
            ["reports/generation/generate.json: not JSON", "rerun generate"],
        ),
        (
            "reports/generation/screen.json",
            b"[1, 2]",
            ["reports/generation/screen.json: expected a JSON object", "rerun screen"],
        ),
        (
            "reports/generation/screen.json",
            b"\xff\xfe",
            ["reports/generation/screen.json: not UTF-8 text", "rerun screen"],
        ),
        (
            "data/generated/losona-generated-v1.provenance.json",
            b"{",
            ["losona-generated-v1.provenance.json: not JSON", "delete it and rerun curate"],
        ),
    ],
    ids=["corrupt-generate-summary", "screen-summary-not-an-object", "non-utf8", "corrupt-sidecar"],
)
def test_curate_refuses_a_broken_summary(
    run: Path, target: str, content: bytes, fragments: list[str]
) -> None:
    screened_run(run)
    assert call_stage("curate", cwd=run).returncode == 0  # the run is good until broken
    path = run / target
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    assert_names(refused(run, "curate"), *fragments)


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (b"sweep: [\n", ["params.yaml: invalid YAML"]),
        (b"dataset: bundled\n", ["params.yaml: missing key 'sweep.conditions'"]),
        (b"\xff\xfe", ["params.yaml: not UTF-8 text"]),
    ],
    ids=["invalid-yaml", "no-sweep", "non-utf8"],
)
def test_a_broken_params_file_is_refused(run: Path, content: bytes, fragments: list[str]) -> None:
    (run / "params.yaml").write_bytes(content)
    assert_names(refused(run, "render"), *fragments)


# -- broken configs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stage", "overrides", "fragments"),
    [
        (
            "sample",
            ["condition=naive", "sampling.trials=-1"],
            ["the command line (sampling.trials=...)", "'sampling.trials'", "at least 1", "-1"],
        ),
        (
            "sample",
            ["condition=naive", "~model.model"],
            ["the command line (~model.model)", "'model.model'", "non-empty text"],
        ),
        (
            "sample",
            ["condition=naive", *SERVERLESS_MODEL, "model.concurrency=0"],
            [
                "(model.concurrency=...)",
                "'model.concurrency'",
                "an integer of at least 1",
                "found 0",
            ],
        ),
        (
            "sample",
            ["condition=naive", "sampling.max_cost_usd=-1"],
            ["sampling.max_cost_usd", "-1"],
        ),
        ("sample", [], ["sample needs one condition"]),
        (
            "judge",
            ["condition=naive", "judge=gemini_pro", "~judge.model.model"],
            ["the command line (~judge.model.model)", "'judge.model.model'", "non-empty text"],
        ),
        (
            "judge",
            ["condition=naive", "judge.kind=magic"],
            ["(judge.kind=...)", "'judge.kind'", "'lexicon', 'llm' or 'panel'", "found 'magic'"],
        ),
        (
            "judge",
            ["condition=naive", "judge.name=other"],
            ["(judge.name=...)", "'judge.name'", "the file's name 'lexicon'", "found 'other'"],
        ),
        ("render", ["sweep.conditions=[naive,sarcastic]"], ["condition/sarcastic", "available"]),
        ("aggregate", ["aggregate.resamples=0"], ["'aggregate.resamples'", "at least 1"]),
        ("aggregate", ["aggregate.confidence=2"], ["aggregate.confidence", "between 0 and 1"]),
        ("audit", ["audit.determinism.repeats=-1"], ["audit.determinism.repeats", "-1"]),
        (
            "audit",
            ["audit.export=true", "audit.sheet.items=0"],
            ["audit.sheet.items", "at least 1"],
        ),
        ("generate", ["generate.candidates_per_cell=-1"], ["generate.candidates_per_cell", "-1"]),
        ("generate", ["generate.generator=nope"], ["model/nope", "available"]),
        ("screen", ["screen.trials=-2"], ["screen.trials", "-2"]),
    ],
)
def test_a_broken_config_is_refused(
    run: Path, stage: str, overrides: list[str], fragments: list[str]
) -> None:
    assert_names(refused(run, stage, *overrides), *fragments)


# One bad value in each config group, each refused before any work in the one format:
# `<file or command-line override>: '<dotted.key>': expected <what>, found <value>`.
# NaN and infinity above all: NaN compares false with everything, so a NaN cost cap would
# pass a `< 0` check and then never trip.
ONE_FORMAT = re.compile(r"^error: (?P<where>.+?): '(?P<key>[\w.]+)': expected .+, found .+$")
GROUP_CASES = [
    ("dataset", "fetch", ["dataset.kind=ftp"], "found 'ftp'"),
    ("model", "sample", ["condition=naive", "model.timeout_s=inf"], "found inf"),
    ("judge", "judge", ["condition=naive", *SERVERLESS_JUDGE, "judge.max_cost_usd=nan"], "nan"),
    ("condition", "sample", ["condition=naive", "+condition.prefix=polite"], "unknown setting"),
    ("sampling", "sample", ["condition=naive", "sampling.max_cost_usd=nan"], "found nan"),
    ("sampling", "sample", ["condition=naive", "sampling.max_cost_usd=inf"], "found inf"),
    # YAML's spelling of NaN is text on Hydra's command line: refused all the same.
    ("sampling", "sample", ["condition=naive", "sampling.max_cost_usd=.nan"], "found '.nan'"),
    ("aggregate", "aggregate", [QUICK_BOOTSTRAP, "aggregate.confidence=nan"], "found nan"),
    ("audit", "audit", [QUICK_BOOTSTRAP, "audit.determinism.items=inf"], "found inf"),
    ("generation", "generate", ["generate.max_cost_usd=nan"], "found nan"),
    ("generation", "screen", ["screen.max_cost_usd=-inf"], "found -inf"),
    ("paths", "curate", ["paths.generated_dir=null"], "found None"),
]


@pytest.mark.parametrize(
    ("group", "stage", "overrides", "found"),
    GROUP_CASES,
    ids=[f"{group}-{overrides[-1]}" for group, _, overrides, _ in GROUP_CASES],
)
def test_a_bad_value_in_each_config_group_is_refused_in_one_format(
    run: Path, group: str, stage: str, overrides: list[str], found: str
) -> None:
    message = refused(run, stage, *overrides)
    match = ONE_FORMAT.match(message.strip())
    assert match, message
    override = overrides[-1]
    # The override is named by its key: its value may be a secret, and `found` shows it.
    assert match["where"] == f"the command line ({override.split('=')[0]}=...)"
    assert match["key"] == override.split("=")[0].lstrip("+")
    assert found in message


def test_a_bad_value_in_a_config_file_names_the_file(run: Path) -> None:
    folder = run / "my_conf" / "model"
    folder.mkdir(parents=True)
    smollm2 = (CONF_DIR / "model" / "smollm2.yaml").read_text(encoding="utf-8")
    assert "timeout_s: 600" in smollm2
    broken = smollm2.replace("name: smollm2", "name: broken").replace("600", ".nan")
    (folder / "broken.yaml").write_text(broken, encoding="utf-8")
    message = refused(
        run,
        "sample",
        f"hydra.searchpath=[file://{run / 'my_conf'}]",
        "model=broken",
        "condition=naive",
    )
    assert message.strip() == (
        "error: my_conf/model/broken.yaml: 'model.timeout_s': expected a finite number above 0, "
        "found nan"
    )


def test_an_api_key_in_a_config_is_refused_and_never_echoed(run: Path) -> None:
    secret = "sk-this-must-never-be-printed"
    message = refused(
        run, "sample", "condition=naive", *SERVERLESS_MODEL, f"+model.api_key={secret}"
    )
    assert_names(message, "never put an API key in a config", "api_key_env")
    assert secret not in message


UNKNOWN_OPTIONS = [
    ("sample", ["model=nope", "condition=naive"], "model/nope"),
    ("judge", ["judge=nope", "condition=naive"], "judge/nope"),
    ("render", ["condition=nope"], "condition/nope"),
    ("aggregate", ["aggregate.resampels=5"], "aggregate.resampels"),
]


@pytest.mark.parametrize(("stage", "overrides", "named"), UNKNOWN_OPTIONS)
def test_an_unknown_option_is_named_by_hydra_and_exits_2(
    run: Path, stage: str, overrides: list[str], named: str
) -> None:
    # Hydra's own message (it lists the options there are), then the user-error exit code.
    before = snapshot(run)
    result = run_stage(stage, *overrides, cwd=run)
    assert result.returncode == 2
    assert named in result.stderr and "Traceback" not in result.stderr
    assert snapshot(run) == before


# -- a broken call cache ----------------------------------------------------------------


def sqlite_file(*statements: str) -> Mutation:
    """A well-formed SQLite file in WAL mode (as every call cache is) that is not our cache."""

    def write(path: Path) -> None:
        db = sqlite3.connect(path)
        for statement in ("PRAGMA journal_mode=WAL", *statements):
            db.execute(statement)
        db.commit()
        db.close()

    return write


@pytest.mark.parametrize(
    ("damage", "fragments"),
    [
        (write_bytes(b"not a database " * 400), ["the call cache cannot be used", "mv "]),
        (write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000), ["the call cache cannot be used"]),
        (sqlite_file("CREATE TABLE calls (x)", "PRAGMA user_version=1"), ["cannot be used"]),
        (sqlite_file("PRAGMA user_version=99"), ["a call cache of format 99"]),
        (lambda path: path.mkdir(), ["the call cache cannot be used"]),
    ],
    ids=["not-sqlite", "garbage-after-header", "foreign-table", "other-format", "a-folder"],
)
def test_a_damaged_call_cache_is_refused_and_left_as_it_was(
    run: Path, damage: Mutation, fragments: list[str]
) -> None:
    cache = run / "calls.sqlite"
    damage(cache)
    message = refused(
        run, "sample", "condition=naive", *SERVERLESS_MODEL, f"paths.call_cache={cache}"
    )
    assert_names(message, str(cache), *fragments)


def test_an_llm_judge_refuses_a_damaged_call_cache(run: Path) -> None:
    cache = run / "calls.sqlite"
    cache.write_bytes(b"not a database " * 400)
    message = refused(
        run, "judge", "condition=naive", *SERVERLESS_JUDGE, f"paths.call_cache={cache}"
    )
    assert_names(message, str(cache), "the call cache cannot be used")


def test_a_call_cache_under_a_file_is_refused(run: Path) -> None:
    message = refused(
        run,
        "sample",
        "condition=naive",
        *SERVERLESS_MODEL,
        "paths.call_cache=params.yaml/calls.sqlite",
    )
    assert_names(message, "params.yaml/calls.sqlite")


# -- broken human labels (audit) --------------------------------------------------------

KEY = "data/labels/sheet_key.csv"
LABELS = "data/labels/human.csv"


def key_items(run: Path) -> list[str]:
    return pl.read_csv(run / KEY)["item_id"].to_list()


def labels_csv(items: list[str], value: str = "true") -> str:
    return "item_id,complies\n" + "".join(f"{item},{value}\n" for item in items)


@pytest.mark.parametrize(
    ("write", "fragments"),
    [
        (
            lambda run, items: labels_csv(items[:-1]),
            [LABELS, "1 of the sheet's 30 items have no label"],
        ),
        (
            lambda run, items: labels_csv([*items, items[0]]),
            [LABELS, "line 32", "item '{first}'", "labelled twice"],
        ),
        (
            lambda run, items: labels_csv(items, "maybe"),
            [LABELS, "line 2", "field 'complies'", "true or false", "'maybe'"],
        ),
        (
            lambda run, items: labels_csv(["r0000000000", *items]),
            [LABELS, "line 2", "'r0000000000' is not on the sheet"],
        ),
        (
            lambda run, items: "item_id,label\n",
            [LABELS, "expected the columns item_id and complies"],
        ),
        (
            lambda run, items: labels_csv(items).encode("utf-8") + "nè\n".encode("latin-1"),
            [LABELS, "not UTF-8 text"],
        ),
    ],
    ids=[
        "unlabelled-item",
        "duplicate-item",
        "not-true-or-false",
        "unknown-item",
        "no-complies-column",
        "non-utf8",
    ],
)
def test_broken_human_labels_are_refused_naming_file_line_and_item(
    run: Path, write: Callable[[Path, list[str]], str | bytes], fragments: list[str]
) -> None:
    items = key_items(run)
    content = write(run, items)
    path = run / LABELS
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    named = [f.replace("{first}", items[0]) for f in fragments]
    assert_names(refused(run, "audit", QUICK_BOOTSTRAP), *named)


@pytest.mark.parametrize(
    ("mutate", "fragments"),
    [
        (lambda path: path.unlink(), ["holds labels, but there is no sheet key", KEY]),
        (write_bytes(b"\xff\xfegarbage\n"), [KEY, "not UTF-8 text", "audit.export=true"]),
        (write_bytes(b"item_id,scenario\nr1,x\n"), [KEY, "expected the columns"]),
        (cut, [KEY, "cut short"]),
    ],
    ids=["missing", "non-utf8", "wrong-columns", "cut-short"],
)
def test_a_broken_sheet_key_is_refused(run: Path, mutate: Mutation, fragments: list[str]) -> None:
    (run / LABELS).write_text(labels_csv(key_items(run)), encoding="utf-8")
    mutate(run / KEY)
    assert_names(refused(run, "audit", QUICK_BOOTSTRAP), *fragments)


def test_the_complete_run_itself_is_accepted(run: Path) -> None:
    """The cases above fail because of what they break, not because the run was broken."""
    (run / LABELS).write_text(labels_csv(key_items(run)), encoding="utf-8")
    result = call_stage("audit", QUICK_BOOTSTRAP, cwd=run)
    assert result.returncode == 0, result.stderr
    agreement = pl.read_csv(run / "reports" / "audit" / "human_agreement.csv")
    assert agreement.height >= 1


# -- the dynamic extension (docs/dynamic.md) --------------------------------------------

BLOCK = {
    "sanction": [{"actor": "Ana", "content": "ok, that's a whole essay"}],
    "neutral": [{"actor": "Ana", "content": "ok, thanks for the update"}],
    "elicitor": {"actor": "Bo", "content": "Noor, is the backup done too?"},
}


def block(**changes: Any) -> dict[str, Any]:
    """The follow-up block of the base row, with parts replaced."""
    return {**json.loads(json.dumps(BLOCK)), **changes}


@pytest.mark.parametrize(
    ("followup", "fragments"),
    [
        (
            block(neutral=[{"actor": "Noor", "content": "ok, thanks for the update"}]),
            ["'followup.neutral[0].actor'", "other than the subject", "the subject 'Noor'"],
        ),
        (
            block(neutral=[{"actor": "Ana", "content": "ok"}]),
            ["'followup.neutral[0].content'", "0.5x to 2x the length", "2 characters"],
        ),
        (
            block(elicitor={"actor": "Bo", "content": "the norm here is yes or no, Noor"}),
            ["'followup.elicitor.content'", "never names the norm", "the word 'norm'"],
        ),
        (
            block(sanction=[]),
            ["'followup.sanction'", "a list of 1 or 2 messages"],
        ),
    ],
    ids=["subject-speaks", "neutral-too-short", "names-the-norm", "no-sanction"],
)
def test_fetch_refuses_broken_follow_up_material(
    run: Path, followup: dict[str, Any], fragments: list[str]
) -> None:
    (run / "s.jsonl").write_bytes(jsonl(row(followup=followup)))
    message = refused(run, "fetch", "dataset=local", "dataset.path=s.jsonl")
    assert_names(message, WHERE, *fragments)


CELL = ["judge=lexicon", "model=smollm2", "condition=naive"]


def dynamic_cell(run: Path) -> None:
    """The dynamic files of the run's naive cell, written as its stages would (no model)."""
    from conftest import stand_in_followup

    from losona.core.contracts import table
    from losona.dynamic.judge import judge_second_turn
    from losona.dynamic.render import render_cell
    from losona.dynamic.tables import DYNAMIC_RESPONSE_SCHEMA
    from losona.judges.lexicon import LexiconJudge
    from losona.scenarios.followups import Followup

    scenarios = pl.read_parquet(run / "data" / "scenarios.parquet")
    stand_ins = {}
    for scenario in scenarios.iter_rows(named=True):
        raw = stand_in_followup(scenario["cast"], scenario["elicitor_actor"])
        stand_ins[scenario["scenario_id"]] = Followup.of(raw, "stand-in")
    prompts = render_cell(
        scenarios,
        pl.read_parquet(run / VERDICTS),
        judge="lexicon",
        model="smollm2",
        condition="naive",
        followups=stand_ins,
    ).prompts
    sent = prompts.filter(pl.col("status") == "ok")
    responses = table(
        [
            r
            | {"provider_model": "x", "response": "Yes.", "finish_reason": "stop"}
            | {"prompt_tokens": 1, "completion_tokens": 1, "cost_usd": 0.0}
            for r in sent.select(
                "scenario_id",
                "condition",
                "subject_model",
                "judge",
                "trial",
                "arm",
                "prompt_sha256",
            ).iter_rows(named=True)
        ],
        DYNAMIC_RESPONSE_SCHEMA,
        sort_by=["scenario_id", "trial", "arm"],
    )
    verdicts = judge_second_turn(
        scenarios, prompts, responses, LexiconJudge(), "lexicon", origin=""
    )
    root = run / "data" / "dynamic" / "lexicon"
    for name, df in (("prompts", prompts), ("responses", responses), ("verdicts", verdicts)):
        write_parquet(df, root / name / "smollm2" / "naive.parquet")


def test_scripted_follow_ups_missing_from_a_dataset_stop_dynamic_render_naming_them(
    run: Path,
) -> None:
    # A user's own dataset, without any follow-up material: its scenario table and its
    # first turn are fine, the scripted second turn cannot be written.
    (run / "s.jsonl").write_bytes(jsonl(row()))
    assert call_stage("fetch", "dataset=local", "dataset.path=s.jsonl", cwd=run).returncode == 0
    write_responses(run, condition="naive")
    assert call_stage("judge", "condition=naive", cwd=run).returncode == 0
    message = refused(run, "dynamic_render", *CELL, "dataset=local", "dataset.path=s.jsonl")
    assert_names(
        message,
        "dynamic.source=scripted needs every scenario's follow-up material",
        "1 of 1 scenarios have none",
        f"'{SID}'",
        "dynamic.source=simulated",
    )


@pytest.mark.parametrize(
    ("stage", "overrides", "target", "mutate", "fragments"),
    [
        ("dynamic_render", CELL, VERDICTS, cut, [VERDICTS, "rerun judge"]),
        (
            "dynamic_sample",
            [*CELL[:1], *SERVERLESS_MODEL, "condition=naive"],
            "data/dynamic/lexicon/prompts/gpt_5_5/naive.parquet",
            write_bytes(b"PAR1"),
            ["data/dynamic/lexicon/prompts/gpt_5_5/naive.parquet", "rerun dynamic_render"],
        ),
        (
            "dynamic_judge",
            CELL,
            "data/dynamic/lexicon/responses/smollm2/naive.parquet",
            drop_column("arm"),
            ["responses/smollm2/naive.parquet", "expected the columns"],
        ),
        (
            "dynamic_aggregate",
            [
                "judge=lexicon",
                "dynamic.judges=[lexicon]",
                "dynamic.conditions=[naive]",
                QUICK_BOOTSTRAP,
            ],
            "data/dynamic/lexicon/verdicts/smollm2/naive.parquet",
            cut,
            ["verdicts/smollm2/naive.parquet", "rerun dynamic_judge"],
        ),
    ],
    ids=["render-verdicts-cut", "sample-prompts-broken", "judge-responses-column", "aggregate-cut"],
)
def test_a_dynamic_stage_refuses_a_broken_input_file(
    run: Path,
    stage: str,
    overrides: list[str],
    target: str,
    mutate: Mutation,
    fragments: list[str],
) -> None:
    dynamic_cell(run)
    path = run / target
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        shutil.copy(run / "data/dynamic/lexicon/prompts/smollm2/naive.parquet", path)
    mutate(path)
    assert_names(refused(run, stage, *overrides), *fragments)


@pytest.mark.parametrize(
    ("overrides", "fragments"),
    [
        (
            ["dynamic.judges=[lexicon]", "dynamic.models=[ghost]", "dynamic.conditions=[naive]"],
            ["conf/dynamic/default.yaml", "'dynamic.models'", "sweep.models", "['ghost']"],
        ),
        (
            ["dynamic.judges=[lexicon]", "dynamic.conditions=[]"],
            ["'dynamic.conditions'", "while dynamic.judges is set", "[]"],
        ),
        (
            ["dynamic.source=sometimes"],
            ["the command line (dynamic.source=...)", "'dynamic.source'", "'sometimes'"],
        ),
    ],
    ids=["cell-outside-the-sweep", "on-without-cells", "unknown-source"],
)
def test_bad_dynamic_settings_are_refused(
    run: Path, overrides: list[str], fragments: list[str]
) -> None:
    message = refused(run, "dynamic_aggregate", "judge=lexicon", QUICK_BOOTSTRAP, *overrides)
    assert_names(message, *fragments)
