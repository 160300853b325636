"""A new user's first hour, as one test: the documented recipe from clone to a checked copy.

On a temporary copy of the repository, as its user would: their own model served by
llama.cpp's own server (`python -m llama_cpp.server`, the embedded model's GGUF), configured
as docs/models.md says; two judges, the lexicon rules and the test server's scripted judge;
a subset and K set with the README's recipe (`dvc exp run -S conf/run.yaml:... -S
'sweep...'`); a second experiment, compared with the first; the report; the publish check;
then publishing to a bare git repository and a local DVC remote, and checking the run in a
second clone with an empty HOME and no server at all: `dvc pull`, `dvc status`,
`python -m losona.reproduce`, `dvc repro --force` with zero calls and an identical
dvc.lock. Lean on purpose (two scenarios, K = 1, one condition).
"""

from __future__ import annotations

import base64
import html
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from conftest import copy_repo, run_dvc
from test_llama_server import documented_llamacpp_config, llama_server  # noqa: F401

from losona.testing.openai_server import OpenAIServer
from losona.testing.scripted_judge import ScriptedJudge

pytestmark = pytest.mark.slow

UP_TO_DATE = "Data and pipelines are up to date."
# The scripted judge's address as conf/judge/local_openai.yaml ships it.
SHIPPED_JUDGE_URL = "http://127.0.0.1:${oc.env:LOSONA_TEST_SERVER_PORT,8765}/v1"
RECIPE = [
    "-S",
    "conf/run.yaml:dataset.limit=2",
    "-S",
    "conf/run.yaml:sampling.trials=1",
    "-S",
    "sweep.models=[my_llamacpp]",
    "-S",
    "sweep.conditions=[naive]",
    "-S",
    "sweep.judges=[lexicon,local_openai]",
]


def git(*args: str, cwd: Path) -> str:
    identity = ["-c", "user.email=new@example.org", "-c", "user.name=new user"]
    done = subprocess.run(["git", *identity, *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def machine(home: Path) -> dict[str, str]:
    """A machine of its own: its HOME (so its own call cache), no provider key."""
    home.mkdir(parents=True, exist_ok=True)
    return {
        **{k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        "HOME": str(home),
    }


def python(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m ...` in the repository, importing its own package, as its user types it."""
    bin_dir = str(Path(sys.executable).parent)
    return subprocess.run(
        [sys.executable, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        env={
            **env,
            "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
            "PYTHONPATH": str(repo),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "DVC_NO_ANALYTICS": "1",
        },
        check=False,
    )


def page_text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def figures_text(page: str) -> str:
    """The text of every figure embedded in the report (SVG data URIs)."""
    found = re.findall(r'src="data:image/svg\+xml;base64,([^"]+)"', page)
    return " ".join(page_text(base64.b64decode(svg).decode()) for svg in found)


def test_the_first_hour_from_the_recipe_to_a_checked_clone(
    llama_server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    started = time.monotonic()
    repo = copy_repo(tmp_path / "mine")
    env = machine(tmp_path / "home")
    # The identity a user's global git config holds (DVC commits each experiment).
    git("config", "user.email", "new@example.org", cwd=repo)
    git("config", "user.name", "new user", cwd=repo)
    # Their own model, written as docs/models.md shows it; only the address is theirs.
    model = documented_llamacpp_config() | {"api_base": llama_server}
    (repo / "conf" / "model" / "my_llamacpp.yaml").write_text(yaml.safe_dump(model))
    # The scripted judge as shipped, on this test's free port (the shipped config says 8765
    # unless LOSONA_TEST_SERVER_PORT says otherwise).
    with OpenAIServer(reply=ScriptedJudge()) as judge_server:
        judge = repo / "conf" / "judge" / "local_openai.yaml"
        judge.write_text(judge.read_text().replace(SHIPPED_JUDGE_URL, judge_server.url))
        (repo / "dvc.lock").unlink(missing_ok=True)
        git("add", "-A", cwd=repo)
        git("commit", "-qm", "my model and the scripted judge", cwd=repo)

        # The recipe: a subset, K, their model and two judges, in one command.
        first = run_dvc("exp", "run", "--name", "two-judges", *RECIPE, cwd=repo, env=env)
        said = first.stdout + first.stderr
        # Under DVC, no terminal: the llama.cpp cell says how far it is.
        assert "sample my_llamacpp/naive: 2 calls: 0 from the call cache, 2 to make" in said
        assert re.search(r"sample my_llamacpp/naive: 2 of 2 calls made \(failed 0", said)
        judged = judge_server.request_count
        print(f"first experiment done after {time.monotonic() - started:.0f} s")
        assert judged == 2 + 4  # two responses, and both examples of two scenarios

        # A second experiment, one judge only: no model call, then both side by side.
        run_dvc(
            "exp", "run", "--name", "rules-only", "-S", "sweep.judges=[lexicon]", cwd=repo, env=env
        )
        compared = python(repo, env, "-m", "losona.experiments", "two-judges", "rules-only")
        assert compared.returncode == 0, compared.stderr
        rows = compared.stdout.splitlines()
        assert rows[0].split()[0::2] == ["two-judges", "rules-only"]
        assert re.search(r"^K \(sampling\.trials\)\s+1\s+1$", compared.stdout, re.M)
        assert re.search(r"^subset\s+limit 2, seed 0\s+limit 2, seed 0$", compared.stdout, re.M)
        assert re.search(r"^judges\s+lexicon, local_openai\s+lexicon$", compared.stdout, re.M)
        assert re.search(
            r"^-- judge agreement % \(kappa\)\nlexicon vs local_openai\s+"
            r"[\d.]+ \(([-\d.]+|n/a)\)\s+n/a$",
            compared.stdout,
            re.M,
        ), compared.stdout
        # One K (no "!" line): its accuracy rows are named Acc@1.
        assert re.search(
            r"^-- local_openai / my_llamacpp \(judge / model\).*\n"
            r"Acc@1: naive\s+[\d.]+ \[[\d.]+, [\d.]+\]\s+n/a$",
            compared.stdout,
            re.M,
        ), compared.stdout
        assert not re.search(r"^!", compared.stdout, re.M)

        # Back to the two-judge run, the one to publish.
        run_dvc("exp", "apply", "two-judges", cwd=repo, env=env)
        assert UP_TO_DATE in run_dvc("status", cwd=repo, env=env).stdout
        assert judge_server.request_count == judged  # everything since came from the caches

    # The report says what it is: labels, the test double, N and the subset everywhere.
    page = (repo / "reports" / "index.html").read_text()
    text = page_text(page)
    assert "Judged by Lexicon rules (offline) (lexicon, lexicon@" in text
    assert (
        "Scripted judge (local test server) [TEST DOUBLE] (local_openai, openai/scripted-judge)"
        in text
    )
    assert "Test doubles: Scripted judge (local test server) [TEST DOUBLE]." in text
    assert "My model (llama.cpp)" in text and "My model (llama.cpp) [TEST DOUBLE]" not in text
    assert "Subset: this run covers 2 of 44 scenarios" in text
    assert "sample: My model (llama.cpp) / Naive 2" in text  # run facts: the cell's 2 calls
    drawn = figures_text(page)
    # Figures 2-4 and a heatmap per judge (lexicon, local_openai).
    assert drawn.count("N = 2 scenarios, K = 1 trial each") == 5
    assert drawn.count("SUBSET: 2 of 44 scenarios") == 5
    assert "judge: Scripted judge (local test server) [TEST DOUBLE]" in drawn

    # Publish: only a clean run. A judge config written afterwards and used nowhere keeps
    # it clean; then commit, tag and push, the calls with the outputs.
    (repo / "conf" / "judge" / "written_later.yaml").write_text(
        "name: written_later\nkind: lexicon\n"
    )
    # Not yet: the applied experiment's settings and record are not committed.
    unready = python(repo, env, "-m", "losona.publishable")
    assert unready.returncode == 3, unready.stdout
    assert unready.stdout.startswith("publishable: no. git does not hold, committed,")
    assert "\n  conf/run.yaml (modified)\n" in unready.stdout
    assert "written_later" not in unready.stdout  # a config the sweep does not use
    bare, remote = tmp_path / "run.git", tmp_path / "dvc-remote"
    git("init", "-q", "--bare", str(bare), cwd=tmp_path)
    run_dvc("remote", "add", "--default", "storage", str(remote), cwd=repo, env=env)
    git("add", "-A", cwd=repo)
    git(
        "commit",
        "-qm",
        "my first run: 2 scenarios, K = 1, my llama.cpp model, two judges",
        cwd=repo,
    )
    run_dvc("push", cwd=repo, env=env)
    ready = python(repo, env, "-m", "losona.publishable")
    assert ready.returncode == 0 and ready.stdout.startswith("publishable: yes."), ready.stdout
    git("tag", "run-1", cwd=repo)
    git("push", "-q", str(bare), "HEAD:refs/heads/main", "run-1", cwd=repo)

    print(f"published after {time.monotonic() - started:.0f} s")
    # A colleague checks it: another machine, an empty cache, and no server running at all,
    # so a single model call would fail the rerun.
    clone = tmp_path / "colleague"
    git("clone", "-q", "--branch", "run-1", str(bare), str(clone), cwd=tmp_path)
    theirs = machine(tmp_path / "home-colleague")
    run_dvc("pull", cwd=clone, env=theirs)
    assert UP_TO_DATE in run_dvc("status", cwd=clone, env=theirs).stdout
    checked = python(clone, theirs, "-m", "losona.reproduce")
    assert checked.returncode == 0 and "every value matches" in checked.stdout, checked.stdout
    lock = (clone / "dvc.lock").read_bytes()
    run_dvc("repro", "--force", cwd=clone, env=theirs)
    assert (clone / "dvc.lock").read_bytes() == lock
    assert python(clone, theirs, "-m", "losona.publishable").returncode == 0

    # A sweep with one more model: `dvc repro --dry` cannot show it (DVC stops at the first
    # stage whose input does not exist yet); the docs' two commands instead.
    other = yaml.safe_load((clone / "conf" / "model" / "my_llamacpp.yaml").read_text())
    written = clone / "conf" / "model" / "my_other.yaml"
    written.write_text(yaml.safe_dump(other | {"name": "my_other"}))
    params = yaml.safe_load((clone / "params.yaml").read_text())
    params["sweep"]["models"].append("my_other")
    (clone / "params.yaml").write_text(yaml.safe_dump(params))
    pending = run_dvc("status", cwd=clone, env=theirs).stdout
    assert "sample@my_other-naive:" in pending and "judge@local_openai-my_other-naive:" in pending
    priced = python(clone, theirs, "stages/sample.py", "sampling.dry_run=true")
    assert priced.returncode == 0, priced.stderr
    assert "sample (dry run, no calls made): the sweep, 2 cells: 4 calls" in priced.stdout
    git("checkout", "-q", "params.yaml", cwd=clone)
    written.unlink()

    # What the run rests on, changed in the clone: refused, each change named.
    (clone / "conf" / "condition" / "written_later.yaml").write_text(
        "name: written_later\nlabel: L\n"
    )
    mine = clone / "conf" / "model" / "my_llamacpp.yaml"
    mine.write_text(mine.read_text().replace("My model (llama.cpp)", "Renamed"))
    run = clone / "conf" / "run.yaml"
    run.write_text(run.read_text().replace("trials: 1", "trials: 2"))
    refused = python(clone, theirs, "-m", "losona.publishable")
    assert refused.returncode == 3, refused.stdout + refused.stderr
    assert refused.stdout.startswith("publishable: no. dvc status is not clean")
    # The file in the folder DVC names, not the folder.
    assert "render: changed deps: conf/condition/written_later.yaml (new)" in refused.stdout
    assert (
        "model_config@my_llamacpp: changed deps: conf/model/my_llamacpp.yaml (modified)"
        in refused.stdout
    )
    assert "conf/run.yaml (sampling.trials modified)" in refused.stdout
    # ... and git does not hold them as they are (docs/reproducing.md shows this output).
    assert "Also, git does not hold, committed, 3 file(s) the run rests on" in refused.stdout
    for line in (
        "conf/condition/written_later.yaml (new)",
        "conf/model/my_llamacpp.yaml (modified)",
        "conf/run.yaml (modified)",
    ):
        assert f"\n  {line}\n" in refused.stdout
    assert "conf/judge" not in refused.stdout
