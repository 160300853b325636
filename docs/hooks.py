"""MkDocs hooks (mkdocs.yml, `hooks:`): the pages whose text lives elsewhere in the repository.

- `index.md` is the README and `benchmarks.md` is `benchmarks/README.md`: each is written
  once, where a reader of the repository looks for it, and the site shows it as it is.
  Links are written as repository paths, so they work on a code host too, and rewritten
  here to site pages; a link to anything the site does not hold is left as it is, so
  `mkdocs build --strict` fails on it.
- `contracts.md` holds the prose; every `<!-- contract: NAME -->` marker in it becomes the
  table of columns of the schema `NAME` in `losona/core/contracts.py` or a stage family's
  `losona/<family>/tables.py`: name, type and the comment written beside the column there.
  A schema the page does not place, or a marker naming no schema, stops the build: the
  page cannot drift from the code.
"""

from __future__ import annotations

import ast
import importlib
import io
import posixpath
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
# The files that define the tables: the first turn's, then each stage family's own.
CONTRACTS = "losona/core/contracts.py and losona/*/tables.py"


def contract_files() -> list[str]:
    """Every file of CONTRACTS, as repository paths."""
    families = sorted(path.relative_to(ROOT).as_posix() for path in ROOT.glob("losona/*/tables.py"))
    return ["losona/core/contracts.py", *families]


# Site page -> the repository file it shows.
INCLUDED = {"index.md": "README.md", "benchmarks.md": "benchmarks/README.md"}

# An inline Markdown link or image target: ](target) or ](target "title").
_LINK = re.compile(r"(\]\()([^)\s]+)")
_MARKER = re.compile(r"<!--\s*contract:\s*(.+?)\s*-->")


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the pages whose Markdown is a repository file outside docs/."""
    for page, source in INCLUDED.items():
        text = (ROOT / source).read_text(encoding="utf-8")
        files.append(File.generated(config, page, content=_site_links(text, source)))
    return files


def _site_links(text: str, source: str) -> str:
    """`source`'s relative links, rewritten from repository paths to site pages."""
    site_page = {repo: page for page, repo in INCLUDED.items()}

    def rewrite(match: re.Match[str]) -> str:
        target = match.group(2)
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith(("#", "/")):
            return match.group(0)
        path, hash_, anchor = target.partition("#")
        repo_path = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
        if repo_path in site_page:
            path = site_page[repo_path]
        elif repo_path.startswith("docs/"):
            path = repo_path.removeprefix("docs/")
        return match.group(1) + path + hash_ + anchor

    return _LINK.sub(rewrite, text)


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Point a page's links to the README (`../README.md`) at the site's own copy, and fill
    the contracts page's markers with the tables of CONTRACTS."""
    if page.file.src_uri not in INCLUDED:
        markdown = _site_links(markdown, "docs/" + page.file.src_uri)
    if page.file.src_uri != "contracts.md":
        return markdown
    docs: dict[str, SchemaDoc] = {}
    for file in contract_files():
        docs.update(schema_docs((ROOT / file).read_text(encoding="utf-8"), file))
    placed: list[str] = []

    def table(match: re.Match[str]) -> str:
        call = match.group(1)
        name, args = _parse_marker(call)
        if name not in docs:
            raise PluginError(
                f"docs/contracts.md: the marker '{call}' names no schema of {CONTRACTS}; "
                f"it defines {', '.join(sorted(docs))}"
            )
        placed.append(name)
        module = importlib.import_module(docs[name].file.removesuffix(".py").replace("/", "."))
        obj = getattr(module, name)
        schema = obj(*args) if callable(obj) else obj
        return render_table(docs[name], schema)

    markdown = _MARKER.sub(table, markdown)
    missing = sorted(set(docs) - set(placed))
    twice = sorted({name for name in placed if placed.count(name) > 1})
    if missing or twice:
        raise PluginError(
            f"docs/contracts.md must place every schema of {CONTRACTS} once: "
            f"missing {missing or 'none'}, placed twice {twice or 'none'}"
        )
    return markdown


def _parse_marker(call: str) -> tuple[str, list[Any]]:
    """`NAME` or `function("arg", ...)`: the name and the literal arguments."""
    node = ast.parse(call, mode="eval").body
    if isinstance(node, ast.Name):
        return node.id, []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id, [ast.literal_eval(arg) for arg in node.args]
    raise PluginError(f"docs/contracts.md: cannot read the marker '{call}'")


@dataclass
class SchemaDoc:
    """What a contracts file says about one schema: its comments, the schema's and each column's."""

    file: str  # the repository path of the file that defines it
    about: list[str]
    columns: list[str] = field(default_factory=list)


def schema_docs(source: str, file: str) -> dict[str, SchemaDoc]:
    """Every schema of a contracts file (a `*_SCHEMA = pl.Schema({...})` constant, or a
    function returning one) with its comments, read from the source: comments do not survive
    import."""
    comments = {
        token.start[0]: token.string.removeprefix("#").strip()
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    lines = source.splitlines()

    def comment_above(lineno: int, stop: int) -> list[str]:
        """The comment-only lines right above `lineno`, after line `stop`."""
        found: list[str] = []
        line = lineno - 1
        while line > stop and lines[line - 1].strip().startswith("#"):
            found.insert(0, comments[line])
            line -= 1
        return found

    docs: dict[str, SchemaDoc] = {}
    for node in ast.parse(source).body:
        call: ast.expr | None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if not (isinstance(target, ast.Name) and target.id.endswith("_SCHEMA")):
                continue
            name, call = target.id, node.value
            about = [" ".join(comment_above(node.lineno, 0))]
        elif isinstance(node, ast.FunctionDef):
            returns = [n.value for n in ast.walk(node) if isinstance(n, ast.Return)]
            if not (returns and _is_schema_call(returns[0])):
                continue
            name, call = node.name, returns[0]
            about = [ast.get_docstring(node) or ""]
        else:
            continue
        if not _is_schema_call(call):
            raise PluginError(f"{file}: {name} is not written as pl.Schema({{...}})")
        assert isinstance(call, ast.Call)
        if call.lineno in comments:
            about.append(comments[call.lineno])
        columns_node = call.args[0]
        assert isinstance(columns_node, ast.Dict)
        doc = SchemaDoc(file=file, about=[text for text in about if text])
        previous = call.lineno
        for key, value in zip(columns_node.keys, columns_node.values, strict=True):
            assert key is not None
            notes = comment_above(key.lineno, previous)
            end = value.end_lineno or key.lineno
            if end in comments:
                notes.append(comments[end])
            doc.columns.append(" ".join(notes))
            previous = end
        docs[name] = doc
    return docs


def _is_schema_call(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "Schema"
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Dict)
    )


def render_table(doc: SchemaDoc, schema: pl.Schema) -> str:
    """A Markdown table of `schema`'s columns, in order, with their notes from the source."""
    if len(doc.columns) != len(schema):
        raise PluginError(f"{doc.file}: read {len(doc.columns)} columns, found {len(schema)}")
    rows = ["| column | type | notes |", "|---|---|---|"]
    for (name, dtype), note in zip(schema.items(), doc.columns, strict=True):
        rows.append(f"| `{name}` | `{_type(dtype)}` | {_cell(note)} |")
    about = "".join(f"> {_escape(text)}\n>\n" for text in doc.about)
    source = f"{about}> (from `{doc.file}`)\n\n" if about else ""
    return source + "\n".join(rows)


def _type(dtype: Any) -> str:
    """A column type in words: `string`, `list of {name: string, bio: string}`, ..."""
    if isinstance(dtype, pl.List):
        return "list of " + _type(dtype.inner)
    if isinstance(dtype, pl.Struct):
        return "{" + ", ".join(f"{f.name}: {_type(f.dtype)}" for f in dtype.fields) + "}"
    words = {pl.String: "string", pl.Boolean: "bool"}
    return words.get(type(dtype), str(dtype).lower())


def _escape(text: str) -> str:
    """Source comments as Markdown text: `<...>` placeholders shown, not taken for HTML."""
    return text.replace("<", "&lt;")


def _cell(text: str) -> str:
    return _escape(text).replace("|", "\\|")
