"""The preflight stage as a function: the whole run checked before any other stage runs.

stages/preflight.py composes the config and calls it; tests call it in-process with a
composed config. It has a module of its own, apart from the config stage's (stage.py): it
reaches every family's settings to check them, and the config stage, on which the
first-turn stages depend, must reach none.
"""

from __future__ import annotations

from omegaconf import DictConfig

from losona.config import chosen
from losona.config.preflight import (
    CHECKED_MARK,
    changed_settings_files,
    missing_outputs,
    output_tops,
    refusal,
    remove_empty_folders,
    run_problems,
)
from losona.errors import LosonaError
from losona.files import write_text
from losona.layout import RunLayout


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
    print(f"preflight: every setting and name of the run checked -> {out}")
