"""Every fenced shell block of README.md and docs/, placed: the test that runs it, or why none.

A block is known by its page, its opening line (comment aside) and a digest of its whole
text, so a new block, or an edit to one, fails `test_every_shell_block_is_placed` until it
is placed again here. A placement is either a test node ("tests/...py::test_...") whose
function takes the block's text from the page with `docs_block(page, opening)` and runs
it, or the one-line reason no test does. No block runs in that test itself.
"""

from __future__ import annotations

import ast
from pathlib import Path

import polars as pl
import pytest
from conftest import copy_repo
from docs_blocks import REPO, clean_env, docs_block, pages, run_block, shell_blocks

KEY = "a key of a paid provider"
DYNAMIC_RECIPE = (
    "tests/test_dynamic_pipeline.py::"
    "test_the_docs_offline_recipe_for_a_simulated_group_runs_and_reruns_with_no_call"
)
PLACED: dict[tuple[str, str, str], str] = {
    ("README.md", "make repro", "abed4d48"): (
        "the install and whole pipeline, tens of minutes; CI's .ci/run runs `make test`"
    ),
    (
        "README.md",
        "dvc exp run -S conf/run.yaml:dataset.limit=5 -S conf/run.yaml:sampling.trials=1 \\",
        "72717356",
    ): "needs the user's own model config and server (conf/model/my_llamacpp.yaml)",
    ("README.md", "python stages/fetch.py dataset=bundled", "d3c99405"): (
        "tests/test_docs_blocks.py::test_the_readmes_stage_commands_run_as_written"
    ),
    ("README.md", "mkdocs serve", "56e0a162"): (
        "serves until stopped; tests/test_docs.py builds the site with --strict"
    ),
    (
        "docs/configuration.md",
        "python stages/sample.py model=claude_opus condition=style_adaptation",
        "bcacdab7",
    ): KEY,
    (
        "docs/configuration.md",
        "dvc exp run -S conf/run.yaml:dataset.limit=5 -S conf/run.yaml:sampling.trials=1 \\",
        "30b35025",
    ): "needs the user's own model config and server (conf/model/my_llamacpp.yaml)",
    ("docs/configuration.md", 'git config --global user.name "Your Name"', "c81e854a"): (
        "git's own setting of the user's identity"
    ),
    ("docs/configuration.md", "dvc status", "1302273b"): (
        "needs a run of the sweep; the dry run's lines are tested in test_sample.py"
    ),
    ("docs/datasets.md", "python stages/fetch.py dataset.limit=5", "e42077da"): (
        "its last line is a whole pipeline run on five scenarios, minutes"
    ),
    ("docs/development.md", "make test", "0cf43353"): "the test suite itself",
    ("docs/development.md", "mkdocs serve", "2b0dbf04"): (
        "serves until stopped; tests/test_docs.py builds the site with --strict"
    ),
    (
        "docs/dynamic.md",
        "dvc exp run -S 'conf/dynamic/default.yaml:dynamic.judges=[lexicon]'",
        "d4ce752c",
    ): "three whole second-turn runs, the last with a key; the first two's settings run in "
    "test_dynamic_pipeline.py",
    (
        "docs/dynamic.md",
        "python stages/dynamic_render.py judge=lexicon model=smollm2 condition=naive",
        "ef31c97c",
    ): "needs a first turn run with these cells; the stages run under DVC in "
    "test_dynamic_pipeline.py",
    ("docs/dynamic.md", "python -m losona.dynamic.prune_lock", "6bc604f4"): (
        "tests/test_dynamic_pipeline.py::"
        "test_dvc_exp_run_turns_the_second_turn_on_offline_and_off_again"
    ),
    ("docs/dynamic.md", "python -m losona.testing.openai_server --group &", "a8691806"): (
        DYNAMIC_RECIPE
    ),
    ("docs/generation.md", "cd generation && dvc repro && cd ..", "1c8a5a70"): KEY,
    (
        "docs/generation.md",
        "python stages/generate.py generate.generator=gemini_pro "
        "generate.structured_output=json_schema \\",
        "8b7c9c41",
    ): KEY,
    ("docs/judge-audit.md", "python stages/audit.py", "47ef940f"): (
        "needs a whole run of the sweep; the audit stage runs in test_audit_pipeline.py"
    ),
    (
        "docs/judge-audit.md",
        "python -m losona.testing.openai_server --port 8765 --judge &",
        "f760c633",
    ): "a run with a second judge; test_audit_pipeline.py runs it against the server",
    ("docs/judge-audit.md", "python stages/audit.py audit.export=true", "7f364a66"): (
        "needs a whole run of the sweep; the export is tested in test_audit_pipeline.py"
    ),
    (
        "docs/judge-audit.md",
        "python -m losona.testing.openai_server --port 8765 --judge &",
        "0023c8ec",
    ): "needs a human's labels (data/labels/...)",
    ("docs/judge-audit.md", "python stages/audit.py audit.determinism.repeats=3", "fbb49f7e"): (
        "needs a run with an LLM judge; test_audit_pipeline.py re-judges one against the server"
    ),
    ("docs/judges.md", "python stages/judge.py condition=naive", "4eba2e07"): (
        "its second and third lines need " + KEY
    ),
    ("docs/judges.md", "python benchmarks/lexicon_heldout.py", "81fe64d3"): (
        "a benchmark; test_lexicon.py runs its check of the targets"
    ),
    (
        "docs/judges.md",
        "dvc exp run -S 'sweep.judges=[gemini_pro,claude_opus]' "
        "-S 'conf/panels.yaml:panels=[paper_panel]'",
        "3894b2ce",
    ): KEY,
    (
        "docs/judges.md",
        "python -m losona.testing.openai_server --port 8765 --judge &",
        "67e978a5",
    ): "a whole run with a panel; test_panel_stages.py runs the panel stages",
    ("docs/judges.md", "export GEMINI_API_KEY=... ANTHROPIC_API_KEY=...", "a736e7e8"): KEY,
    ("docs/metrics.md", "python stages/aggregate.py", "de67e003"): (
        "needs a whole run of the sweep, and its git history for `dvc metrics diff`"
    ),
    ("docs/models.md", "export ANTHROPIC_API_KEY=...", "1de1de8e"): KEY,
    ("docs/board.md", "make install", "c4ff2384"): (
        "a board needs published runs to list; test_board.py publishes five and runs the "
        "board's dvc repro the same way"
    ),
    ("docs/offline.md", "python -m losona.testing.openai_server --judge &", "b04b3eef"): (
        "a whole run with a second judge; test_audit_pipeline.py runs one against the server"
    ),
    ("docs/offline.md", "export LOSONA_TEST_SERVER_PORT=8800", "d6be30e3"): (
        "serves until stopped; test_openai_server.py tests the variable it shows"
    ),
    ("docs/reports.md", "python stages/plot.py", "9e11dea1"): (
        "needs a whole run of the sweep, and a previous revision for `dvc plots diff`"
    ),
    ("docs/reproducing.md", "dvc repro", "ff62ead2"): (
        "needs a remote and a git remote; test_first_hour.py publishes a run the same way"
    ),
    (
        "docs/reproducing.md",
        "git clone <the run's repository> && cd <it> && git checkout <the run's tag>",
        "afb88789",
    ): "placeholders for a published run; test_first_hour.py checks one the same way",
    (
        "docs/sampling.md",
        "python stages/sample.py model=claude_fable condition=naive sampling.dry_run=true",
        "c8c49505",
    ): "an estimate at the installed litellm's prices; the dry run is tested in test_sample.py",
    (
        "docs/sampling.md",
        "python stages/sample.py +experiment=paper dataset=bundled sampling.dry_run=true",
        "461d6be2",
    ): "the paper's whole sweep priced; the dry run of a sweep is tested in test_sample.py",
    (
        "docs/sampling.md",
        "python stages/sample.py model=gpt_5_5 condition=naive sampling.batch=true",
        "6f4adce8",
    ): KEY,
    ("docs/scale.md", 'git add -A && git commit -m "sweep"', "784dd0d0"): (
        "queues runs of paid or large models; test_queue.py queues two small ones"
    ),
    ("docs/scale.md", "# machine A", "bd72c2cd"): (
        "two machines and a remote, side by side; test_publish.py runs the same path on one"
    ),
}


def placed_key(page: str, opening: str, digest: str) -> str:
    """The line to add to PLACED for a block, its placement to be written."""
    return f"    ({page!r}, {opening!r}, {digest!r}): '<test node or reason>',"


def test_every_shell_block_is_placed_and_every_placement_is_a_block() -> None:
    blocks = {(b.page, b.opening, b.digest): b for page in pages() for b in shell_blocks(page)}
    unplaced = [
        placed_key(*key) + f"  # line {blocks[key].line}" for key in blocks.keys() - PLACED.keys()
    ]
    assert not unplaced, "shell blocks that PLACED does not place (new, or edited):\n" + (
        "\n".join(sorted(unplaced))
    )
    stale = sorted(PLACED.keys() - blocks.keys())
    assert not stale, f"placements of no block (the block was edited or removed): {stale}"
    assert all(placement.strip() for placement in PLACED.values())


def calls_of_docs_block(function: ast.FunctionDef) -> set[tuple[str, str]]:
    """The (page, opening) of every `docs_block("page", "opening")` call in a function."""
    return {
        (call.args[0].value, call.args[1].value)
        for call in ast.walk(function)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Name)
        and call.func.id == "docs_block"
        and len(call.args) == 2
        and all(isinstance(arg, ast.Constant) for arg in call.args)
    }


@pytest.mark.parametrize(
    ("page", "opening", "node"),
    [
        (page, opening, node)
        for (page, opening, _), node in PLACED.items()
        if node.startswith("tests/")
    ],
)
def test_a_block_said_to_run_in_a_test_is_taken_from_the_page_by_that_test(
    page: str, opening: str, node: str
) -> None:
    path, name = node.split("::")
    module = ast.parse((REPO / path).read_text(encoding="utf-8"))
    functions = [f for f in module.body if isinstance(f, ast.FunctionDef) and f.name == name]
    assert functions, f"{node}: no such test"
    assert (page, opening) in calls_of_docs_block(functions[0]), (
        f"{node} does not take {page}'s block {opening!r} from the page (docs_block)"
    )


@pytest.mark.slow  # two stage processes
def test_the_readmes_stage_commands_run_as_written(tmp_path: Path) -> None:
    block = docs_block("README.md", "python stages/fetch.py dataset=bundled")
    repo = copy_repo(tmp_path / "repo")
    (tmp_path / "home").mkdir()
    done = run_block(block, cwd=repo, env=clean_env(tmp_path / "home", repo))
    assert done.returncode == 0, done.stdout + done.stderr
    scenarios = pl.read_parquet(repo / "data" / "scenarios.parquet")
    assert scenarios.height == 44  # the bundled set
    prompts = pl.read_parquet(repo / "data" / "prompts.parquet")
    assert set(prompts["condition"]) == {"norm_informed"}  # one condition, as its comment says
    assert set(prompts["scenario_id"]) == set(scenarios["scenario_id"])
