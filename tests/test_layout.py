"""One run layout: losona/core/layout.py places every file where dvc.yaml declares it, and no
other module builds a run path from a folder of the `paths` config.

dvc.yaml spells each stage's outputs with `${paths.*}` and `${item.*}`; the stage scripts
ask a RunLayout. The first test resolves dvc.yaml's templates as DVC does (its `vars`
files, then the matrix item) for one cell of every stage and compares them with the
layout's paths, so the two spellings cannot drift apart. The second walks the code: a
module that joins a `paths.*_dir` folder with names of its own spells a run path the
layout does not know.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, run_layout

from losona.core.config import Paths, load_option
from losona.core.layout import RunLayout
from losona.dynamic.settings import DynamicSettings
from losona.pipeline.table import STAGES

TEMPLATE = re.compile(r"\$\{([^}]+)\}")
# One cell of every matrix: the names are made up, so nothing can match by accident.
ITEM = {"model": "m1", "condition": "c1", "judge": "j1", "panel": "p1"}
DYNAMIC_STAGES = ("dynamic_render", "dynamic_sample", "dynamic_judge")


def dvc_context() -> dict[str, Any]:
    """What dvc.yaml's templates resolve against: params.yaml (DVC reads it first), then
    the files its `vars` lists."""
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    context: dict[str, Any] = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    for file in pipeline["vars"]:
        context.update(yaml.safe_load((REPO / file).read_text(encoding="utf-8")))
    return context | {"item": ITEM}


def resolve(text: str, context: Mapping[str, Any]) -> str:
    """A dvc.yaml string with every `${a.b}` replaced by its value."""

    def value(match: re.Match[str]) -> str:
        found: Any = context
        for key in match.group(1).split("."):
            found = found[key]
        return str(found)

    return TEMPLATE.sub(value, text)


def declared(section: str) -> dict[str, set[str]]:
    """Each stage's `outs` or `metrics` (or `deps`), resolved for the cell ITEM."""
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))
    context = dvc_context()
    found = {}
    for name, stage in pipeline["stages"].items():
        entries = [e if isinstance(e, str) else next(iter(e)) for e in stage.get(section, [])]
        found[name] = {resolve(entry, context) for entry in entries}
    return found


def posix(*paths: Path | None) -> set[str]:
    """Paths as dvc.yaml writes them."""
    assert None not in paths
    return {path.as_posix() for path in paths if path is not None}


def expected_outs(layout: RunLayout) -> dict[str, set[str]]:
    """What each stage writes for the cell ITEM, as the pipeline's table places it."""
    return {stage.name: posix(*stage.outputs(layout, ITEM)) for stage in STAGES}


def expected_metrics(layout: RunLayout) -> dict[str, set[str]]:
    """The DVC metrics each stage writes, as the pipeline's table places them."""
    return {
        stage.name: posix(*stage.metrics(layout, ITEM))
        for stage in STAGES
        if stage.metrics(layout, ITEM)
    }


def default_layout() -> RunLayout:
    """The layout of conf/paths/default.yaml, the file dvc.yaml's `vars` reads."""
    return run_layout()


def test_dvc_yaml_runs_the_tables_stages_in_its_order_with_their_scripts_and_cells() -> None:
    pipeline = yaml.safe_load((REPO / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    assert list(pipeline) == [stage.name for stage in STAGES]
    for stage in STAGES:
        assert pipeline[stage.name]["cmd"].split()[:2] == ["python", stage.command], stage.name
        matrix = pipeline[stage.name].get("matrix", {})
        assert tuple(matrix) == stage.cells, stage.name
        # A dynamic stage's cells expand over the dynamic node's lists, the others' not.
        over_dynamic = {"${dynamic." in str(names) for names in matrix.values()}
        assert over_dynamic <= {stage.dynamic}, stage.name


def test_each_stage_reads_the_config_groups_the_table_names() -> None:
    for stage in STAGES:
        module = REPO / "losona" / "pipeline" / f"{stage.script or stage.name}.py"
        read = {
            call.args[1].value
            for file in (REPO / stage.command, module)
            for call in ast.walk(ast.parse(file.read_text(encoding="utf-8")))
            if isinstance(call, ast.Call)
            and getattr(call.func, "id", None) == "chosen"
            and len(call.args) > 1
            and isinstance(call.args[1], ast.Constant)
        }
        assert read <= set(stage.groups), f"{stage.name} reads {sorted(read)}"


def test_every_stage_writes_where_dvc_yaml_declares_its_outputs() -> None:
    outs, layout = declared("outs"), default_layout()
    assert outs == expected_outs(layout)
    metrics = {name: files for name, files in declared("metrics").items() if files}
    assert metrics == expected_metrics(layout)


def test_a_cell_reads_where_dvc_yaml_declares_its_inputs() -> None:
    deps, layout = declared("deps"), default_layout()
    m, c, j = ITEM["model"], ITEM["condition"], ITEM["judge"]
    assert posix(layout.responses(m, c), layout.controls(j), layout.scenarios) <= deps["judge"]
    assert posix(layout.prompts) <= deps["sample"]
    assert posix(layout.verdicts(j, m, c)) <= deps["dynamic_render"]
    assert posix(layout.dynamic_prompts(j, m, c)) <= deps["dynamic_sample"]
    assert posix(layout.dynamic_judge_folder(j)) <= deps["dynamic_aggregate"]
    assert posix(layout.panel_votes_folder(ITEM["panel"])) <= deps["panel"]
    assert posix(layout.judge_verdicts(j), layout.controls(j)) <= deps["panel_votes"]
    assert posix(layout.run_checked) <= deps["fetch"]
    assert posix(layout.calls_folder) <= deps["calls"] & deps["plot"]
    # The stages that read a folder whole depend on it whole.
    assert posix(layout.verdicts_folder) <= deps["aggregate"] & deps["audit"] & deps["plot"]
    assert posix(layout.controls_folder) <= deps["aggregate"] & deps["audit"]
    assert posix(layout.configs_folder) <= deps["aggregate"] & deps["provenance"]
    assert posix(layout.labels_folder) <= deps["audit"]
    assert posix(layout.dynamic_reports_folder) <= deps["plot"]


def test_the_calls_stage_merges_every_calls_file_the_cells_write() -> None:
    layout = default_layout()
    sweep = {"models": ["m1"], "conditions": ["c1", "c2"], "judges": ["j1"]}
    outs = declared("outs")
    written = set().union(outs["sample"], outs["judge"], outs["judge_controls"])
    merged = posix(*layout.sweep_calls({k: v[:1] for k, v in sweep.items()}))
    assert merged == {out for out in written if out.startswith("data/calls/")}
    assert len(layout.sweep_calls(sweep)) == 2 + 2 + 1
    node = load_option("dynamic", "default").dynamic
    dynamic = DynamicSettings.from_config({**node, "judges": ["j1"], "models": ["m1"]})
    dynamic_outs = set().union(*(outs[f"{stage}"] for stage in DYNAMIC_STAGES))
    assert posix(*layout.dynamic_call_files(dynamic)) == {
        out.replace("c1", condition)
        for out in dynamic_outs
        if out.startswith("data/calls/")
        for condition in dynamic.conditions
    }


def test_a_path_override_moves_only_its_files() -> None:
    layout = run_layout(verdicts_dir="runs/v")
    assert layout.verdicts("j", "m", "c") == Path("runs/v/j/m/c.parquet")
    assert layout.responses("m", "c") == Path("data/responses/m/c.parquet")
    assert layout.sample_log("m", "c") == Path("data/responses/m/c.log.json")


def test_paths_null_calls_means_no_published_calls() -> None:
    node = default_layout().paths.model_dump() | {"calls": None}
    assert RunLayout(Paths.from_config(node)).calls is None


# -- no run path built outside the layout -------------------------------------------------------

# The folders of conf/paths: joined with a cell's names, they make a run path.
FOLDERS = sorted(name for name in Paths.model_fields if name.endswith("_dir"))
LAYOUT = REPO / "losona" / "core" / "layout.py"


def folder_reads(source: str) -> list[tuple[int, str]]:
    """Each place a module's code reads a `paths.*_dir` folder, as (line, folder):
    `x.verdicts_dir`, `x["verdicts_dir"]` or `getattr(x, "verdicts_dir")`. Docstrings and
    comments that name one are not code."""
    found = []
    for node in ast.walk(ast.parse(source)):
        name = None
        if isinstance(node, ast.Attribute):
            name = node.attr
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            name = node.slice.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "getattr"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
        ):
            name = node.args[1].value
        if name in FOLDERS:
            found.append((node.lineno, str(name)))
    return found


def modules() -> list[Path]:
    """Every module of the package and every stage script, the layout aside."""
    files = [*(REPO / "losona").rglob("*.py"), *(REPO / "stages").glob("*.py")]
    return sorted(f for f in files if f != LAYOUT)


def test_only_the_layout_reads_the_folders_of_the_paths_config() -> None:
    assert FOLDERS, "conf/paths has no *_dir folders left: rethink this test"
    reads = [
        f"{path.relative_to(REPO).as_posix()}:{line}: {name}"
        for path in modules()
        for line, name in folder_reads(path.read_text(encoding="utf-8"))
    ]
    assert reads == []


@pytest.mark.parametrize(
    ("code", "folder"),
    [
        ('out = Path(paths.verdicts_dir) / judge / model / f"{condition}.parquet"', "verdicts_dir"),
        ('root = Path(paths["responses_dir"]) / model', "responses_dir"),
        ('root = Path(getattr(paths, "calls_dir")) / "sample"', "calls_dir"),
        ('"""Written under paths.audit_dir."""\nroot = layout.audit_folder', None),
    ],
)
def test_a_folder_read_outside_the_layout_is_found(code: str, folder: str | None) -> None:
    assert folder_reads(code) == ([(1, folder)] if folder else [])
