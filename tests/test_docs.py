"""The docs site (mkdocs.yml, docs/) builds with `mkdocs build --strict`, as CI builds it.

A strict build fails on any warning: a link to a page the site lacks, an anchor no heading
has, a page left out of the nav. The build runs into a temporary folder, never into the
checkout. The contracts page is generated from losona/core/contracts.py and each stage family's
tables.py (docs/hooks.py), so it is checked against the modules' schemas themselves.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from losona.audit import tables as audit_tables
from losona.board import tables as board_tables
from losona.core import contracts
from losona.dynamic import tables as dynamic_tables
from losona.generation import tables as generation_tables
from losona.results import tables as result_tables

ROOT = Path(__file__).resolve().parent.parent
# What the build reads: the config, the pages, and the files docs/hooks.py turns into pages.
SOURCES = ["mkdocs.yml", "docs", "README.md", "benchmarks/README.md", "losona/core/contracts.py"]
SOURCES += [str(path.relative_to(ROOT)) for path in sorted(ROOT.glob("losona/*/tables.py"))]

# Every test here builds the site in a process of its own (seconds to tens of seconds).
pytestmark = pytest.mark.slow
# The tests of the one built site share a worker (make test's --dist loadgroup): built once.
ON_THE_SITE = pytest.mark.xdist_group("docs_site")


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of the site configured in `root`, into `site`."""
    # Material prints a notice about MkDocs 2.0 on every build; it is no warning of ours.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def warnings(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The build's WARNING and ERROR lines."""
    return [
        line
        for line in (result.stdout + result.stderr).splitlines()
        if line.startswith(("WARNING", "ERROR"))
    ]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site as the repository builds it."""
    out = tmp_path_factory.mktemp("site")
    result = build(ROOT, out)
    assert result.returncode == 0 and not warnings(result), result.stdout + result.stderr
    return out


@ON_THE_SITE
def test_the_docs_build_strictly_with_no_warning(site: Path) -> None:
    pages = {path.parent.name for path in site.glob("*/index.html")}
    assert (site / "index.html").is_file()
    assert {"models", "judges", "judge-audit", "reproducing", "contracts", "benchmarks"} <= pages


@ON_THE_SITE
def test_the_home_page_is_the_readme_with_its_links_pointing_into_the_site(site: Path) -> None:
    home = (site / "index.html").read_text(encoding="utf-8")
    assert 'id="quick-start"' in home and "Both commands create" in home
    assert 'href="docs/' not in home and 'href="benchmarks/README.md' not in home
    assert 'href="models/"' in home and 'href="benchmarks/"' in home


def schema_tables(page: str) -> list[list[str]]:
    """The first column of every table on a built page: the column names it lists."""
    tables = re.findall(r"<tbody>(.*?)</tbody>", page, re.S)
    return [re.findall(r"<tr>\s*<td><code>([^<]+)</code></td>", table) for table in tables]


@ON_THE_SITE
def test_the_contracts_page_lists_every_schema_column_by_column(site: Path) -> None:
    tables = schema_tables((site / "contracts" / "index.html").read_text(encoding="utf-8"))
    modules = (
        contracts,
        result_tables,
        audit_tables,
        generation_tables,
        dynamic_tables,
        board_tables,
    )
    schemas = {
        name: value
        for module in modules
        for name, value in vars(module).items()
        if name.endswith("_SCHEMA") and isinstance(value, pl.Schema)
    }
    schemas["breakdown_schema"] = result_tables.breakdown_schema("norm_id")
    assert len(schemas) > 20
    for name, schema in schemas.items():
        assert schema.names() in tables, f"{name}: no table lists {schema.names()}"
    assert len(tables) == len(schemas)


def copy_sources(tmp_path: Path) -> Path:
    """A copy of what the build reads, to break on purpose."""
    root = tmp_path / "repo"
    for source in SOURCES:
        target = root / source
        target.parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / source).is_dir():
            shutil.copytree(ROOT / source, target)
        else:
            shutil.copy(ROOT / source, target)
    return root


def append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


@pytest.mark.parametrize(
    ("file", "text", "named"),
    [
        ("docs/models.md", "\nSee [the missing page](no-such-page.md).\n", "no-such-page.md"),
        ("docs/models.md", "\nSee [a heading](judges.md#no-such-heading).\n", "no-such-heading"),
        ("README.md", "\nSee [the missing page](docs/no-such-page.md).\n", "no-such-page.md"),
        ("benchmarks/README.md", "\nSee [code](../losona/core/contracts.py).\n", "contracts.py"),
    ],
    ids=["page link", "anchor", "readme link", "link out of the site"],
)
def test_a_broken_link_fails_the_build(tmp_path: Path, file: str, text: str, named: str) -> None:
    root = copy_sources(tmp_path)
    append(root / file, text)
    result = build(root, tmp_path / "site")
    assert result.returncode != 0
    assert any(named in line for line in warnings(result)), result.stdout + result.stderr


def test_a_schema_the_contracts_page_does_not_place_fails_the_build(tmp_path: Path) -> None:
    root = copy_sources(tmp_path)
    page = root / "docs" / "contracts.md"
    page.write_text(
        page.read_text(encoding="utf-8").replace("<!-- contract: PROMPT_SCHEMA -->", ""),
        encoding="utf-8",
    )
    result = build(root, tmp_path / "site")
    assert result.returncode != 0
    assert "missing ['PROMPT_SCHEMA']" in result.stdout + result.stderr
