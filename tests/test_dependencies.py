"""Every stage depends on every `losona` module its script imports, directly or not.

A module missing from a stage's `deps` is a change DVC cannot see: edit it, and the stage's
outputs go stale while `dvc status` says all is well. So this walks each stage script's
imports (with `ast`, transitively inside `losona/`, package `__init__.py` files included,
imports inside functions too) and checks that a dependency of the stage covers each
module file: the file itself or a folder above it. Both pipelines are checked:
`dvc.yaml` (deps relative to the repository root) and the generation project's
`generation/dvc.yaml` (relative to `generation/`). The same walk finds import circles: no
module may import one that imports it back (before #24: models' batch, calls and runlog,
and the test server with the scripted judge). A config reader's call naming a group
(`chosen(cfg, "dynamic")`) counts as an import of the group's schema module, which
losona.core.config's GROUPS imports only then; a call to `judge_kind`, as an import of each
kind's module that JUDGE_KINDS names, which losona.judges.kinds imports only then. And no
first-turn stage depends on the tables or settings of another stage family (before #31 they
all sat in losona/core/contracts.py and losona/core/config/schemas.py, so an edit of the
dynamic turn's tables marked every cell changed).
"""

from __future__ import annotations

import ast
import functools
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import GoldenRun, run_dvc

from losona.core.config import GROUPS
from losona.core.config.schemas import JUDGE_KINDS

REPO = Path(__file__).resolve().parents[1]
PIPELINES = {"dvc.yaml": REPO, "generation/dvc.yaml": REPO / "generation"}
PACKAGE = "losona"
SCRIPT = re.compile(r"python (\S+\.py)")


def module_files(name: str, root: Path = REPO) -> list[Path]:
    """The files that importing `name` runs: every package __init__ on the way, then it."""
    parts = name.split(".")
    files = []
    for depth in range(1, len(parts) + 1):
        base = root.joinpath(*parts[:depth])
        if (base / "__init__.py").is_file():
            files.append(base / "__init__.py")
        elif base.with_suffix(".py").is_file():
            files.append(base.with_suffix(".py"))
        else:
            break  # an attribute (a function, a class), not a module
    return files


def imported_modules(path: Path) -> tuple[str, ...]:
    """The dotted names of every `losona` module (or attribute) the file imports, anywhere."""
    stat = path.stat()
    return _imported_modules(path, stat.st_mtime_ns, stat.st_size)


@functools.cache  # each stage's walk reads the same modules: each version of a file once
def _imported_modules(path: Path, mtime_ns: int, size: int) -> tuple[str, ...]:
    return tuple(_imports(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))))


def _imports(tree: ast.AST) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            # `from losona.models import calls` imports a module, not only an attribute.
            yield from (f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Call):
            yield from schema_modules(node)
            yield from kind_modules(node)


# The config readers and the argument that names the group: `chosen(cfg, "dynamic")`,
# `option("model", name)`.
GROUP_ARGUMENT = {"chosen": 1, "option": 0}


def schema_modules(call: ast.Call) -> Iterator[str]:
    """The module of the schema a call to a config reader checks its group with.

    losona.core.config's GROUPS imports a stage family's settings only when a group of theirs is
    read, so no import statement says that `chosen(cfg, "dynamic")` runs
    losona/dynamic/settings.py: the call does.
    """
    func = call.func
    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    index = GROUP_ARGUMENT.get(name or "")
    if index is None or len(call.args) <= index:
        return
    group = call.args[index]
    if isinstance(group, ast.Constant) and group.value in GROUPS:
        yield GROUPS.module(group.value)


def kind_modules(call: ast.Call) -> Iterator[str]:
    """The modules of every kind's behaviour, for a call to judge_kind.

    JUDGE_KINDS names each kind's module and losona.judges.kinds imports it only when a
    judge's kind is asked for, so no import statement says that `judge_kind(config)` runs
    losona/judges/kinds/llm.py: the call does.
    """
    func = call.func
    if (func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)) == "judge_kind":
        yield from (kind.behaviour for kind in JUDGE_KINDS.values())


def closure(script: Path, root: Path = REPO) -> set[Path]:
    """Every `losona` file the script runs when it starts, found by walking imports."""
    seen: set[Path] = set()
    todo = [script]
    while todo:
        for name in imported_modules(todo.pop()):
            if name.split(".")[0] != PACKAGE:
                continue
            for file in module_files(name, root):
                if file not in seen:
                    seen.add(file)
                    todo.append(file)
    return seen


def stages(pipeline: Path, base: Path) -> Iterator[tuple[str, Path, list[Path]]]:
    """Each stage of a dvc.yaml: its name, its script and its dependencies as absolute paths.

    Dependencies are read as written (`${...}` templates are skipped: no module path uses
    one) and resolved against the stage's working directory, under `base` (the folder of
    the dvc.yaml as the repository has it).
    """
    record = yaml.safe_load(pipeline.read_text(encoding="utf-8"))
    for name, stage in record["stages"].items():
        wdir = (base / stage.get("wdir", ".")).resolve()
        match = SCRIPT.search(stage["cmd"])
        assert match, f"{pipeline.name}: stage {name} runs no python script"
        # A command may `cd` first (the generation project runs its scripts from the root).
        cd = re.match(r"cd (\S+) && ", stage["cmd"])
        script = ((wdir / cd.group(1)) if cd else wdir) / match.group(1)
        deps = [(wdir / dep).resolve() for dep in stage.get("deps", []) if "${" not in dep]
        yield name, script.resolve(), deps


def missing_deps(pipeline: Path, base: Path) -> list[str]:
    """`<pipeline>: stage <name> does not depend on <module>`, for every module not covered."""
    problems = []
    for name, script, deps in stages(pipeline, base):
        if not any(dep == script for dep in deps):
            problems.append(f"{pipeline.name}: stage {name} does not depend on its script")
        for file in sorted(closure(script)):
            if not any(dep == file or dep in file.parents for dep in deps):
                shown = file.relative_to(REPO).as_posix()
                problems.append(f"{pipeline.name}: stage {name} does not depend on {shown}")
    return problems


@pytest.mark.parametrize("pipeline", sorted(PIPELINES))
def test_every_stage_depends_on_every_module_its_script_imports(pipeline: str) -> None:
    assert missing_deps(REPO / pipeline, PIPELINES[pipeline]) == []


def test_the_walk_follows_imports_into_packages_and_functions() -> None:
    found = {f.relative_to(REPO).as_posix() for f in closure(REPO / "stages" / "plot.py")}
    # plot imports losona.report.index, which imports losona.results.metrics: the unscored-trial
    # policy.
    assert {"losona/__init__.py", "losona/report/index.py", "losona/results/metrics.py"} <= found
    # reproduce imports losona.report.plots inside a function (matplotlib only when needed).
    assert "losona/report/plots.py" in {
        f.relative_to(REPO).as_posix() for f in closure(REPO / "losona" / "reproduce" / "checks.py")
    }
    # judge_kind imports the module of each kind's behaviour that JUDGE_KINDS names.
    assert "losona/judges/kinds/llm.py" in {
        f.relative_to(REPO).as_posix() for f in closure(REPO / "stages" / "judge.py")
    }
    # A package's __init__ runs on import: losona.models pins litellm's price map there.
    assert "losona/models/__init__.py" in {
        f.relative_to(REPO).as_posix() for f in closure(REPO / "stages" / "sample.py")
    }


@pytest.mark.parametrize(
    ("pipeline", "stage", "dep", "module"),
    [
        ("dvc.yaml", "plot", "losona/results", "losona/results/metrics.py"),
        ("dvc.yaml", "sample", "losona/core", "losona/core/files.py"),
        ("dvc.yaml", "judge", "losona/models", "losona/models/call_cache.py"),
        (
            "generation/dvc.yaml",
            "screen",
            "../losona/results/metrics.py",
            "losona/results/metrics.py",
        ),
        ("generation/dvc.yaml", "curate", "../losona/__init__.py", "losona/__init__.py"),
    ],
)
def test_a_removed_dependency_is_named_with_its_stage(
    pipeline: str, stage: str, dep: str, module: str, tmp_path: Path
) -> None:
    """On a copy of the pipeline with one dependency taken out, the check names it."""
    source = REPO / pipeline
    copy = tmp_path / Path(pipeline).parent / "dvc.yaml"
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(source, copy)
    record = yaml.safe_load(copy.read_text())
    deps = record["stages"][stage]["deps"]
    assert dep in deps, f"{pipeline}: {stage} no longer lists {dep}"
    deps.remove(dep)
    copy.write_text(yaml.safe_dump(record, sort_keys=False))
    # The copy's relative deps are read as if it sat where the original does.
    problems = missing_deps(copy, PIPELINES[pipeline])
    assert f"dvc.yaml: stage {stage} does not depend on {module}" in problems


# The first turn's stages, and the packages of the other stage families (the dynamic turn,
# generation, the audit, the plots and report), which define their own tables and settings
# (losona/<family>/tables.py, settings.py). No first-turn stage may depend on them: editing
# the dynamic turn's tables, say, must leave every sample and judge cell up to date.
FIRST_TURN = (
    "fetch",
    "render",
    "model_config",
    "judge_config",
    "panel_config",
    "sample",
    "judge",
    "judge_controls",
    "panel_votes",
    "panel",
    "aggregate",
)
OTHER_FAMILIES = ("losona/dynamic", "losona/generation", "losona/audit", "losona/report")


def test_no_first_turn_stage_depends_on_another_familys_tables_or_settings() -> None:
    found = {name: (script, deps) for name, script, deps in stages(REPO / "dvc.yaml", REPO)}
    assert set(FIRST_TURN) <= set(found), "a first-turn stage is no longer in dvc.yaml"
    families = [REPO / family for family in OTHER_FAMILIES]
    for name in FIRST_TURN:
        script, deps = found[name]
        for file in [*deps, *closure(script)]:
            assert not any(file.is_relative_to(f) for f in families), f"{name} depends on {file}"


def test_each_familys_settings_live_in_its_package() -> None:
    for group, family in {
        "dynamic": "dynamic",
        "audit": "audit",
        "generation": "generation",
    }.items():
        assert GROUPS.module(group) == f"losona.{family}.settings"
    # losona.core.config itself reaches no family's settings: they load when their group is read.
    reached = {
        f.relative_to(REPO).as_posix() for f in closure(REPO / "losona/core/config/__init__.py")
    }
    assert not [file for file in reached if file.startswith(OTHER_FAMILIES)]


def test_the_first_turns_contracts_hold_only_tables_a_first_turn_stage_uses() -> None:
    """Each table of losona/core/contracts.py is named by the code of a first-turn stage: another
    family's table belongs in its own tables.py, or every first-turn stage would depend on it."""
    contracts = REPO / "losona" / "core" / "contracts.py"
    tables = {
        target.id
        for node in ast.parse(contracts.read_text(encoding="utf-8")).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name) and target.id.endswith("_SCHEMA")
    }
    code = {
        f
        for name, script, _ in stages(REPO / "dvc.yaml", REPO)
        if name in FIRST_TURN
        for f in [script, *closure(script)]
        if f != contracts
    }
    named = set().union(*(imported_names(f) for f in code))
    assert tables and tables <= named, f"no first-turn stage uses {sorted(tables - named)}"


def imported_names(path: Path) -> set[str]:
    """The names a file imports from losona.core.contracts."""
    return {
        alias.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == "losona.core.contracts"
        for alias in node.names
    }


def changed_stages(repo: Path) -> set[str]:
    """The stages `dvc status` names as changed, matrix items by their stage's name."""
    status = run_dvc("status", cwd=repo).stdout
    return {
        line[:-1].split("@")[0]
        for line in status.splitlines()
        if line and line[0] != "\t" and line[-1] == ":"
    }


@pytest.mark.slow  # dvc status on a copy of the golden run, a few times
def test_editing_another_familys_tables_or_settings_leaves_the_first_turn_up_to_date(
    golden_run: GoldenRun, tmp_path: Path
) -> None:
    # A whole lean run of the first turn, committed: two scenarios, K = 1, lexicon.
    repo = golden_run.copy(tmp_path / "repo")
    assert changed_stages(repo) == set()

    def edited(module: str) -> set[str]:
        """The stages a comment added to `module` marks changed (the file then restored)."""
        path = repo / module
        before = path.read_bytes()
        path.write_bytes(before + b"# edited\n")
        try:
            return changed_stages(repo)
        finally:
            path.write_bytes(before)

    # The dynamic turn's tables: only plot reads them while the extension is off.
    assert edited("losona/dynamic/tables.py") == {"plot"}
    assert edited("losona/dynamic/settings.py") == {"preflight", "calls", "plot"}
    assert not edited("losona/generation/tables.py") & set(FIRST_TURN)
    assert not edited("losona/audit/tables.py") & set(FIRST_TURN)
    # The check sees an edit that does concern the first turn: its own tables.
    assert {"sample", "judge"} <= edited("losona/core/contracts.py")


def import_graph(root: Path = REPO) -> dict[str, set[str]]:
    """Which `losona` modules each module imports, anywhere in its file (functions too).

    `from a.b import c` is an import of module `a.b.c` when that is a module, else of `a.b`.
    A module's own packages are left out: Python runs them before any module in them, so
    `from losona.models import pricing` inside losona.models is no circle.
    """
    files = {
        ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__"): path
        for path in (root / PACKAGE).rglob("*.py")
    }
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        imported = set()
        for name in imported_modules(path):
            while name and name not in files:
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(name + "."):
                imported.add(name)
        graph[module] = imported
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each set of modules that import one another, round and back (size 2 or more)."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        order[module] = low[module] = len(order)
        stack.append(module)
        for other in sorted(graph.get(module, ())):
            if other not in order:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            component = []
            while (top := stack.pop()) != module:
                component.append(top)
            if component:
                found.append(sorted([module, *component]))

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    assert circles(import_graph()) == []


def test_a_circle_is_found_also_through_an_import_inside_a_function(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE
    (package / "models").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "models" / "__init__.py").write_text("from losona.models.calls import send\n")
    (package / "models" / "calls.py").write_text("from losona.models import batch\n")
    (package / "models" / "batch.py").write_text(
        "def go():\n    from losona.models.calls import send\n"
    )
    (package / "files.py").write_text("from losona.models import calls\n")
    assert circles(import_graph(tmp_path)) == [["losona.models.batch", "losona.models.calls"]]


# The floors of the tree, from the shared core up: a module may import its own package and
# those on the floors below it, never one above (the stages' functions sit above the
# families they call, reproduce above the stages, the board above reproduce).
FLOORS = (
    ("core",),
    ("pages", "figures"),
    ("models", "scenarios"),
    ("prompts",),
    ("sampling", "judges"),
    ("results",),
    ("audit", "dynamic", "generation"),
    ("provenance",),
    ("report",),
    ("pipeline",),
    ("reproduce",),
    ("board", "testing", "catalog", "experiments", "publishable", "run_logs"),
)


def floor_of(module: str) -> int | None:
    """The floor of a `losona` module's top package (None: the `losona` package itself)."""
    parts = module.split(".")
    if len(parts) < 2:
        return None
    for number, packages in enumerate(FLOORS):
        if parts[1] in packages:
            return number
    raise AssertionError(f"{module}: its package is on no floor of FLOORS")


def imports_running_up(graph: dict[str, set[str]]) -> list[str]:
    """`a -> b` for each import of a module on a higher floor than the importer's."""
    found = []
    for module, imported in sorted(graph.items()):
        here = floor_of(module)
        for other in sorted(imported):
            there = floor_of(other)
            if here is not None and there is not None and there > here:
                found.append(f"{module} -> {other}")
    return found


def test_no_module_imports_a_package_above_its_own() -> None:
    assert imports_running_up(import_graph()) == []


def test_an_import_running_up_is_named(tmp_path: Path) -> None:
    package = tmp_path / PACKAGE
    for folder in ("core", "judges"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "core" / "layout.py").write_text("from losona.judges import verdicts\n")
    (package / "judges" / "verdicts.py").write_text("from losona.core import layout\n")
    assert "losona.core.layout -> losona.judges.verdicts" in imports_running_up(
        import_graph(tmp_path)
    )
