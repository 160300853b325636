"""Shared fixtures: the real Hydra config composed in a scratch working directory.

Stage code resolves conf/, params.yaml and every output path relative to the working
directory (as DVC runs it), so each test gets its own directory with the repo's conf/
linked in and a copy of params.yaml, and writes nothing inside the repository.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import io
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from filelock import FileLock
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import configure_log
from omegaconf import DictConfig, open_dict

import losona.core.config  # noqa: F401 - registers the ${dvc_param:...} resolver
from losona.core.config import Paths, load_option
from losona.core.contracts import VERDICT_SCHEMA, table
from losona.core.layout import RunLayout
from losona.models.prompt_states import folder_beside
from losona.pipeline.recorded import RecordedSettings
from losona.reproduce.checks import Run, check_stages, published_calls
from losona.reproduce.compare import Check
from losona.reproduce.replay import replaying

REPO = Path(__file__).resolve().parents[1]
CONF_DIR = REPO / "conf"
# The git identity of whoever runs the suite: stages that commit (dvc exp) need one, and a
# test's own HOME (below) would otherwise hide it.
USER_GITCONFIG = Path.home() / ".gitconfig"
# The processes a test starts run as in a user's shell, which writes Python's bytecode caches
# into the code it imports: a machine that tells Python not to (CI's) once hid that
# publishable refused every run with a __pycache__/ in losona/.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
# Every DVC command a test starts, itself or through the code under test (losona's own `dvc ...
# --json` calls), would otherwise leave a daemon behind to send DVC's usage report: a Python
# process importing DVC, per command, that nothing of ours reads.
os.environ["DVC_NO_ANALYTICS"] = "1"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Slow tests first. xdist deals tests out in collection order, so a long test dealt
    late (test_publish.py's group takes minutes, and its name sorts it late) keeps one worker
    busy after the other has run out of tests; dealt last, the quick ones even out the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


@pytest.fixture(autouse=True)
def kept_in_its_group(request: pytest.FixtureRequest) -> None:
    """Under `--dist loadgroup` (make test), xdist sends the tests of one `xdist_group` to one
    worker by adding the group to their node ids. Where it cannot (pytest 9.2 with xdist 3.8,
    pytest-dev/pytest-xdist#1386) nothing fails: the group is dealt out test by test and its
    shared module fixture, a whole published run, is made once per worker. Fail instead."""
    marks = list(request.node.iter_markers("xdist_group"))
    dealt_by_group = getattr(request.config.option, "loadgroup", False)
    if marks and dealt_by_group and "@" not in request.node.nodeid:
        pytest.fail(
            f"pytest-xdist did not keep this test in its group {marks[0].args[0]!r}, so the "
            f"group's tests run apart (pytest {pytest.__version__}: see "
            "pytest-dev/pytest-xdist#1386, and pyproject.toml's pin of pytest)"
        )


def new_home(root: Path, mpl_dir: Path) -> dict[str, str]:
    """The environment of a HOME made at `root`: empty but for the user's git identity."""
    root.mkdir(parents=True, exist_ok=True)
    if USER_GITCONFIG.is_file():
        shutil.copy(USER_GITCONFIG, root / ".gitconfig")
    # Matplotlib keeps its font cache under HOME; built anew in every test's HOME it costs
    # seconds per process, so one per worker is shared (a cache of fonts, not of a run).
    return {"HOME": str(root), "MPLCONFIGDIR": str(mpl_dir)}


@pytest.fixture(scope="session", autouse=True)
def worker_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A HOME per test process (per xdist worker), for what runs before a test's own HOME
    is set: module- and session-scoped fixtures. Their default call cache
    (~/.cache/losona/calls.sqlite) is then never the user's, nor another worker's."""
    root = tmp_path_factory.mktemp("worker-home")
    with pytest.MonkeyPatch.context() as patch:
        for name, value in new_home(root, root / ".config" / "matplotlib").items():
            patch.setenv(name, value)
        yield root


@pytest.fixture(autouse=True)
def own_home(
    worker_home: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Each test its own HOME, so its own default call cache: no answer cached by another
    test (in this process or a parallel one) can make it pass, and it leaves none behind.
    A test that needs a cache shared between two runs names one (paths.call_cache=...) or
    runs both inside itself."""
    home = tmp_path_factory.mktemp("home")
    for name, value in new_home(home, worker_home / ".config" / "matplotlib").items():
        monkeypatch.setenv(name, value)
    return home


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A scratch working directory that looks like the repo root to stage code."""
    (tmp_path / "conf").symlink_to(CONF_DIR)
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture(autouse=True)
def slow_if_it_starts_python(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """`slow` means what it says: a test that starts a Python process (a stage script, DVC,
    mkdocs, a server: seconds each, most of it imports) and is not marked slow fails, naming
    the command, so `pytest -m "not slow"` stays quick as tests are added."""
    if request.node.get_closest_marker("slow") is not None:
        yield
        return
    started: list[str] = []
    real_init = subprocess.Popen.__init__

    def init(self: subprocess.Popen[Any], args: Any, *rest: Any, **options: Any) -> None:
        argv = [args] if isinstance(args, str | bytes | os.PathLike) else list(args)
        program = str(argv[0]) if argv else ""
        if program == sys.executable or Path(program).name.startswith("python"):
            started.append(" ".join(str(a) for a in argv[:4]))
        real_init(self, args, *rest, **options)

    monkeypatch.setattr(subprocess.Popen, "__init__", init)
    yield
    if started:
        pytest.fail(f"starts a Python process, so mark it @pytest.mark.slow: {started[0]}")


def compose_config(overrides: list[str] | tuple[str, ...] = ()) -> DictConfig:
    """The real config, composed with Hydra's compose API and the given overrides."""
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides))


def run_layout(**paths: str) -> RunLayout:
    """The default layout (conf/paths/default.yaml), with the given paths set elsewhere."""
    node = load_option("paths", "default").paths
    return RunLayout(Paths.from_config({**node, **paths}))


@pytest.fixture
def make_cfg(workdir: Path) -> Callable[..., DictConfig]:
    """Compose the real config inside `workdir`, shrunk to one condition by default."""

    def make(*overrides: str) -> DictConfig:
        return compose_config(["sweep.conditions=[naive]", *overrides])

    return make


def run_stage(
    name: str, *overrides: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `python stages/<name>.py` as a user would, from `cwd` (default: the current dir)."""
    return subprocess.run(
        [sys.executable, str(REPO / "stages" / f"{name}.py"), *overrides],
        cwd=cwd or Path.cwd(),
        capture_output=True,
        text=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )


@functools.cache
def _stage_main(name: str) -> Callable[..., None]:
    """The Hydra main of `stages/<name>.py`, imported as a module (its `__main__` block not run)."""
    spec = importlib.util.spec_from_file_location(f"stage_{name}", REPO / "stages" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.main  # type: ignore[no-any-return]


def call_stage(
    name: str, *overrides: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run stage `name` in this process, as `run_stage` runs its script, and return the same
    record (exit code, stdout, stderr): seconds of interpreter start and imports saved per run.

    Hydra's `main` takes an already composed config and calls the stage with it, so what
    runs is the script's own main: its checks, its `error:` line and exit code 2. The config
    is composed with the overrides the way the script would compose it, and Hydra's own
    record of the run (the choices and overrides a refusal names) is set as the script's
    would be. What only the script does, Hydra refusing an override before the stage starts
    (exit 2 through `launch`), is `run_stage`'s to test.
    """
    main = _stage_main(name)
    stdout, stderr = io.StringIO(), io.StringIO()
    hydra_config = HydraConfig.instance()
    with contextlib.chdir(cwd or Path.cwd()):
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="config", overrides=list(overrides), return_hydra_config=True)
        hydra_config.set_config(cfg)
        with open_dict(cfg):
            del cfg["hydra"]  # as Hydra hands a stage its config: without its own node
        root = logging.getLogger()
        handlers, level = root.handlers[:], root.level
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                configure_log(HydraConfig.get().job_logging)  # the stage's log, to its stdout
                main(cfg)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            hydra_config.cfg = None  # a config composed by a later test is not a stage's
            for handler in root.handlers:
                if handler not in handlers:
                    handler.close()
            root.handlers[:], root.level = handlers, level
    argv = [sys.executable, str(REPO / "stages" / f"{name}.py"), *overrides]
    return subprocess.CompletedProcess(argv, code, stdout.getvalue(), stderr.getvalue())


BASE_ROW: dict[str, Any] = {
    "scenario_id": "standup__binary_answer_norm__fixture",
    "event_type": "standup",
    "norm_id": "binary_answer_norm",
    "venue": "workplace",
    "channel_description": "#team-alpha, a four-person data team's standup thread",
    "subject": "Noor",
    "subject_bio": "Data engineer who owns the nightly loads.",
    "cast": [
        {"name": "Ana", "bio": "Team lead."},
        {"name": "Bo", "bio": "Analyst."},
    ],
    "turns": [
        {
            "index": 1,
            "actor": "Ana",
            "content": "Morning! Is the dashboard refreshed?",
            "is_demo": False,
        },
        {"index": 2, "actor": "Bo", "content": "Yes.", "is_demo": True},
        {"index": 3, "actor": "Ana", "content": "Thanks. Loads look slow today.", "is_demo": False},
    ],
    "elicitor_index": 4,
    "elicitor_actor": "Ana",
    "elicitor_content": "Noor, did the nightly load finish?",
    "norm_statement": (
        "In this group, a yes/no question is answered with a bare yes or no and nothing else."
    ),
    "example_elicitor": "Is the printer fixed?",
    "example_compliant_response": "Yes.",
    "example_breaching_response": "Yes, I swapped the toner this morning so it should be fine now.",
    "end_goal": "Find out why the loads are slow.",
}


@pytest.fixture
def scenario_row() -> Callable[..., dict[str, Any]]:
    """A small valid scenario row in the contract's shape; keyword arguments replace fields."""

    def make(**changes: Any) -> dict[str, Any]:
        row = copy.deepcopy(BASE_ROW)
        row.update(changes)
        return row

    return make


FOLLOWUP_FIXTURES = REPO / "tests" / "fixtures" / "followups"


def stand_in_followup(cast: Sequence[Mapping[str, Any]], elicitor_actor: str) -> dict[str, Any]:
    """Follow-up material for testing plumbing only (valid, saying nothing), for a scenario
    whose file has none yet; the bundled set's own material is written and reviewed apart."""
    actor = cast[0]["name"]
    return {
        "sanction": [{"actor": actor, "content": "hm, ok then"}],
        "neutral": [{"actor": actor, "content": "ok, noted then"}],
        "elicitor": {"actor": elicitor_actor, "content": "and what about the other thing?"},
    }


def drop_followup(repo: Path, scenario_id: str) -> None:
    """Take a scenario's follow-up material out of the copy's scenario file (for the paths a
    scenario without material takes: the group model writes its second elicitor)."""
    target = repo / "losona" / "data" / "scenarios" / f"{scenario_id}.yaml"
    text = target.read_text(encoding="utf-8")
    assert "\nfollowup:" in text, f"{target} has no follow-up material"
    target.write_text(text.split("\nfollowup:", 1)[0] + "\n", encoding="utf-8")


# What a run in this checkout writes where git does not ignore it (the lock, DVC's metrics):
# a run's record, not the repository's. Copied, a lock would name outputs the copy lacks.
RUN_RECORDS = ("dvc.lock", "data/", "reports/")


def copy_repo(target: Path) -> Path:
    """Copy the repository's files (tracked, and new ones but a run's records, not ignored)
    to `target`, a new git repo: the same after `make repro` as on a fresh clone."""

    def git_files(*flags: str) -> list[str]:
        listed = subprocess.run(
            ["git", "ls-files", *flags, "-z"], cwd=REPO, capture_output=True, text=True, check=True
        )
        return list(filter(None, listed.stdout.split("\0")))

    new = git_files("--others", "--exclude-standard")
    for name in git_files() + [n for n in new if not n.startswith(RUN_RECORDS)]:
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    return target


@pytest.fixture
def repo_copy(tmp_path: Path) -> Iterator[Path]:
    """A copy of the repository's files (tracked and new, not ignored) as its own git repo."""
    yield copy_repo(tmp_path / "repo")


def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder of this test run that every xdist worker sees (pytest's own without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


# The golden run: the smallest whole run of the offline default (the embedded model, the
# naive condition, the lexicon judge, two scenarios, K = 1), as DVC writes it and committed.
GOLDEN_SWEEP = {"models": ["smollm2"], "conditions": ["naive"], "judges": ["lexicon"]}
GOLDEN_IDENTITY = {"user.email": "user@example.org", "user.name": "a user"}


def prompt_states(home: Path) -> Path:
    """Where the embedded model keeps its prompt states on a machine with this HOME: beside
    the default call cache (conf/paths/default.yaml)."""
    cache = str(load_option("paths", "default").paths.call_cache)
    assert cache.startswith("~/"), cache
    return folder_beside(home / cache.removeprefix("~/"))


@dataclass(frozen=True)
class GoldenRun:
    """The committed golden run, what its `dvc repro` printed, and the HOME it was made in."""

    repo: Path
    output: str
    home: Path

    def copy(self, target: Path) -> Path:
        """A copy of the run (git history, DVC cache and outputs) for one test to change."""
        shutil.copytree(self.repo, target, symlinks=True)
        return target

    def lend_prompt_states(self, home: Path) -> None:
        """Give `home` the prompt states the embedded model kept while making the run, as the
        machine that ran it has them: a prompt that starts with a first-turn prompt (a second
        turn, another trial) is then read from where that one ended, not from its start.
        A state changes no reply (tests/test_models_smollm2.py), and `home`'s call cache stays
        cold. None are kept where this CPU's batching changes the numbers: nothing to lend."""
        kept = prompt_states(self.home)
        if kept.is_dir():
            shutil.copytree(kept, prompt_states(home))


@pytest.fixture(scope="session")
def golden_run(tmp_path_factory: pytest.TempPathFactory) -> GoldenRun:
    """The golden run, made once per test run and shared by every worker: tests that start
    from a small committed run copy it rather than each running `dvc repro` again. It was
    made with a HOME of its own, so a copy run with the test's HOME has a cold call cache."""
    root = shared_dir(tmp_path_factory) / "golden-run"
    with FileLock(f"{root}.lock"):
        if not (root / "made").is_file():
            shutil.rmtree(root, ignore_errors=True)
            repo = copy_repo(root / "repo")
            for key, value in GOLDEN_IDENTITY.items():
                subprocess.run(["git", "config", key, value], cwd=repo, check=True)
            run = repo / "conf" / "run.yaml"
            text = run.read_text()
            assert "  trials: 3 " in text and "  limit: null " in text  # else nothing changes
            run.write_text(
                text.replace("  trials: 3 ", "  trials: 1 ").replace(
                    "  limit: null ", "  limit: 2 "
                )
            )
            params = {"dataset": "bundled", "sweep": GOLDEN_SWEEP}
            (repo / "params.yaml").write_text(yaml.safe_dump(params))
            (repo / "dvc.lock").unlink(missing_ok=True)
            env = {**os.environ, **new_home(root / "home", root / "home" / ".matplotlib")}
            made = run_dvc("repro", cwd=repo, env=env)
            (root / "repro.out").write_text(made.stdout)
            subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
            subprocess.run(["git", "commit", "-qm", "a golden run"], cwd=repo, check=True)
            (root / "made").touch()
    return GoldenRun(root / "repo", (root / "repro.out").read_text(), root / "home")


def run_dvc(
    *args: str,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    root: Path | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run DVC in `cwd` with this interpreter first on PATH, importing `losona` from `root`.

    PYTHONPATH makes a repo copy self-contained: its stages run its own package code and
    data, not the installed checkout's. `root` is the copy (default: `cwd`; the generation
    project runs in its generation/ folder); `env` replaces the environment (HOME, say).
    With check=False a failing command is returned rather than failing the test.
    """
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **(os.environ if env is None else env),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(root or cwd),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "DVC_NO_ANALYTICS": "1",
    }
    # Its output goes to files, not pipes: a worker DVC leaves running (`dvc queue start`,
    # `dvc exp run --run-all`) holds a pipe open until it has idled out, 10 s after the
    # queue is empty, and reading a pipe to its end would wait for that.
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        done = subprocess.run(
            [sys.executable, "-m", "dvc", *args], cwd=cwd, stdout=stdout, stderr=stderr, env=env
        )
        stdout.seek(0)
        stderr.seek(0)
        result = subprocess.CompletedProcess(
            done.args, done.returncode, stdout.read(), stderr.read()
        )
    if check:
        assert result.returncode == 0, (
            f"dvc {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
        )
    return result


def verdict_table(
    labels: Mapping[tuple[str, str, str], Sequence[Sequence[bool | None]]],
    scenarios: pl.DataFrame,
) -> pl.DataFrame:
    """Verdicts in the contract's shape: per (judge, model, condition), each scenario's labels.

    `scenarios` needs scenario_id, event_type and norm_id; a None label is an unparseable
    judge reply.
    """
    rows = []
    for (judge, model, condition), per_scenario in labels.items():
        ids = scenarios.select("scenario_id", "event_type", "norm_id").iter_rows()
        for (scenario_id, event, norm), trial_labels in zip(ids, per_scenario, strict=True):
            for trial, label in enumerate(trial_labels):
                rows.append(
                    {
                        "scenario_id": scenario_id,
                        "event_type": event,
                        "norm_id": norm,
                        "condition": condition,
                        "subject_model": model,
                        "trial": trial,
                        "response": f"{model} answers {scenario_id} under {condition} ({trial})",
                        "judge": judge,
                        "judge_model": f"{judge}-model",
                        "judge_version": "test-1",
                        "complies": label,
                        "elicitor_uptake": "",
                        "norm_requirement": "",
                        "evidence": "",
                        "reasoning": f"{judge} reasons about trial {trial}",
                        "judge_status": "ok" if label is not None else "unparseable",
                    }
                )
    return table(rows, VERDICT_SCHEMA, sort_by=[])


# Headless Chromium for the tests that look at a page as a browser lays it out.
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="Debian's chromium is not installed (apt-get install chromium); CI installs it",
)


def loaded_dom(html: str, folder: Path, *flags: str) -> str:
    """The page's DOM after Chromium has loaded it and run whatever it would run."""
    assert CHROMIUM is not None
    page = folder / "page.html"
    page.write_text(html, encoding="utf-8")
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={folder / 'profile'}",
            *flags,
            "--virtual-time-budget=5000",  # let error and load handlers fire before the dump
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "</html>" in done.stdout, done.stderr[-2000:]
    return done.stdout


def rerun_stages(layout: RunLayout, record: dict[str, Any], *stages: str) -> Check:
    """The stages named, run again by reproduce on the run `layout` places, as `record` says."""
    run = Run(Check(), RecordedSettings(layout, record), layout, published_calls(layout))
    with replaying(layout) as replay:
        check_stages(run, replay, only=stages)
    return run.check
