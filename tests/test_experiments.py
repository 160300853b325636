"""Experiments side by side (`python -m losona.experiments`), read from `dvc exp show --json`.

exp_show.json is what DVC printed for a real project of this pipeline: a committed run
(K = 1 on three scenarios, the lexicon judge) and two `dvc exp run` experiments, one with
K = 2 (conic-maid), one with the scripted judge added (erect-cyma). exp_show_k.json is made
by hand in the same shape, for what that run lacks: a committed run (K = 1, five scenarios,
two judges and a panel) with a K = 2 experiment and a ten-scenario, lexicon-only one. The
journey test (tests/test_first_hour.py) runs the command against experiments it makes itself.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest
from conftest import run_dvc

from losona.core.errors import LosonaError
from losona.core.layout import RunLayout
from losona.report.experiments import (
    Experiment,
    MetricsFiles,
    Row,
    _parser,
    default_paths,
    dvc_experiments,
    dvc_revision,
    exp_show_options,
    from_exp_show,
    headline_sections,
    main,
    select,
    settings_rows,
    table_lines,
    unlike_notes,
)

FIXTURES = Path(__file__).parent / "fixtures"
SHOWN = json.loads((FIXTURES / "exp_show.json").read_text())
# workspace and main (K = 1, limit 5), then k2-five-scenarios-three-judges (K = 2, limit 5),
# then ten-scenarios-lexicon-only (K = 1, limit 10).
SHOWN_K = json.loads((FIXTURES / "exp_show_k.json").read_text())
FILES = MetricsFiles(
    "reports/metrics.json", "reports/audit/metrics.json", "reports/judge_controls/"
)


def rows_under(lines: list[str], title: str) -> dict[str, list[str]]:
    """The rows of the table section whose title starts `title`: label -> its cells (a table
    of one block whose cells do not wrap)."""
    start = next(i for i, line in enumerate(lines) if line.startswith(f"-- {title}"))
    rows = {}
    for line in lines[start + 1 :]:
        if line.startswith("-- "):
            break
        label, *cells = [c.strip() for c in line.split("  ") if c.strip()]
        rows[label] = cells
    return rows


def section(sections: list[tuple[str, list[Row]]], title: str) -> dict[str, list[str]]:
    (rows,) = [rows for name, rows in sections if name.startswith(title)]
    return dict(rows)


def test_each_experiment_is_a_column_of_settings_and_headline_numbers(workdir: Path) -> None:
    files = MetricsFiles.of(RunLayout(default_paths()))  # where dvc.yaml puts them
    assert files == FILES
    experiments = from_exp_show(SHOWN)
    assert [e.name for e in experiments] == ["workspace", "master", "erect-cyma", "conic-maid"]
    lines = table_lines(select(experiments, ["conic-maid", "erect-cyma"]), files)
    # The K note comes first (K = 2 beside K = 1), then the table.
    header = lines[lines.index("") + 1]
    assert header.split() == ["conic-maid", "(58eb38b)", "erect-cyma", "(0c72272)"]

    settings = rows_under(lines, "settings")
    assert settings["K (sampling.trials)"] == ["2", "1"]
    assert settings["judges"] == ["lexicon", "lexicon, local_openai"]
    assert settings["subset"] == ["limit 3, seed 0", "limit 3, seed 0"]
    lexicon = rows_under(lines, "lexicon / local (judge / model)")
    # The same 33.3 in both, but at K = 2 and K = 1: two rows, never one.
    assert lexicon == {
        "Acc@1: naive": ["-", "33.3 [0.0, 100.0]"],
        "Acc@2: naive": ["33.3 [0.0, 100.0]", "-"],
    }
    assert rows_under(lines, "local_openai / local")["Acc@1: naive"] == ["-", "0.0 [0.0, 0.0]"]
    assert rows_under(lines, "judge agreement")["lexicon vs local_openai"] == [
        "n/a",
        "66.7 (0.000)",
    ]
    assert rows_under(lines, "controls right")["lexicon"] == ["100.0", "100.0"]
    # A handful of rows, not DVC's hundreds of columns.
    assert len(lines) < 25


def test_accuracy_and_its_effect_are_rows_of_one_k() -> None:
    experiments = from_exp_show(SHOWN_K)
    sections = headline_sections(experiments, FILES)
    lexicon = section(sections, "lexicon / smollm2 (judge / model)")
    # The case: 0.0 at K = 1 beside 40.0 at K = 2 is the K change, so not one row.
    assert lexicon["Acc@1: style_adaptation"] == ["0.0 [0.0, 0.0]"] * 2 + ["-", "10.0 [0.0, 30.0]"]
    assert lexicon["Acc@2: style_adaptation"] == ["-", "-", "40.0 [0.0, 80.0]", "-"]
    assert lexicon["Acc@1 effect: style_adaptation"] == ["-20.0", "-20.0", "-", "+0.0"]
    assert lexicon["Acc@2 effect: style_adaptation"] == ["-", "-", "+20.0", "-"]
    assert list(lexicon) == [
        "Acc@1: naive",
        "Acc@1: style_adaptation",
        "Acc@2: naive",
        "Acc@2: style_adaptation",
        "Acc@1 effect: style_adaptation",  # naive has no effect against itself: no row
        "Acc@2 effect: style_adaptation",
    ]
    # A judge one run lacks: n/a in its column, not a missing row.
    assert section(sections, "local_openai / smollm2")["Acc@1: naive"][3] == "n/a"
    # Every accuracy row names its K.
    assert not [label for _, rows in sections for label, _ in rows if "Acc@K" in label]


def test_a_panel_is_listed_with_the_judges_and_has_its_numbers() -> None:
    experiments = from_exp_show(SHOWN_K)
    judges = dict(settings_rows(experiments))["judges"]
    assert judges == ["lexicon, local_openai; panels: offline_panel"] * 3 + ["lexicon"]
    sections = headline_sections(experiments, FILES)
    assert section(sections, "offline_panel / smollm2")["Acc@2: style_adaptation"][2] == (
        "20.0 [0.0, 60.0]"
    )
    assert section(sections, "controls right")["offline_panel"] == ["100.0"] * 3 + ["n/a"]
    # A run recorded before conf/panels.yaml existed: its judges only.
    assert dict(settings_rows(from_exp_show(SHOWN)))["judges"][0] == "lexicon"


def test_runs_of_another_k_or_other_scenarios_are_said_to_be_so() -> None:
    workspace, main_run, k2, ten = from_exp_show(SHOWN_K)
    assert unlike_notes([workspace, main_run]) == []
    (k_note,) = unlike_notes([main_run, k2])
    assert k_note.startswith("! K differs (sampling.trials: 1, 2)")
    (scenarios,) = unlike_notes([main_run, ten])
    assert scenarios.startswith("! not the same scenarios (the runs differ in dataset.limit)")
    assert len(unlike_notes([main_run, k2, ten])) == 2

    def run_with(**dataset: object) -> Experiment:
        run = {**main_run.params["conf/run.yaml"], "dataset": dataset}
        return dataclasses.replace(main_run, params={**main_run.params, "conf/run.yaml": run})

    # A seed with no limit chooses nothing, and the order of the ids is not the subset.
    assert (
        unlike_notes(
            [
                run_with(limit=None, limit_seed=0, scenario_ids=["a", "b"]),
                run_with(limit=None, limit_seed=7, scenario_ids=["b", "a"]),
            ]
        )
        == []
    )
    # Beside a run with no limit, a limited run's seed is not a difference of its own.
    (limit,) = unlike_notes([run_with(limit=None, limit_seed=0), run_with(limit=2, limit_seed=0)])
    assert "(the runs differ in dataset.limit)" in limit
    (seed,) = unlike_notes([run_with(limit=2, limit_seed=0), run_with(limit=2, limit_seed=1)])
    assert "(the runs differ in dataset.limit_seed)" in seed
    (ids,) = unlike_notes(
        [run_with(limit=None, scenario_ids=["a"]), run_with(limit=None, scenario_ids=["b"])]
    )
    assert "differ in dataset.scenario_ids" in ids
    other_dataset = dataclasses.replace(
        main_run,
        params={
            **main_run.params,
            "params.yaml": {**main_run.params["params.yaml"], "dataset": "local"},
        },
    )
    (source,) = unlike_notes([main_run, other_dataset])
    assert "differ in dataset)" in source


def test_many_experiments_with_long_names_fit_in_120_columns() -> None:
    shown = from_exp_show(SHOWN_K)
    long = [
        dataclasses.replace(e, name=f"{e.name}-with-a-long-descriptive-name-{n}")
        for n, e in enumerate(shown)
    ]
    experiments = [*shown, *long]
    lines = table_lines(experiments, FILES)
    assert max(map(len, lines)) <= 120
    # The columns that do not fit follow in blocks of their own, each with its labels.
    assert lines.count("-- settings") == 3
    text = "\n".join(lines)
    # A long name wraps within its column, at its hyphens.
    assert all(f"descriptive-name-{n}" in text for n in range(len(long)))
    assert text.count("40.0 [0.0, 80.0]") == 2  # the K = 2 run, shown twice
    assert "panels: offline_panel" in text  # a long judges cell wraps rather than widens
    assert text.startswith("! K differs") and "! not the same scenarios" in text


def test_help_says_what_it_does_and_a_bad_option_is_one_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    said = capsys.readouterr().out
    assert said.startswith("usage: python -m losona.experiments [-h] [-A] [--rev COMMIT] [-n NUM]")
    assert "dvc exp show --json" in said and "Acc@1, Acc@2" in said
    assert max(map(len, said.splitlines())) <= 120
    with pytest.raises(SystemExit) as done:
        main(["--width", "80"])
    assert done.value.code == 2
    assert "unrecognized arguments: --width" in capsys.readouterr().err


def test_an_experiment_not_there_is_named_with_the_ones_that_are() -> None:
    with pytest.raises(LosonaError, match=r"no experiment 'nope' here; there are: workspace, "):
        select(from_exp_show(SHOWN), ["nope"])
    # A revision's prefix finds it too.
    assert select(from_exp_show(SHOWN), ["58eb38b"])[0].name == "conic-maid"


def test_naming_no_experiment_selects_them_all_and_none_are_unlike() -> None:
    experiments = from_exp_show(SHOWN)
    assert select(experiments, []) == experiments
    assert unlike_notes([]) == []


def test_a_commit_no_branch_names_is_headed_by_its_short_hash() -> None:
    # A checkout of an earlier revision: DVC names the baseline nothing, and gives its hash.
    detached = [dict(row) for row in SHOWN]
    rev = detached[1]["rev"]
    detached[1]["name"] = None
    experiments = from_exp_show(detached)
    assert experiments[1].name == rev[:7]
    header = table_lines(experiments[:2], FILES)[0]
    assert header.split() == ["workspace", rev[:7]]


def test_an_experiment_not_listed_is_asked_of_dvc() -> None:
    listed = from_exp_show(SHOWN)
    earlier = dataclasses.replace(listed[3], name="plump-tint", rev="a7b87c1" + "0" * 33)
    asked: list[str] = []

    def look_up(name: str) -> Experiment:
        asked.append(name)
        if name != "plump-tint":
            raise LosonaError(f"dvc exp show --rev {name}: unknown Git revision {name!r}")
        return earlier

    assert select(listed, ["conic-maid", "plump-tint"], look_up) == [listed[3], earlier]
    assert asked == ["plump-tint"]  # what is listed is not asked again
    with pytest.raises(LosonaError, match=r"no experiment or revision 'nope': .* -A lists every"):
        select(listed, ["nope"], look_up)


def test_the_commits_are_chosen_as_dvc_exp_show_chooses_them() -> None:
    def options(*argv: str) -> list[str]:
        return exp_show_options(_parser().parse_args(argv))

    assert options() == []
    assert options("-A") == ["-A"]
    assert options("--rev", "a7b87c1", "--rev", "main", "-n", "2", "conic-maid") == [
        *("--rev", "a7b87c1", "--rev", "main", "-n", "2")
    ]


@pytest.mark.slow  # runs DVC experiments in a small project of its own
def test_experiments_of_earlier_commits_are_found_by_name_and_revision(tmp_path: Path) -> None:
    # The steps: an experiment, then `git commit`; the experiment's baseline is now
    # an earlier commit, which `dvc exp show` alone no longer lists.
    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)
        return done.stdout.decode().strip()

    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    (tmp_path / "score.py").write_text(
        "import json, yaml\n"
        "k = yaml.safe_load(open('params.yaml'))['k']\n"
        "json.dump({'acc': 10 * k}, open('metrics.json', 'w'))\n"
    )
    (tmp_path / "dvc.yaml").write_text(
        "stages:\n  score:\n    cmd: python score.py\n    deps: [score.py]\n"
        "    params: [k]\n    metrics:\n      - metrics.json:\n          cache: false\n"
    )
    (tmp_path / "params.yaml").write_text("k: 1\n")
    run_dvc("init", "-q", cwd=tmp_path)
    run_dvc("repro", "-q", cwd=tmp_path)
    git("add", "-A")
    git("commit", "-qm", "first run")
    first = git("rev-parse", "HEAD")
    run_dvc("exp", "run", "-S", "k=2", "-n", "plump-tint", cwd=tmp_path)
    git("commit", "-qam", "second run")

    assert [e.name for e in dvc_experiments(tmp_path)] == ["workspace", "master"]
    every = dvc_experiments(tmp_path, ["-A"])
    assert [e.name for e in every] == ["workspace", "master", first[:7], "plump-tint"]

    def look_up(name: str) -> Experiment:
        return dvc_revision(name, tmp_path)

    tint, commit = select(dvc_experiments(tmp_path), ["plump-tint", first[:7]], look_up)
    assert tint.name == "plump-tint" and tint.params["params.yaml"] == {"k": 2}
    assert tint.metrics["metrics.json"] == {"acc": 20}
    assert commit.name == first[:7] and commit.rev == first
    header = table_lines([tint, commit], FILES)[0]
    assert header.split() == ["plump-tint", f"({tint.rev[:7]})", first[:7]]
    with pytest.raises(LosonaError, match="unknown Git revision 'nope'"):
        select(dvc_experiments(tmp_path), ["nope"], look_up)
