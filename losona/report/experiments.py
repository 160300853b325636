"""Experiments side by side: their settings and headline numbers, one column each.

    python -m losona.experiments                       # the workspace, HEAD and its experiments
    python -m losona.experiments conic-maid erect-cyma # these experiments (or revisions) only

`dvc exp show` prints every param and every metric of every file as a column, hundreds of
them here, and a terminal shows "..." for most. This reads the same data (`dvc exp show
--json`) and keeps what a reader compares: the settings that differ between runs (dataset,
K, subset, sweep) and the headline numbers (accuracy-at-K with its interval and the paired
effect against naive per judge, model and condition; each judge's validity controls; the
agreement of each pair of judges), as rows, with one column per experiment.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from losona.audit import files as audit_files
from losona.cli import USER_ERROR_EXIT
from losona.config import PARAMS_FILE, RUN_FILE, Paths, load_option, option_file
from losona.errors import LosonaError
from losona.formatting import MISSING, number, signed
from losona.provenance.dvc_json import dvc_json
from losona.results import aggregate


@dataclass(frozen=True)
class MetricsFiles:
    """Where the DVC metrics the headline numbers come from are (dvc.yaml declares them)."""

    results: str  # aggregate's metrics.json
    audit: str  # the judge audit's
    controls_dir: str  # each judge's validity controls, <judge>.json

    @classmethod
    def of(cls, paths: Paths) -> MetricsFiles:
        """Where the default paths (conf/paths/default.yaml, which dvc.yaml reads) put them."""
        return cls(
            f"{paths.reports_dir}/{aggregate.METRICS}",
            f"{paths.audit_dir}/{audit_files.METRICS}",
            f"{paths.judge_controls_reports_dir}/",
        )


def default_paths() -> Paths:
    """conf/paths/default.yaml, checked: the paths dvc.yaml declares its metrics with."""
    node = load_option("paths", "default")
    checked: Paths = Paths.from_config(node.paths, origin=str(option_file("paths", "default")))
    return checked


@dataclass(frozen=True)
class Experiment:
    """One column: an experiment (or the workspace, or a commit) and what it recorded."""

    name: str
    rev: str
    params: Mapping[str, Any]  # file -> its params
    metrics: Mapping[str, Any]  # file -> its metrics
    error: str | None = None


def dvc_experiments(root: Path = Path(".")) -> list[Experiment]:
    """Every row of `dvc exp show --json`: the workspace, the baseline, its experiments."""
    shown = dvc_json(["exp", "show"], root, list, "dvc exp show could not list the experiments")
    return from_exp_show(shown)


def from_exp_show(shown: Sequence[Mapping[str, Any]]) -> list[Experiment]:
    """The rows of `dvc exp show --json`, parsed: each commit, then its experiments."""
    found = []
    for row in shown:
        found.append(_experiment(row, row.get("name") or str(row.get("rev", ""))))
        for group in row.get("experiments") or []:
            for rev in group.get("revs") or []:
                found.append(_experiment(rev, rev.get("name") or group.get("name") or ""))
    return found


def _experiment(row: Mapping[str, Any], name: str) -> Experiment:
    data = row.get("data") or {}

    def files(kind: str) -> dict[str, Any]:
        return {path: (f.get("data") or {}) for path, f in (data.get(kind) or {}).items()}

    error = row.get("error")
    said = error.get("msg") if isinstance(error, dict) else (str(error) if error else None)
    return Experiment(name, str(row.get("rev", "")), files("params"), files("metrics"), said)


def select(experiments: Sequence[Experiment], wanted: Sequence[str]) -> list[Experiment]:
    """The experiments named (by name or a prefix of the revision), in the order asked."""
    if not wanted:
        return list(experiments)
    chosen = []
    for name in wanted:
        match = [e for e in experiments if name in (e.name, e.rev) or e.rev.startswith(name)]
        if not match:
            names = ", ".join(e.name for e in experiments)
            raise LosonaError(f"no experiment {name!r} here; there are: {names}")
        chosen.append(match[0])
    return chosen


def _get(tree: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(tree, Mapping) or key not in tree:
            return None
        tree = tree[key]
    return tree


def _names(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else MISSING


def settings_rows(experiments: Sequence[Experiment]) -> list[tuple[str, list[str]]]:
    """What each run covered and how: dataset, K, subset, models, conditions, judges."""

    def subset(e: Experiment) -> str:
        run = e.params.get(str(RUN_FILE), {})
        limit, ids = _get(run, "dataset", "limit"), _get(run, "dataset", "scenario_ids") or []
        parts = [f"{len(ids)} ids"] if ids else []
        if limit is not None:
            parts.append(f"limit {limit}, seed {_get(run, 'dataset', 'limit_seed')}")
        return "; ".join(parts) or "all scenarios"

    def param(e: Experiment, *keys: str) -> Any:
        return _get(e.params.get(str(PARAMS_FILE), {}), *keys)

    return [
        ("dataset", [str(param(e, "dataset") or MISSING) for e in experiments]),
        (
            "K (sampling.trials)",
            [
                str(_get(e.params.get(str(RUN_FILE), {}), "sampling", "trials") or MISSING)
                for e in experiments
            ],
        ),
        ("subset", [subset(e) for e in experiments]),
        ("models", [_names(param(e, "sweep", "models")) for e in experiments]),
        ("conditions", [_names(param(e, "sweep", "conditions")) for e in experiments]),
        ("judges", [_names(param(e, "sweep", "judges")) for e in experiments]),
    ]


def _cells(experiments: Sequence[Experiment], results: str) -> list[tuple[str, str, str]]:
    """Every (judge, model, condition) any experiment reports, in first-seen order."""
    seen: dict[tuple[str, str, str], None] = {}
    for e in experiments:
        for judge, part in (e.metrics.get(results) or {}).items():
            for model, conditions in (_get(part, "models") or {}).items():
                for condition in conditions:
                    seen[(judge, model, condition)] = None
    return list(seen)


def headline_rows(
    experiments: Sequence[Experiment], files: MetricsFiles
) -> list[tuple[str, list[str]]]:
    """Accuracy-at-K and the paired effect per cell, each judge's controls, judge agreement."""
    cells = _cells(experiments, files.results)
    rows: list[tuple[str, list[str]]] = []

    def value(e: Experiment, cell: tuple[str, str, str]) -> Mapping[str, Any] | None:
        judge, model, condition = cell
        found = _get(e.metrics.get(files.results), judge, "models", model, condition)
        return found if isinstance(found, Mapping) else None

    def acc(found: Mapping[str, Any] | None) -> str:
        if found is None or found.get("acc_at_k") is None:
            return MISSING
        low, high = found.get("acc_low"), found.get("acc_high")
        interval = f" [{number(low)}, {number(high)}]" if low is not None else ""
        return f"{number(found['acc_at_k'])}{interval}"

    def delta(found: Mapping[str, Any] | None) -> str:
        return MISSING if found is None or found.get("delta") is None else signed(found["delta"])

    rows += [
        (f"Acc@K (%): {' / '.join(cell)}", [acc(value(e, cell)) for e in experiments])
        for cell in cells
    ]
    rows += [
        (
            f"effect vs naive (points): {' / '.join(cell)}",
            [delta(value(e, cell)) for e in experiments],
        )
        for cell in cells
        if any(delta(value(e, cell)) != MISSING for e in experiments)
    ]
    judges = list(dict.fromkeys(judge for judge, _, _ in cells))
    for judge in judges:
        path = f"{files.controls_dir}{judge}.json"
        rows.append(
            (
                f"controls right (%): {judge}",
                [number(_get(e.metrics.get(path), judge, "all", "accuracy")) for e in experiments],
            )
        )
    pairs = list(
        dict.fromkeys(
            p for e in experiments for p in (_get(e.metrics.get(files.audit), "judge_pairs") or {})
        )
    )
    for pair in pairs:
        rows.append(
            (
                f"judge agreement % (kappa): {pair.replace('_vs_', ' vs ')}",
                [
                    _agreement(_get(e.metrics.get(files.audit), "judge_pairs", pair))
                    for e in experiments
                ],
            )
        )
    return rows


def _title(e: Experiment) -> str:
    """An experiment's column title: its name, and its revision when that is not its name."""
    return e.name if e.rev in (e.name, "workspace", "") else f"{e.name} ({e.rev[:7]})"


def _agreement(pair: Any) -> str:
    if not isinstance(pair, Mapping) or pair.get("agreement") is None:
        return MISSING
    return f"{number(pair['agreement'])} ({number(pair.get('kappa'), 3)})"


def table_lines(experiments: Sequence[Experiment], files: MetricsFiles) -> list[str]:
    """The comparison as text: a header of experiment names, then a row per setting or number."""
    header = ("", [_title(e) for e in experiments])
    sections = [
        ("settings", settings_rows(experiments)),
        ("numbers", headline_rows(experiments, files)),
    ]
    failed = [(f"failed: {e.name}", e.error) for e in experiments if e.error]
    rows = [header, *[row for _, part in sections for row in part]]
    first = max(len(label) for label, _ in rows)
    widths = [max(len(cells[i]) for _, cells in rows) for i in range(len(experiments))]

    def line(label: str, cells: Iterable[str]) -> str:
        return "  ".join(
            [f"{label:<{first}}", *(f"{c:>{w}}" for c, w in zip(cells, widths, strict=True))]
        ).rstrip()

    lines = [line(*header)]
    for title, part in sections:
        lines.append(f"-- {title}")
        lines += [line(label, cells) for label, cells in part]
    lines += [f"{what}: {why}" for what, why in failed]
    return lines


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Print the experiments named (default: all that `dvc exp show` lists) side by side."""
    wanted = list(sys.argv[1:] if argv is None else argv)
    try:
        files = MetricsFiles.of(default_paths())
        experiments = select(dvc_experiments(), wanted)
    except LosonaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    for line in table_lines(experiments, files):
        out(line)
    return 0
