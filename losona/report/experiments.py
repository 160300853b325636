"""`python -m losona.experiments`: DVC experiments' settings and headline numbers side by
side, one column each (DESCRIPTION says what it shows): what a reader compares of the
hundreds of columns `dvc exp show` prints."""

from __future__ import annotations

import argparse
import itertools
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from losona.core.cli import USER_ERROR_EXIT
from losona.core.config import PANELS_FILE, PARAMS_FILE, RUN_FILE, Paths, load_option, option_file
from losona.core.errors import LosonaError
from losona.core.formatting import MISSING, number, signed
from losona.core.layout import RunLayout
from losona.provenance.dvc_json import dvc_json
from losona.results.bundle import METRICS

# The widest line printed: a terminal folds a wider one, and the columns no longer line up.
WIDTH = 120
# How wide a row's label and a cell may be before their text wraps onto further lines. With
# LABEL_WIDTH + len(GAP) + CELL_WIDTH <= WIDTH, one experiment always fits beside the labels.
LABEL_WIDTH = 40
CELL_WIDTH = 24
GAP = "  "
# An accuracy or effect cell of a run whose K is another: that run is in its own K's row.
OTHER_K = "-"
# The K of a run for which DVC recorded no sampling.trials (a failed or an older run).
UNKNOWN_K = "?"

# A row: its label and one cell per experiment; a section: its title and its rows.
Row = tuple[str, list[str]]
Section = tuple[str, list[Row]]


@dataclass(frozen=True)
class MetricsFiles:
    """Where the DVC metrics the headline numbers come from are (dvc.yaml declares them)."""

    results: str  # aggregate's metrics.json
    audit: str  # the judge audit's
    controls_dir: str  # each judge's validity controls, <judge>.json

    @classmethod
    def of(cls, layout: RunLayout) -> MetricsFiles:
        """Where a layout puts them: the default paths' (conf/paths/default.yaml, which
        dvc.yaml reads) are the names DVC reports."""
        return cls(
            (layout.reports_folder / METRICS).as_posix(),
            (layout.audit_folder / METRICS).as_posix(),
            f"{layout.controls_reports_folder.as_posix()}/",
        )


def default_paths() -> Paths:
    """conf/paths/default.yaml, checked: the paths dvc.yaml declares its metrics with."""
    node = load_option("paths", "default")
    return Paths.from_config(node.paths, origin=str(option_file("paths", "default")))


@dataclass(frozen=True)
class Experiment:
    """One column: an experiment (or the workspace, or a commit) and what it recorded."""

    name: str
    rev: str
    params: Mapping[str, Any]  # file -> its params
    metrics: Mapping[str, Any]  # file -> its metrics
    error: str | None = None


def dvc_experiments(root: Path = Path("."), options: Sequence[str] = ()) -> list[Experiment]:
    """Every row of `dvc exp show --json` with `options` (`-A`, `--rev`, `-n`, as DVC takes
    them): the workspace, each baseline commit, its experiments."""
    shown = dvc_json(
        ["exp", "show", *options], root, list, "dvc exp show could not list the experiments"
    )
    return from_exp_show(shown)


def dvc_revision(name: str, root: Path = Path(".")) -> Experiment:
    """The one commit DVC resolves `name` to (an experiment of any commit, a branch, a tag,
    a hash, HEAD~1), read by `dvc exp show --rev`; a LosonaError where it resolves none."""
    shown = dvc_json(
        ["exp", "show", "--rev", name, "-n", "1"], root, list, f"dvc exp show --rev {name}"
    )
    commit = from_exp_show([row for row in shown if row.get("rev") != "workspace"][:1])
    if not commit:
        raise LosonaError(f"dvc exp show --rev {name}: DVC shows no commit")
    # DVC names an experiment's own commit nothing: the name asked for is the one it has.
    found = commit[0]
    return found if found.rev.startswith(name) else replace(found, name=name)


def short(rev: str) -> str:
    """A commit's hash as git abbreviates it (7 digits); anything else as it is."""
    full = len(rev) == 40 and all(c in "0123456789abcdef" for c in rev)
    return rev[:7] if full else rev


def from_exp_show(shown: Sequence[Mapping[str, Any]]) -> list[Experiment]:
    """The rows of `dvc exp show --json`, parsed: each commit, then its experiments. A commit
    no branch or tag names (an older one, a detached HEAD) is named by its short hash."""
    found = []
    for row in shown:
        found.append(_experiment(row, row.get("name") or short(str(row.get("rev", "")))))
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


def select(
    experiments: Sequence[Experiment],
    wanted: Sequence[str],
    look_up: Callable[[str], Experiment] | None = None,
) -> list[Experiment]:
    """The experiments named (by name or a prefix of the revision), in the order asked; one
    not among `experiments` is asked of `look_up` (DVC, for any commit's), if given."""
    if not wanted:
        return list(experiments)
    chosen = []
    for name in wanted:
        match = [e for e in experiments if name in (e.name, e.rev) or e.rev.startswith(name)]
        if match:
            chosen.append(match[0])
            continue
        listed = ", ".join(e.name for e in experiments)
        if look_up is None:
            raise LosonaError(f"no experiment {name!r} here; there are: {listed}")
        try:
            chosen.append(look_up(name))
        except LosonaError as exc:
            raise LosonaError(
                f"no experiment or revision {name!r}: neither listed here ({listed}) nor "
                f"known to DVC ({exc}); python -m losona.experiments -A lists every "
                "experiment DVC keeps"
            ) from None
    return chosen


def _get(tree: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(tree, Mapping) or key not in tree:
            return None
        tree = tree[key]
    return tree


def _names(value: Any) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else MISSING


def _param(e: Experiment, file: Path, *keys: str) -> Any:
    return _get(e.params.get(str(file)) or {}, *keys)


def trials(e: Experiment) -> str:
    """An experiment's K (conf/run.yaml's sampling.trials) as rows name it, or UNKNOWN_K."""
    k = _param(e, RUN_FILE, "sampling", "trials")
    return UNKNOWN_K if k is None else str(k)


def distinct_ks(experiments: Sequence[Experiment]) -> list[str]:
    """The Ks of these runs, each once, smallest first (an unknown K last)."""
    return sorted(
        {trials(e) for e in experiments},
        key=lambda k: (not k.isdigit(), int(k) if k.isdigit() else 0),
    )


def scenario_settings(e: Experiment) -> dict[str, Any]:
    """The settings that decide which scenarios a run covers, by the key a user sets."""
    limit = _param(e, RUN_FILE, "dataset", "limit")
    return {
        "dataset": _param(e, PARAMS_FILE, "dataset"),
        "dataset.limit": limit,
        # The seed chooses the scenarios a limit keeps; with no limit it chooses nothing.
        "dataset.limit_seed": None
        if limit is None
        else _param(e, RUN_FILE, "dataset", "limit_seed"),
        # Which ids decide the subset, not the order they are listed in.
        "dataset.scenario_ids": sorted(
            map(str, _param(e, RUN_FILE, "dataset", "scenario_ids") or [])
        ),
    }


def unlike_notes(experiments: Sequence[Experiment]) -> list[str]:
    """What makes these runs not like with like, one line each: a K or a scenario setting
    that differs between them; none when they agree on both."""
    if not experiments:
        return []
    notes = []
    ks = distinct_ks(experiments)
    if len(ks) > 1:
        notes.append(
            f"! K differs (sampling.trials: {', '.join(ks)}): Acc@K is a vote over K trials, "
            "so each accuracy and effect row holds the runs of one K "
            f"({', '.join(f'Acc@{k}' for k in ks)}) and '{OTHER_K}' marks a run of another K; "
            "compare within a row, not across K"
        )
    settings = [scenario_settings(e) for e in experiments]
    differ = [key for key in settings[0] if any(s[key] != settings[0][key] for s in settings)]
    if "dataset.limit" in differ:
        # The seed chooses among a limit's scenarios: beside a run of none it chooses nothing.
        differ = [key for key in differ if key != "dataset.limit_seed"]
    if differ:
        notes.append(
            f"! not the same scenarios (the runs differ in {', '.join(differ)}): a difference "
            "in their numbers may be the scenarios', not the model's or the judge's"
        )
    return notes


def settings_rows(experiments: Sequence[Experiment]) -> list[Row]:
    """What each run covered and how: dataset, K, subset, models, conditions, judges."""

    def subset(e: Experiment) -> str:
        chosen = scenario_settings(e)
        ids, limit = chosen["dataset.scenario_ids"], chosen["dataset.limit"]
        parts = [f"{len(ids)} ids"] if ids else []
        if limit is not None:
            parts.append(f"limit {limit}, seed {chosen['dataset.limit_seed']}")
        return "; ".join(parts) or "all scenarios"

    def sweep(e: Experiment, key: str) -> str:
        return _names(_param(e, PARAMS_FILE, "sweep", key))

    def judges(e: Experiment) -> str:
        # A panel's numbers are rows of their own below, like a judge's: say where it is from.
        panels = _param(e, PANELS_FILE, "panels")
        return f"{sweep(e, 'judges')}; panels: {_names(panels)}" if panels else sweep(e, "judges")

    return [
        ("dataset", [str(_param(e, PARAMS_FILE, "dataset") or MISSING) for e in experiments]),
        (
            "K (sampling.trials)",
            [str(_param(e, RUN_FILE, "sampling", "trials") or MISSING) for e in experiments],
        ),
        ("subset", [subset(e) for e in experiments]),
        ("models", [sweep(e, "models") for e in experiments]),
        ("conditions", [sweep(e, "conditions") for e in experiments]),
        ("judges", [judges(e) for e in experiments]),
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


def _acc(found: Mapping[str, Any] | None) -> str:
    if found is None or found.get("acc_at_k") is None:
        return MISSING
    low, high = found.get("acc_low"), found.get("acc_high")
    interval = f" [{number(low)}, {number(high)}]" if low is not None else ""
    return f"{number(found['acc_at_k'])}{interval}"


def _delta(found: Mapping[str, Any] | None) -> str:
    return MISSING if found is None or found.get("delta") is None else signed(found["delta"])


def headline_sections(experiments: Sequence[Experiment], files: MetricsFiles) -> list[Section]:
    """Per judge and model, Acc@K and the paired effect vs naive per condition, one row per
    K; then each judge's controls and each pair of judges' agreement."""
    cells = _cells(experiments, files.results)
    ks = distinct_ks(experiments)

    def value(e: Experiment, cell: tuple[str, str, str]) -> Mapping[str, Any] | None:
        judge, model, condition = cell
        found = _get(e.metrics.get(files.results), judge, "models", model, condition)
        return found if isinstance(found, Mapping) else None

    def of_k(
        k: str, cell: tuple[str, str, str], show: Callable[[Mapping[str, Any] | None], str]
    ) -> list[str] | None:
        """K's row of a cell: OTHER_K for a run of another K; None when no run of K has it."""
        if all(value(e, cell) is None for e in experiments if trials(e) == k):
            return None
        return [show(value(e, cell)) if trials(e) == k else OTHER_K for e in experiments]

    sections: list[Section] = []
    for judge, model in dict.fromkeys((judge, model) for judge, model, _ in cells):
        conditions = [c for j, m, c in cells if (j, m) == (judge, model)]
        rows: list[Row] = []
        for k in ks:
            for condition in conditions:
                found = of_k(k, (judge, model, condition), _acc)
                if found is not None:
                    rows.append((f"Acc@{k}: {condition}", found))
        for k in ks:
            for condition in conditions:
                found = of_k(k, (judge, model, condition), _delta)
                # naive itself, and runs without naive, have no effect: no row of n/a only.
                if found is not None and set(found) - {MISSING, OTHER_K}:
                    rows.append((f"Acc@{k} effect: {condition}", found))
        title = f"{judge} / {model} (judge / model): Acc@K (%) and its effect vs naive (points)"
        sections.append((title, rows))

    def control(e: Experiment, judge: str) -> str:
        found = _get(e.metrics.get(f"{files.controls_dir}{judge}.json"), judge, "all", "accuracy")
        return number(found)

    def agreed(e: Experiment, pair: str) -> str:
        found = _get(e.metrics.get(files.audit), "judge_pairs", pair)
        if not isinstance(found, Mapping) or found.get("agreement") is None:
            return MISSING
        return f"{number(found['agreement'])} ({number(found.get('kappa'), 3)})"

    judges = dict.fromkeys(judge for judge, _, _ in cells)
    controls = [(judge, [control(e, judge) for e in experiments]) for judge in judges]
    if controls:
        sections.append(("controls right (%), per judge", controls))
    audits = [_get(e.metrics.get(files.audit), "judge_pairs") or {} for e in experiments]
    pairs = dict.fromkeys(pair for audit in audits for pair in audit)
    agreement = [(p.replace("_vs_", " vs "), [agreed(e, p) for e in experiments]) for p in pairs]
    if agreement:
        sections.append(("judge agreement % (kappa)", agreement))
    return sections


def _title(e: Experiment) -> str:
    """An experiment's column title: its name, and its short hash when that is not its name."""
    named = e.rev in ("workspace", "") or short(e.rev) == e.name or e.rev == e.name
    return e.name if named else f"{e.name} ({short(e.rev)})"


def _wrap(text: str, width: int, indent: str = "") -> list[str]:
    """Text in lines of at most `width`, broken at spaces, else hyphens, else anywhere."""
    return textwrap.wrap(text, width, subsequent_indent=indent) or [""]


def _blocks(label_width: int, widths: Sequence[int]) -> list[list[int]]:
    """The experiments' columns in blocks that fit in WIDTH beside the labels, in order."""
    blocks: list[list[int]] = [[]]
    used = label_width
    for i, width in enumerate(widths):
        if blocks[-1] and used + len(GAP) + width > WIDTH:
            blocks.append([])
            used = label_width
        blocks[-1].append(i)
        used += len(GAP) + width
    return blocks


def _row_lines(row: Row, label_width: int, widths: Sequence[int]) -> list[str]:
    """A row as text: its label left, its cells right-aligned, each wrapped to its width."""
    label, cells = row
    texts = [_wrap(label, label_width), *(_wrap(c, w) for c, w in zip(cells, widths, strict=True))]
    return [
        GAP.join(
            [f"{first:<{label_width}}", *(f"{t:>{w}}" for t, w in zip(rest, widths, strict=True))]
        ).rstrip()
        for first, *rest in itertools.zip_longest(*texts, fillvalue="")
    ]


def table_lines(experiments: Sequence[Experiment], files: MetricsFiles) -> list[str]:
    """The comparison as text of at most WIDTH columns: any note that the runs are not like
    with like, then a header of experiment names and a row per setting or number."""
    header: Row = ("", [_title(e) for e in experiments])
    sections = [("settings", settings_rows(experiments)), *headline_sections(experiments, files)]
    rows = [header, *(row for _, part in sections for row in part)]
    label_width = min(LABEL_WIDTH, max(len(label) for label, _ in rows))
    widths = [
        min(CELL_WIDTH, max(len(cells[i]) for _, cells in rows)) for i in range(len(experiments))
    ]
    lines = [n for note in unlike_notes(experiments) for n in _wrap(note, WIDTH, "  ")]
    for block in _blocks(label_width, widths):
        if lines:
            lines.append("")

        def shown(row: Row, block: list[int] = block) -> list[str]:
            label, cells = row
            kept = [cells[i] for i in block]
            # A K none of this block's runs has: its row would say nothing here.
            if kept and all(c == OTHER_K for c in kept):
                return []
            return _row_lines((label, kept), label_width, [widths[i] for i in block])

        lines += shown(header)
        for title, part in sections:
            lines += _wrap(f"-- {title}", WIDTH, "   ")
            lines += [line for row in part for line in shown(row)]
    failed = [f"failed: {e.name}: {e.error}" for e in experiments if e.error]
    return lines + [line for said in failed for line in _wrap(said, WIDTH, "  ")]


DESCRIPTION = """\
Print DVC experiments side by side, one column each: the settings that tell runs apart
(dataset, K, subset, models, conditions, judges and panels) and their headline numbers
(Acc@K with its interval and the effect vs naive per judge, model and condition; each
judge's validity controls; the agreement of each pair of judges). It reads
`dvc exp show --json` in the current directory, the project's root: by default the
workspace, the last commit and its experiments; -A, --rev and -n choose other commits as
`dvc exp show` does. An experiment or revision named that these do not list is asked of
DVC, so an experiment of an earlier commit is found by its name.

Each accuracy and effect row holds runs of one K (Acc@1, Acc@2): a run of another K shows
'-' there and has its own row. A line starting '!' says when the runs differ in K or in
the scenarios they cover (dataset, dataset.limit, dataset.limit_seed, dataset.scenario_ids).
Lines fit in 120 columns: experiments that do not fit beside the labels follow in a block
of their own."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m losona.experiments",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="example: python -m losona.experiments conic-maid erect-cyma",
    )
    parser.add_argument(
        "experiments",
        nargs="*",
        metavar="EXPERIMENT",
        help="an experiment's name or a revision (or its prefix), compared in the order given; "
        "default: every one listed",
    )
    parser.add_argument(
        "-A",
        "--all-commits",
        action="store_true",
        help="list the experiments of every commit (dvc exp show -A)",
    )
    parser.add_argument(
        "--rev",
        action="append",
        default=[],
        metavar="COMMIT",
        help="list the experiments of this commit instead of HEAD's; may be repeated "
        "(dvc exp show --rev)",
    )
    parser.add_argument(
        "-n",
        "--num",
        type=int,
        metavar="NUM",
        help="list the experiments of the last NUM commits from each --rev, or HEAD "
        "(dvc exp show -n; a negative NUM: every commit)",
    )
    return parser


def exp_show_options(args: argparse.Namespace) -> list[str]:
    """The command line's choice of commits, as `dvc exp show` takes it."""
    options = ["-A"] if args.all_commits else []
    options += [option for rev in args.rev for option in ("--rev", rev)]
    return options + ([] if args.num is None else ["-n", str(args.num)])


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Print the experiments named (default: all that `dvc exp show` lists) side by side."""
    args = _parser().parse_args(argv)
    try:
        files = MetricsFiles.of(RunLayout(default_paths()))
        listed = dvc_experiments(options=exp_show_options(args))
        experiments = select(listed, args.experiments, dvc_revision)
    except LosonaError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return USER_ERROR_EXIT
    for line in table_lines(experiments, files):
        out(line)
    return 0
