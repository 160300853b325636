"""Experiments side by side (`python -m losona.experiments`), read from `dvc exp show --json`.

The fixture is what DVC printed for a real project of this pipeline: a committed run
(K = 1 on three scenarios, the lexicon judge) and two `dvc exp run` experiments, one with
K = 2 (conic-maid), one with the scripted judge added (erect-cyma). The journey test
(tests/test_first_hour.py) runs the command against experiments it makes itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from losona.errors import LosonaError
from losona.report.experiments import (
    MetricsFiles,
    default_paths,
    from_exp_show,
    select,
    table_lines,
)

SHOWN = json.loads((Path(__file__).parent / "fixtures" / "exp_show.json").read_text())


def test_each_experiment_is_a_column_of_settings_and_headline_numbers(workdir: Path) -> None:
    files = MetricsFiles.of(default_paths())  # where dvc.yaml puts them, from conf/paths
    assert files.results == "reports/metrics.json"
    experiments = from_exp_show(SHOWN)
    assert [e.name for e in experiments] == ["workspace", "master", "erect-cyma", "conic-maid"]
    lines = table_lines(select(experiments, ["conic-maid", "erect-cyma"]), files)
    assert lines[0].split() == ["conic-maid", "(58eb38b)", "erect-cyma", "(0c72272)"]

    def cells(label: str) -> list[str]:
        (row,) = [line for line in lines if line.startswith(label)]
        return [c.strip() for c in row[len(label) :].split("  ") if c.strip()]

    assert cells("K (sampling.trials)") == ["2", "1"]
    assert cells("judges") == ["lexicon", "lexicon, local_openai"]
    assert cells("subset") == ["limit 3, seed 0", "limit 3, seed 0"]
    assert cells("Acc@K (%): lexicon / local / naive") == ["33.3 [0.0, 100.0]"] * 2
    # A judge one experiment lacks: n/a in its column, not a missing row.
    assert cells("Acc@K (%): local_openai / local / naive") == ["n/a", "0.0 [0.0, 0.0]"]
    assert cells("judge agreement % (kappa): lexicon vs local_openai") == ["n/a", "66.7 (0.000)"]
    assert cells("controls right (%): lexicon") == ["100.0", "100.0"]
    # A handful of rows, not DVC's hundreds of columns.
    assert len(lines) < 20


def test_an_experiment_not_there_is_named_with_the_ones_that_are() -> None:
    with pytest.raises(LosonaError, match=r"no experiment 'nope' here; there are: workspace, "):
        select(from_exp_show(SHOWN), ["nope"])
    # A revision's prefix finds it too.
    assert select(from_exp_show(SHOWN), ["58eb38b"])[0].name == "conic-maid"
