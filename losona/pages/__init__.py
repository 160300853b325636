"""Every HTML page the pipeline writes, through one Jinja2 environment and one layout.

Each page is `layout.html` around a list of `Section`s, each the rendering of a template in
templates/. Autoescaping is always on: model-written text must never become markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from losona.core.formatting import counted, trial_number

TEMPLATES = Path(__file__).parent / "templates"

ENVIRONMENT = Environment(
    loader=FileSystemLoader(TEMPLATES),
    autoescape=True,
    undefined=StrictUndefined,  # a misspelt field fails the render instead of showing ""
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
# `{{ row.trial | trial }}`: a trial's index as people count, from 1 (losona.core.formatting).
ENVIRONMENT.filters["trial"] = trial_number
# `{{ n | counted("trial") }}`: "1 trial", "2 trials" (losona.core.formatting).
ENVIRONMENT.filters["counted"] = counted


@dataclass(frozen=True)
class Section:
    """One part of a page: its anchor id, its heading, and its body (HTML when it comes
    from `fragment`; any other string is text, and the layout escapes it)."""

    anchor: str
    title: str
    body: str


def fragment(template: str, **data: Any) -> Markup:
    """A template rendered to a piece of HTML, to place inside another page."""
    # The one place where rendered HTML is trusted as markup: the environment escapes every
    # value a template prints, so its output holds only the template's own tags.
    return Markup(ENVIRONMENT.get_template(template).render(**data))


def section(anchor: str, title: str, template: str, **data: Any) -> Section:
    """A `Section` whose body is `template` rendered with `data`."""
    return Section(anchor, title, fragment(template, **data))


def render_page(title: str, lead: str, sections: Sequence[Section]) -> str:
    """A self-contained HTML document: `lead` (HTML or text) under the title, then `sections`."""
    return ENVIRONMENT.get_template("layout.html").render(title=title, lead=lead, sections=sections)
