"""The dynamic extension through DVC, on a copy of the repository: on, off, published.

Every run is lean: one model, one condition, a few of the bundled scenarios (each carries
its follow-up material), a call cache of the test's own. The embedded model's runs start from
a copy of the golden run (tests/conftest.py), whose first turn is already committed.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from conftest import GoldenRun, drop_followup, run_dvc
from docs_blocks import clean_env, docs_block, port_to_ourselves, run_block

from losona.testing.openai_server import OpenAIServer, default_reply
from losona.testing.openai_server.port import CONFIG_PORT

pytestmark = pytest.mark.slow

DYNAMIC = "conf/dynamic/default.yaml"
SCENARIOS = ["event_planning__extreme_conciseness_norm", "standup__binary_answer_norm"]
# Its follow-up material taken out in the copy: the group model writes its second elicitor.
EXTRA_SCENARIO = "bug_report__no_apology_culture_norm"


def git(*args: str, cwd: Path) -> None:
    identity = ["-c", "user.email=test@example.org", "-c", "user.name=test"]
    subprocess.run(["git", *identity, *args], cwd=cwd, check=True, capture_output=True)


def configure(repo: Path, model: str, ids: list[str], trials: int, cache: Path) -> None:
    """One model, the naive condition, the lexicon judge, the scenarios `ids`, K = `trials`."""
    sweep = {"models": [model], "conditions": ["naive"], "judges": ["lexicon"]}
    (repo / "params.yaml").write_text(yaml.safe_dump({"dataset": "bundled", "sweep": sweep}))
    run = repo / "conf" / "run.yaml"
    text = run.read_text()
    assert "scenario_ids: []" in text and "  trials: 3 " in text  # else nothing would change
    text = text.replace("scenario_ids: []", f"scenario_ids: [{', '.join(ids)}]")
    run.write_text(text.replace("  trials: 3 ", f"  trials: {trials} "))
    paths = repo / "conf" / "paths" / "default.yaml"
    paths.write_text(re.sub(r"call_cache: .*", f"call_cache: {cache}", paths.read_text()))
    (repo / "dvc.lock").unlink(missing_ok=True)


def set_dynamic(repo: Path, **values: Any) -> None:
    """Set keys of conf/dynamic/default.yaml (its comments go: `dvc exp run -S` drops some
    anyway; its package line stays, so that Hydra still reads the node as `dynamic`)."""
    path = repo / DYNAMIC
    node = yaml.safe_load(path.read_text())
    node["dynamic"].update(values)
    path.write_text("# @package _global_\n" + yaml.safe_dump(node, sort_keys=False))


def outputs(repo: Path) -> dict[str, str]:
    """The hash of every file under data/ and reports/ (run logs aside: they differ by design)."""
    return {
        str(path.relative_to(repo)): hashlib.sha256(path.read_bytes()).hexdigest()
        for folder in ("data", "reports")
        for path in sorted((repo / folder).rglob("*"))
        if path.is_file() and not path.name.endswith(".log.json")
    }


def reproduce(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "losona.reproduce"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )


def python_m(repo: Path, command: str) -> subprocess.CompletedProcess[str]:
    """A documented `python -m ...` command, run in the copy with its own package."""
    return subprocess.run(
        [sys.executable, *shlex.split(command)[1:]],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )


def ran(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def changed(repo: Path) -> set[str]:
    """The stages `dvc status` names as changed (the names ending in a colon)."""
    status = run_dvc("status", cwd=repo).stdout
    return {
        line[:-1] for line in status.splitlines() if line and line[0] != "\t" and line[-1] == ":"
    }


def test_dvc_exp_run_turns_the_second_turn_on_offline_and_off_again(
    golden_run: GoldenRun, own_home: Path, tmp_path: Path
) -> None:
    # The committed golden run, made with the extension off as shipped: two scenarios, one
    # trial each, the embedded model; this test's HOME, so its own call cache, with the
    # prompt states of the machine that ran the first turn (the second resumes from them).
    repo = golden_run.copy(tmp_path / "repo")
    golden_run.lend_prompt_states(own_home)
    assert not any(stage.startswith("dynamic") for stage in ran(golden_run.output))
    assert "dynamic" not in run_dvc("stage", "list", cwd=repo).stdout
    before = outputs(repo)
    assert not any(path.startswith("reports/dynamic/") for path in before if "README" not in path)
    lock_before = (repo / "dvc.lock").read_bytes()
    shipped = yaml.safe_load((repo / DYNAMIC).read_text())["dynamic"]

    on = run_dvc(
        "exp",
        "run",
        "-S",
        f"{DYNAMIC}:dynamic.judges=[lexicon]",
        "-S",
        f"{DYNAMIC}:dynamic.conditions=[naive]",
        cwd=repo,
    ).stdout
    cell = "lexicon-smollm2-naive"
    assert ran(on) == {
        f"dynamic_render@{cell}",
        f"dynamic_sample@{cell}",
        f"dynamic_judge@{cell}",
        "dynamic_aggregate@lexicon",
        "preflight",  # it checks every setting, conf/dynamic/default.yaml's too
        "plot",  # its dynamic section
        "calls",  # the second turn's calls, published with the run
    }, on
    reports = repo / "reports" / "dynamic" / "lexicon"
    results = (reports / "results.csv").read_text()
    assert results.count("\n") == 1 + 8  # the header, 4 metrics x 2 levels
    assert (reports / "recovery.png").is_file()
    html = (repo / "reports" / "index.html").read_text()
    assert '<section id="dynamic"><h2>Dynamic second turn</h2>' in html
    # reproduce checks the committed run (docs/reproducing.md): commit the experiment.
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "the second turn", cwd=repo)
    checked = reproduce(repo)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "data/dynamic/lexicon/verdicts/smollm2/naive.parquet" not in checked.stdout

    # Changing only the source reruns only the dynamic stages that read it.
    set_dynamic(repo, source="simulated")
    assert changed(repo) == {"preflight", f"dynamic_render@{cell}"}
    set_dynamic(repo, source="scripted")
    assert run_dvc("status", cwd=repo).stdout.strip() == "Data and pipelines are up to date."

    # Off again (its settings as shipped): no dynamic stage, and the report and the calls
    # are what they were.
    set_dynamic(repo, judges=[], conditions=shipped["conditions"])
    assert changed(repo) == {"preflight", "plot", "calls"}
    # `dvc exp run`, as the docs turn it off: it also takes the second turn's outputs off
    # the disk, so the folders plot and calls read are as they were (`dvc repro` would
    # leave them there: docs/dynamic.md); plot and calls may come from DVC's run cache.
    rerun = run_dvc("exp", "run", cwd=repo).stdout
    assert ran(rerun) <= {"preflight", "plot", "calls"}, rerun
    after = outputs(repo)
    assert {path: after[path] for path in before} == before

    # But dvc.lock keeps the entries of the stages that are gone: DVC drops none by itself
    # (treeverse/dvc#5293), not on `dvc commit` either; they record outputs no stage writes.
    run_dvc("commit", "--force", cwd=repo)
    gone = [f"dynamic_{step}@{cell}" for step in ("render", "sample", "judge")]
    gone.append("dynamic_aggregate@lexicon")
    kept = list(yaml.safe_load(lock_before)["stages"])
    assert list(yaml.safe_load((repo / "dvc.lock").read_text())["stages"]) == kept + gone
    # The docs' mend drops those four and nothing else: dvc.lock as before the extension.
    prune = docs_block("docs/dynamic.md", "python -m losona.dynamic.prune_lock")
    (tmp_path / "home").mkdir()
    pruned = run_block(prune, cwd=repo, env=clean_env(tmp_path / "home", repo))
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout == (
        f"dvc.lock: dropped 4 entries of stages dvc.yaml no longer has: {', '.join(gone)}\n"
    )
    assert (repo / "dvc.lock").read_bytes() == lock_before
    assert run_dvc("status", cwd=repo).stdout.strip() == "Data and pipelines are up to date."
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "off again", cwd=repo)
    # The two gatekeepers, which share one lock check, agree: the run may be published.
    published = python_m(repo, "python -m losona.publishable")
    assert published.returncode == 0 and published.stdout.startswith("publishable: yes."), (
        published.stdout + published.stderr
    )
    checked = reproduce(repo)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def group_or_subject(body: dict[str, Any]) -> str:
    """The test server's replies: a group model's lines by a listed member, else the default."""
    prompt = body["messages"][0]["content"]
    names = re.search(r"using a name from this list: (.*?)\. Output only", prompt)
    if names is None:
        return default_reply(body)
    first = names.group(1).split(", ")[0]
    if "Write how the group reacts" in prompt:
        return f"{first}: right, thanks for the essay"
    if "Write how the group carries on" in prompt:
        return f"{first}: ok, noted, cheers"
    return f"{first}: and what about the next one, then?"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(reply=group_or_subject) as running:
        yield running


def test_a_simulated_second_turn_is_published_and_reruns_with_no_call(
    repo_copy: Path, tmp_path: Path, server: OpenAIServer
) -> None:
    repo = repo_copy
    drop_followup(repo, EXTRA_SCENARIO)
    configure(
        repo, "local", [*SCENARIOS, EXTRA_SCENARIO], trials=2, cache=tmp_path / "calls.sqlite"
    )
    (repo / "conf" / "model" / "local.yaml").write_text(
        yaml.safe_dump(server.model_config("local", label="Test server"))
    )
    group = server.model_config("group", seed_per_trial=False)
    (repo / "conf" / "model" / "group.yaml").write_text(yaml.safe_dump(group))
    set_dynamic(
        repo,
        judges=["lexicon"],
        models=["local"],
        conditions=["naive"],
        source="simulated",
        group_model="group",
    )
    run_dvc("repro", cwd=repo)
    calls = server.request_count
    prompts = repo / "data" / "dynamic" / "lexicon" / "prompts" / "local" / "naive.parquet"
    table = pl.read_parquet(prompts)
    assert set(table["status"]) == {"ok"}
    assert set(table["followup_source"]) == {"simulated:group@group-v1"}
    own_ask = table.filter(pl.col("scenario_id") == EXTRA_SCENARIO)["elicitor_source"]
    assert set(own_ask) == {"simulated:group@group-v1"}  # no scripted elicitor: the group's
    published = pl.read_parquet(repo / "data" / "calls.parquet")
    group_calls = pl.read_parquet(
        repo / "data" / "calls" / "dynamic_group" / "lexicon" / "local" / "naive.parquet"
    )
    assert group_calls.height > 0 and set(group_calls["key"]) <= set(published["key"])
    checked = reproduce(repo)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    # Another machine's empty call cache: the published calls answer every call of the
    # extension's stages, forced to run again.
    lock, before = (repo / "dvc.lock").read_bytes(), outputs(repo)
    paths = repo / "conf" / "paths" / "default.yaml"
    empty = f"call_cache: {tmp_path / 'empty.sqlite'}"
    paths.write_text(re.sub(r"call_cache: .*", empty, paths.read_text()))
    cell = "lexicon-local-naive"
    stages = [f"dynamic_{s}@{cell}" for s in ("render", "sample", "judge")]
    forced = run_dvc("repro", "--force", "--single-item", *stages, "calls", cwd=repo).stdout
    assert ran(forced) == {*stages, "calls"}
    assert server.request_count == calls  # not one model call
    assert (repo / "dvc.lock").read_bytes() == lock
    assert outputs(repo) == before
    checked = reproduce(repo)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    print(f"requests: {calls} for the run (group model included), 0 for its forced rerun")


def test_the_docs_offline_recipe_for_a_simulated_group_runs_and_reruns_with_no_call(
    golden_run: GoldenRun, tmp_path: Path
) -> None:
    # A clone whose first turn is already run and committed with the recipe's own subset,
    # K, sweep and judge (the golden run): the recipe's `dvc exp run` adds the second turn.
    repo = golden_run.copy(tmp_path / "repo")
    recipe = docs_block("docs/dynamic.md", "python -m losona.testing.openai_server --group &")
    # A machine of its own (its HOME holds the call cache), as a new shell has it: the one
    # that ran the first turn, so with the prompt states the embedded model kept.
    (tmp_path / "home").mkdir()
    golden_run.lend_prompt_states(tmp_path / "home")
    env = clean_env(tmp_path / "home", repo)
    with port_to_ourselves(CONFIG_PORT):  # where the server listens and the configs look
        done = run_block(recipe, cwd=repo, env=env)
    said = done.stdout + done.stderr
    # Its last line, `kill %1`, succeeds only if the server it started is still serving.
    assert done.returncode == 0, said
    # The server listened where the configs look, so it printed no export line.
    assert f"http://127.0.0.1:{CONFIG_PORT}/v1" in done.stdout.splitlines(), said
    assert "export LOSONA_TEST_SERVER_PORT" not in said
    cell = "lexicon-smollm2-naive"
    assert {f"dynamic_render@{cell}", f"dynamic_sample@{cell}", "calls"} <= ran(said), said
    # The group's calls were made, to the server the recipe started.
    group_line = r"dynamic_render lexicon/smollm2/naive \(group model\): (\d+) calls: 0 from"
    asked = re.search(group_line, said)
    assert asked is not None and int(asked.group(1)) > 0, said
    prompts = pl.read_parquet(
        repo / "data" / "dynamic" / "lexicon" / "prompts" / "smollm2" / "naive.parquet"
    )
    # What the docs say of the run: two scenarios, one trial, every row usable.
    assert prompts["scenario_id"].n_unique() == 2 and prompts["trial"].n_unique() == 1
    assert set(prompts["status"]) == {"ok"}, prompts["note"].to_list()
    assert set(prompts["followup_source"]) == {"simulated:local_openai@group-v1"}
    group_calls = pl.read_parquet(
        repo / "data" / "calls" / "dynamic_group" / "lexicon" / "smollm2" / "naive.parquet"
    )
    published = pl.read_parquet(repo / "data" / "calls.parquet")
    assert group_calls.height == prompts.height  # one group call for each arm of each trial
    assert set(group_calls["key"]) <= set(published["key"])
    git("add", "-A", cwd=repo)
    git("commit", "-qm", "the run, its calls published", cwd=repo)

    # Elsewhere: an empty HOME (so an empty call cache) and no server. Every stage runs
    # again; every call, the group model's and the embedded subject's, comes from
    # data/calls.parquet.
    lock, before = (repo / "dvc.lock").read_bytes(), outputs(repo)
    elsewhere = {**env, "HOME": str(tmp_path / "elsewhere")}
    (tmp_path / "elsewhere").mkdir()
    rerun = run_dvc("repro", "--force", cwd=repo, env=elsewhere)
    forced = rerun.stdout + rerun.stderr
    assert f"Running stage 'dynamic_render@{cell}'" in forced
    assert f"Running stage 'dynamic_sample@{cell}'" in forced
    # A cell with calls to make says so in a line "... N to make"; a cell that the
    # published calls answer whole says nothing (and the group's server is gone).
    assert " to make" not in forced, forced
    assert (repo / "dvc.lock").read_bytes() == lock
    assert outputs(repo) == before
    print(f"group calls: {asked.group(1)} in the run, 0 in its forced rerun elsewhere")
