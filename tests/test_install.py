"""What the project's own install (pyproject.toml, constraints.txt) must give DVC."""

from __future__ import annotations

from pathlib import Path

from dvc.utils.serialize import parse_yaml
from ruamel.yaml import YAML
from ruamel.yaml.main import CParser

REPO = Path(__file__).resolve().parents[1]


def test_dvc_reads_its_files_with_ruamels_c_loader() -> None:
    # Every dvc command reads dvc.yaml and dvc.lock. ruamel.yaml 0.19 made its C loader an
    # extra; parsing them in pure Python, a `dvc exp run` that reran nothing took 1.5 times
    # as long on a copy of the golden run (tests/conftest.py), a 6-stage repro 1.2 times.
    assert CParser is not None, "ruamel.yaml.clib is missing: pyproject.toml installs it"
    assert YAML(typ="safe").Parser is CParser  # the loader DVC's parse_yaml makes
    text = (REPO / "dvc.yaml").read_text()
    assert parse_yaml(text, "dvc.yaml") == YAML(typ="safe", pure=True).load(text)
