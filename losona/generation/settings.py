"""The generate, screen and curate nodes of the config (conf/generation/), read and checked.

Each reader refuses a wrong value with a message naming the setting and what it must be,
before any model is called.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from losona.config import load_option, plain
from losona.errors import LosonaError
from losona.models import ModelSpec

CELL_MODES = ("all", "per_norm", "list")
STRUCTURED_OUTPUTS = ("json_schema", "json_object", "none")
# screen.keep: when the baselines' outcomes keep a candidate.
KEEP_RULES = {
    "all": "kept when every baseline breaches it (no baseline adapts by default)",
    "majority": "kept when more than half of the baselines breach it",
}
SET_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class _Node:
    """One config node, read key by key; errors name `<node>.<key>`."""

    def __init__(self, node: Any, name: str, keys: frozenset[str]) -> None:
        if not isinstance(node, Mapping):
            raise LosonaError(f"{name}: expected a mapping of settings, found {node!r}")
        unknown = sorted(set(node) - keys)
        if unknown:
            raise LosonaError(f"{name}: unknown setting(s) {unknown}; expected {sorted(keys)}")
        missing = sorted(keys - set(node))
        if missing:
            raise LosonaError(f"{name}: missing setting(s) {missing}")
        self.node = node
        self.name = name

    def fail(self, key: str, expected: str) -> LosonaError:
        return LosonaError(f"{self.name}.{key}: expected {expected}, found {self.node[key]!r}")

    def text(self, key: str) -> str:
        value = self.node[key]
        if not isinstance(value, str) or not value.strip():
            raise self.fail(key, "non-empty text")
        return value.strip()

    def choice(self, key: str, options: tuple[str, ...]) -> str:
        value = self.node[key]
        if value not in options:
            raise self.fail(key, f"one of {list(options)}")
        return str(value)

    def count(self, key: str, minimum: int = 1) -> int:
        value = self.node[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise self.fail(key, f"an integer of at least {minimum}")
        return value

    def names(self, key: str, allow_null: bool = False) -> tuple[str, ...] | None:
        value = self.node[key]
        if value is None and allow_null:
            return None
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v.strip() for v in value)
        ):
            raise self.fail(key, "a non-empty list of names" + (" or null" if allow_null else ""))
        if len(set(value)) != len(value):
            raise self.fail(key, "names without repeats")
        return tuple(value)

    def cost_cap(self, key: str) -> float | None:
        value = self.node[key]
        if value is None:
            return None
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
        ):
            raise self.fail(key, "null or a non-negative number of dollars")
        return float(value)


@dataclass(frozen=True)
class CellSelection:
    """Which (event, norm) cells get candidates, and in which venues (generate.cells)."""

    mode: str  # all | per_norm | list
    per_norm: int
    cells: tuple[str, ...]  # the `list` entries: event/norm or event/norm@venue
    venues: tuple[str, ...] | None  # None: every venue of the catalog

    @classmethod
    def from_config(cls, node: Any) -> CellSelection:
        """Check the generate.cells node."""
        reader = _Node(node, "generate.cells", frozenset({"mode", "per_norm", "list", "venues"}))
        mode = reader.choice("mode", CELL_MODES)
        cells = node["list"] or []
        if not isinstance(cells, list) or not all(isinstance(c, str) for c in cells):
            raise reader.fail("list", "a list of cells written event/norm or event/norm@venue")
        if mode == "list" and not cells:
            raise reader.fail("list", "at least one cell when mode is list")
        return cls(
            mode=mode,
            per_norm=reader.count("per_norm"),
            cells=tuple(cells),
            venues=reader.names("venues", allow_null=True),
        )

    def describe(self) -> dict[str, Any]:
        """The selection as plain values, for the run's summary."""
        chosen: dict[str, Any] = {"mode": self.mode, "venues": list(self.venues or []) or None}
        if self.mode == "per_norm":
            chosen["per_norm"] = self.per_norm
        if self.mode == "list":
            chosen["list"] = list(self.cells)
        return chosen


@dataclass(frozen=True)
class GenerateSettings:
    """The generate node."""

    generator: str
    params: dict[str, Any]
    structured_output: str
    cells: CellSelection
    candidates_per_cell: int
    seed: int
    max_cost_usd: float | None

    @classmethod
    def from_config(cls, node: Any) -> GenerateSettings:
        """Check the generate node."""
        keys = {
            "generator",
            "params",
            "structured_output",
            "cells",
            "candidates_per_cell",
            "seed",
            "max_cost_usd",
        }
        reader = _Node(node, "generate", frozenset(keys))
        params = node["params"] or {}
        if not isinstance(params, Mapping):
            raise reader.fail("params", "a mapping of generation parameters")
        return cls(
            generator=reader.text("generator"),
            params=dict(params),
            structured_output=reader.choice("structured_output", STRUCTURED_OUTPUTS),
            cells=CellSelection.from_config(node["cells"]),
            candidates_per_cell=reader.count("candidates_per_cell"),
            seed=reader.count("seed", minimum=0),
            max_cost_usd=reader.cost_cap("max_cost_usd"),
        )


@dataclass(frozen=True)
class ScreenSettings:
    """The screen node."""

    models: tuple[str, ...]
    trials: int
    judge: str
    keep: str  # all | majority
    max_cost_usd: float | None

    @classmethod
    def from_config(cls, node: Any) -> ScreenSettings:
        """Check the screen node."""
        keys = frozenset({"models", "trials", "judge", "keep", "max_cost_usd"})
        reader = _Node(node, "screen", keys)
        models = reader.names("models")
        assert models is not None
        return cls(
            models=models,
            trials=reader.count("trials"),
            judge=reader.text("judge"),
            keep=reader.choice("keep", tuple(KEEP_RULES)),
            max_cost_usd=reader.cost_cap("max_cost_usd"),
        )


@dataclass(frozen=True)
class CurateSettings:
    """The curate node."""

    name: str
    version: str

    @classmethod
    def from_config(cls, node: Any) -> CurateSettings:
        """Check the curate node."""
        reader = _Node(node, "curate", frozenset({"name", "version"}))
        name = reader.text("name")
        version = node["version"]
        if isinstance(version, bool) or not isinstance(version, int | str):
            raise reader.fail("version", "a version number or text such as 2 or 2.1")
        if not SET_NAME.match(name) or not SET_NAME.match(str(version)):
            raise LosonaError(
                f"curate: name and version name a file: letters, digits, '_', '.' or '-' only, "
                f"found name {name!r} and version {version!r}"
            )
        return cls(name=name, version=str(version))

    @property
    def file_name(self) -> str:
        """The curated set's file name, e.g. losona-generated-v1.jsonl."""
        return f"{self.name}-v{self.version}.jsonl"


def load_model(option: str, extra_params: Mapping[str, Any] | None = None) -> ModelSpec:
    """The model of conf/model/<option>.yaml, with `extra_params` sent on top of its own."""
    node = plain(load_option("model", option))
    origin = f"conf/model/{option}.yaml"
    if node.get("name") != option:
        raise LosonaError(
            f"{origin}: name is {node.get('name')!r}; it must be the file's name '{option}'"
        )
    if extra_params:
        node["params"] = {**(node.get("params") or {}), **extra_params}
    return ModelSpec.from_config(node, origin=origin)


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
    def from_paths(cls, paths: Mapping[str, Any]) -> GenerationFiles:
        """The files under the configured folders."""
        data, reports = Path(paths["generation_dir"]), Path(paths["generation_reports_dir"])
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
            accept_list=Path(paths["generation_accept"]),
            generated_dir=Path(paths["generated_dir"]),
        )
