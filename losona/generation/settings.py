"""The generation stages' files, and the models they call by option name.

The generate, screen and curate nodes of the config (conf/generation/) are checked with
every other config group in losona/config/.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from losona.config import ModelSpec, Paths, option


def load_model(name: str, extra_params: Mapping[str, Any] | None = None) -> ModelSpec:
    """The model of conf/model/<name>.yaml, with `extra_params` sent on top of its own."""
    spec: ModelSpec = option("model", name)
    return spec.with_params(**extra_params) if extra_params else spec


@dataclass(frozen=True)
class GenerationFiles:
    """Every file the generation stages read or write, from the `paths` node.

    The folders come from conf/paths/default.yaml; the file names are fixed here and in
    generation/dvc.yaml.
    """

    candidates: Path  # generate's candidate table
    screened: Path  # the candidate table with screening outcomes
    screen_verdicts: Path  # one verdict per candidate x baseline x trial
    run_logs: Path  # the folder of run logs (latency, cache hits, spend), not tracked
    generate_summary: Path
    screen_summary: Path
    cells: Path  # the per-cell counts
    review_html: Path
    review_csv: Path
    accept_list: Path
    generated_dir: Path

    @classmethod
    def from_paths(cls, paths: Paths) -> GenerationFiles:
        """The files under the configured folders."""
        data, reports = Path(paths.generation_dir), Path(paths.generation_reports_dir)
        return cls(
            candidates=data / "candidates.parquet",
            screened=data / "screened.parquet",
            screen_verdicts=data / "screen_verdicts.parquet",
            run_logs=data / "logs",
            generate_summary=reports / "generate.json",
            screen_summary=reports / "screen.json",
            cells=reports / "cells.csv",
            review_html=reports / "review.html",
            review_csv=reports / "review.csv",
            accept_list=Path(paths.generation_accept),
            generated_dir=Path(paths.generated_dir),
        )
