"""Exit codes of stage scripts: 2 for a user's mistake, 1 for a crash."""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from omegaconf.errors import InterpolationResolutionError

from losona.core import cli
from losona.core.errors import LosonaError, causes


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each test is a new stage process: no stage has started yet.
    monkeypatch.setattr(cli, "_stage_started", False)
    # launch runs inside pytest's process here, which must go on after a Ctrl-C's exit: a
    # stage process ending at once is tested on its own (tests/test_interrupt.py).
    monkeypatch.setattr(cli, "exit_now", sys.exit)


def exit_code(main: object) -> object:
    with pytest.raises(SystemExit) as exited:
        cli.launch(main)  # type: ignore[arg-type]
    return exited.value.code


def hydra_main(stage: object) -> object:
    """A stand-in for @hydra.main: any failure is printed and becomes exit 1."""

    def main() -> None:
        try:
            stage()  # type: ignore[operator]
        except Exception:
            raise SystemExit(1) from None

    return main


def test_a_config_hydra_cannot_compose_exits_2() -> None:
    def composing_fails() -> None:
        raise SystemExit(1)  # Hydra, before the stage's own code runs

    assert exit_code(composing_fails) == 2


def test_a_crash_inside_a_stage_still_exits_1() -> None:
    @cli.reports_user_errors
    def stage() -> None:
        raise KeyError("a bug")

    assert exit_code(hydra_main(stage)) == 1


def test_a_user_error_inside_a_stage_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    @cli.reports_user_errors
    def stage() -> None:
        raise LosonaError("data/x.parquet: scenario 's1': field: expected this, found that")

    assert exit_code(hydra_main(stage)) == 2
    assert capsys.readouterr().err.startswith("error: data/x.parquet: scenario 's1'")


def test_causes_walks_what_an_exception_was_raised_from_or_while_handling_once() -> None:
    root = LosonaError("broken params.yaml")
    caught: list[BaseException] = []
    try:
        try:
            raise root
        except LosonaError:
            raise KeyError("x") from ValueError("wrapped")  # context: root; cause: ValueError
    except KeyError as outer:
        caught.append(outer)
    found = list(causes(caught[0]))
    assert found[0] is caught[0]
    assert [type(e) for e in found[1:]] == [ValueError, LosonaError]
    assert found[2] is root
    # A chain that loops back on itself is walked once.
    a, b = ValueError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert list(causes(a)) == [a, b]


def test_ctrl_c_in_a_stage_is_one_line_and_exit_130(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from losona.models import call_cache
    from losona.models.call_cache import CallCache
    from losona.models.values import Completion

    # A new stage process: no call stored by an earlier test's cache.
    monkeypatch.setattr(call_cache, "_stored_here", collections.Counter())
    cache_file = tmp_path / "calls.sqlite"

    @cli.reports_user_errors
    def stage() -> None:
        # Two calls complete and are stored, then the user presses Ctrl-C mid-run.
        with CallCache(cache_file) as cache:
            for key in ("a", "b"):
                cache.put(key, "m", Completion("x", "stop", 1, 1, 0.0, None, cached=False))
        raise KeyboardInterrupt

    assert exit_code(hydra_main(stage)) == 130
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"interrupted: stopped by Ctrl-C; 2 completed calls are kept in the call cache "
        f"({cache_file}) and will not be paid again: run the stage again to go on"
    ]
    assert "Traceback" not in err


def test_ctrl_c_before_any_call_says_only_that_it_stopped() -> None:
    assert cli.interrupted_message({}) == "interrupted: stopped by Ctrl-C"
    assert cli.interrupted_message({Path("c.sqlite"): 0}) == "interrupted: stopped by Ctrl-C"
    assert cli.interrupted_message({Path("c.sqlite"): 1}).startswith(
        "interrupted: stopped by Ctrl-C; 1 completed call is kept in the call cache (c.sqlite)"
    )


def test_ctrl_c_in_a_stage_dvc_runs_says_how_to_get_the_committed_run_back(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DVC_STAGE", "sample@smollm2-naive")  # as DVC sets it for every stage
    # A stage that stored no call: other tests in this process may have stored some.
    monkeypatch.setattr(cli, "_calls_stored", dict)

    @cli.reports_user_errors
    def stage() -> None:
        raise KeyboardInterrupt

    assert exit_code(hydra_main(stage)) == 130
    assert capsys.readouterr().err.splitlines() == [
        "interrupted: stopped by Ctrl-C; DVC deleted this stage's outputs before it ran, and "
        "dvc.lock and the settings may hold this run's: to get the committed run back, "
        "touch dvc.lock params.yaml conf/run.yaml && git checkout HEAD -- dvc.lock params.yaml "
        "conf/run.yaml && dvc checkout"
    ]
    monkeypatch.delenv("DVC_STAGE")
    assert exit_code(hydra_main(stage)) == 130
    assert capsys.readouterr().err == "interrupted: stopped by Ctrl-C\n"


def test_an_interpolation_error_with_no_error_of_ours_behind_it_is_a_crash() -> None:
    # Only a resolver's LosonaError is the user's mistake; any other broken resolver is a bug.
    @cli.reports_user_errors
    def stage() -> None:
        raise InterpolationResolutionError("a resolver raised ZeroDivisionError")

    assert exit_code(hydra_main(stage)) == 1


def entry_points() -> list[str]:
    """Every `python -m losona.*` command: a package's __main__.py, or a module that runs as one."""
    modules = []
    for path in sorted((REPO / "losona").rglob("*.py")):
        name = path.relative_to(REPO).with_suffix("").parts
        if path.name == "__main__.py":
            modules.append(".".join(name[:-1]))
        elif 'if __name__ == "__main__":' in path.read_text(encoding="utf-8"):
            modules.append(".".join(name))
    return modules


# Runs a module as `python -m` runs it (runpy, as __main__, sys.argv[0] its file) once per flag
# in one process, so a module's imports are paid once, not once per flag; each run's exit code,
# stdout and stderr are kept apart.
RUN_AS_MAIN = """
import contextlib, io, json, runpy, sys
module, flags, runs = sys.argv[1], sys.argv[2:], []
for flag in flags:
    sys.argv = [module, flag]
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        except SystemExit as exc:
            code = 0 if exc.code is None else exc.code
    runs.append([flag, code, out.getvalue(), err.getvalue()])
print(json.dumps(runs))
"""


@pytest.mark.slow
def test_every_python_m_losona_command_prints_its_usage_for_help_and_exits_0(
    tmp_path: Path,
) -> None:
    modules = entry_points()
    assert {"losona.reproduce", "losona.run_logs", "losona.publishable"} <= set(modules)
    env = {**os.environ, "PYTHONPATH": str(REPO), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    flags = ("--help", "-h")
    # All at once, from a folder that is no run: help needs neither a run nor the others.
    started = {
        module: subprocess.Popen(
            [sys.executable, "-c", RUN_AS_MAIN, module, *flags],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for module in modules
    }
    for module, process in started.items():
        out, err = process.communicate(timeout=120)
        assert (process.returncode, err) == (0, ""), module
        runs = json.loads(out)
        assert [flag for flag, *_ in runs] == list(flags), module
        for flag, code, usage, said in runs:
            assert (code, said) == (0, ""), f"{module} {flag}"
            assert usage.startswith(f"usage: python -m {module} "), f"{module} {flag}: {usage}"


def test_a_refusal_under_dvc_ends_with_the_way_back_to_the_committed_run() -> None:
    message = "conf/run.yaml: 'dataset.limit': 100000 is more than the 44 scenarios"
    assert cli.refused(message, under_dvc=False) == message
    assert cli.refused(message, under_dvc=True) == (
        f"{message}\n  to get the committed run back instead: {cli.RESTORE_COMMITTED_RUN}"
    )
    # One that gives its own way back keeps it, alone.
    own = (
        "judge j cannot judge ...; to get the committed run back: git checkout ... && dvc checkout"
    )
    assert cli.refused(own, under_dvc=True) == own
    settings_only = "1 problem(s); ... get back the settings git holds: git checkout HEAD -- x"
    assert cli.refused(settings_only, under_dvc=True) == settings_only
