"""The whole run checked before any stage runs, so that a refused setting costs no committed
output (docs/configuration.md, "A run is checked whole before any stage runs").

`run_problems` takes the composed config and gives every problem; `run_preflight`, the
stage, turns them into one message, and stages/preflight.py into an exit code.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from omegaconf import DictConfig

from losona.audit.settings import AuditSettings
from losona.core.cli import restore_command
from losona.core.config.loading import (
    PANELS_FILE,
    PARAMS_FILE,
    RUN_FILE,
    available,
    option_file,
    plain,
)
from losona.core.config.reading import chosen, option
from losona.core.config.schemas import judge_kind_settings
from losona.core.errors import LosonaError
from losona.core.files import read_yaml, remove_empty_folders, write_text
from losona.core.layout import RunLayout
from losona.dynamic.settings import DynamicSettings

# The files a user sets a run with (`dvc exp run -S <file>:<key>=...` rewrites them).
RUN_SETTINGS_FILES = (PARAMS_FILE, RUN_FILE, PANELS_FILE, Path(DynamicSettings.FILE))
# The groups every run reads, checked as the stages check them. The families' own schemas
# are named through their imports, not only found through GROUPS, so that this stage
# depends on each schema it checks (dvc.yaml lists the modules a stage imports).
RUN_GROUPS = (
    "paths",
    "dataset",
    "sampling",
    "judge_controls",
    "aggregate",
    AuditSettings.KEY,
    DynamicSettings.KEY,
)
# What the preflight stage writes: always these bytes, so that the stages downstream of it
# run after it but never rerun because of it.
CHECKED_MARK = "checked by stages/preflight.py before any stage of this run ran\n"


def run_problems(cfg: DictConfig) -> list[str]:
    """Every problem of the run the composed config describes, one message each."""
    problems: list[str] = []
    for group in RUN_GROUPS:
        _collect(problems, partial(chosen, cfg, group))
    sweep = plain(cfg.sweep)
    for key, group in (("models", "model"), ("conditions", "condition"), ("judges", "judge")):
        _check_names(problems, f"{PARAMS_FILE}: 'sweep.{key}'", group, sweep[key])
    panels = sweep.get("panels") or []
    _check_names(problems, f"{PANELS_FILE}: 'panels'", "judge", panels)
    for panel in panels:
        _collect(problems, partial(_check_panel, panel, sweep["judges"]))
    _collect(problems, lambda: _check_dynamic(cfg, sweep))
    return list(dict.fromkeys(problems))


def _collect(problems: list[str], check: Callable[[], Any]) -> None:
    """Run one check; a refusal becomes one problem (its lines kept together)."""
    try:
        check()
    except LosonaError as exc:
        problems.append(str(exc))


def _check_names(problems: list[str], where: str, group: str, names: Sequence[Any]) -> None:
    """Each name of a list has its config, and the config is valid; repeats are refused."""
    if not isinstance(names, list):
        problems.append(f"{where}: expected a list of {group} names, found {names!r}")
        return
    repeated = sorted({str(name) for name in names if names.count(name) > 1})
    if repeated:
        problems.append(f"{where}: expected each name once, found {repeated} more than once")
    unknown = [str(name) for name in names if not option_file(group, str(name)).is_file()]
    if unknown:
        files = ", ".join(str(option_file(group, name)) for name in unknown)
        problems.append(
            f"{where}: no config for {unknown} (no {files}); "
            f"the {group} configs here are {available(group)}"
        )
    for name in names:
        if str(name) not in unknown:
            _collect(problems, partial(option, group, str(name)))


def _check_panel(panel: str, judges: Sequence[str]) -> None:
    config = option("judge", panel)
    if not judge_kind_settings(config.kind).combines:
        raise LosonaError(
            f"{PANELS_FILE}: 'panels': expected judges of kind panel, found "
            f"'{panel}' of kind {config.kind} (a judge of the sweep goes in params.yaml's "
            "sweep.judges)"
        )
    outside = [member for member in config.members if member not in judges]
    if outside:
        raise LosonaError(
            f"{option_file('judge', panel)}: 'judge.members': expected judges of {PARAMS_FILE}'s "
            f"sweep.judges {list(judges)} (a panel combines their verdicts), found {outside}"
        )


def _check_dynamic(cfg: DictConfig, sweep: Mapping[str, Sequence[str]]) -> None:
    settings: DynamicSettings = chosen(cfg, "dynamic")
    if not settings.on:
        return
    settings.check_sweep(sweep, where=DynamicSettings.FILE)
    if settings.source != "simulated":
        return  # the group model writes nothing: its config is not read
    if not option_file("model", settings.group_model).is_file():
        raise LosonaError(
            f"{DynamicSettings.FILE}: 'dynamic.group_model': expected one of the model configs "
            f"{available('model')}, found '{settings.group_model}'"
        )
    option("model", settings.group_model)


def refusal(problems: Iterable[str], changed: Sequence[str], missing: Sequence[str]) -> str:
    """The one message that stops a run: each problem, what is missing, how to get it back."""
    lines = list(problems)
    touched = (
        f"no stage ran, but {len(missing)} output(s) that dvc.lock records are not in the "
        "workspace (DVC removes the outputs of the stages a setting leaves out of the "
        "pipeline before any stage runs, so before this check)"
        if missing
        else "no stage ran and no output was touched"
    )
    message = [
        f"this run's settings have {len(lines)} problem(s); {touched}:",
        *(f"  {line}" for line in lines),
        *(f"  missing: {path}" for path in missing),
    ]
    restore = restore_command(changed, outputs=bool(missing))
    if restore:
        what = "settings and outputs git and DVC hold" if missing else "settings git holds"
        message.append(f"  Fix the setting and run again, or get back the {what}: {restore}")
    return "\n".join(message)


def missing_outputs(root: Path = Path(".")) -> list[str]:
    """The outputs dvc.lock records that are not in the workspace (what DVC removed)."""
    lock = root / "dvc.lock"
    if not lock.is_file():
        return []
    stages = (read_yaml(lock) or {}).get("stages", {})
    recorded = {out["path"] for stage in stages.values() for out in stage.get("outs", [])}
    return sorted(path for path in recorded if not (root / path).exists())


def output_tops(cfg: DictConfig) -> list[Path]:
    """The top folders of the run's outputs (data/, reports/), as the paths node names them."""
    paths = plain(cfg.paths)
    values = [value for value in paths.values() if isinstance(value, str)]
    return sorted({Path(Path(value).parts[0]) for value in values if not Path(value).is_absolute()})


def changed_settings_files(root: Path = Path(".")) -> list[str]:
    """The run's settings files whose bytes differ from git HEAD's (what a failed `-S` left).

    Compared by content, not by git's stat cache: DVC rewrites a file in place, and a
    rewrite within the same second and size is one git's index would not notice.
    """
    changed = []
    for path in RUN_SETTINGS_FILES:
        committed = subprocess.run(
            ["git", "show", f"HEAD:{path.as_posix()}"],
            cwd=root,
            capture_output=True,
            check=False,
        )
        if committed.returncode != 0:
            continue  # no commit, or git does not hold the file: nothing to go back to
        here = root / path
        if not here.is_file() or here.read_bytes() != committed.stdout:
            changed.append(str(path))
    return changed


def run_preflight(cfg: DictConfig) -> None:
    """preflight: every problem of the composed run refused in one message, writing nothing;
    otherwise the same few bytes (run.checked), which the first stages depend on.

    It takes the composed config, not a checked layout: checking the config is its work, and
    a bad `paths` value is one of the problems it names together, so the layout is made only
    once the run has none.
    """
    problems = run_problems(cfg)
    if problems:
        for top in output_tops(cfg):
            remove_empty_folders(top)
        raise LosonaError(refusal(problems, changed_settings_files(), missing_outputs()))
    out = RunLayout(chosen(cfg, "paths")).run_checked
    write_text(CHECKED_MARK, out)
    print(
        "preflight: every setting and name of the run checked (a subset's size, once fetch "
        f"reads the dataset) -> {out}"
    )
