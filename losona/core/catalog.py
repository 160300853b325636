"""The taxonomy catalog (losona/data/catalog.yaml): events, norms, venues and the
applicability relation A(n). `python -m losona.catalog` prints the valid (event, norm)
cells and the matrix.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import Field, StrictStr, model_validator

from losona.core.config.checker import Refusal, check
from losona.core.config.values import Schema, Text
from losona.core.files import read_yaml

CATALOG_PATH = Path(str(resources.files("losona") / "data" / "catalog.yaml"))


@dataclass(frozen=True)
class Norm:
    """One norm of the taxonomy with the judge-facing text the judge prompt needs."""

    id: str
    requirement: str
    statement: str
    example_elicitor: str
    example_compliant_response: str
    example_breaching_response: str
    applicable_events: tuple[str, ...]


@dataclass(frozen=True)
class Catalog:
    """The whole taxonomy, in the catalog file's order."""

    version: str
    applicability_method: str
    venues: dict[str, str]
    events: dict[str, str]
    norms: dict[str, Norm]

    def cells(self) -> list[tuple[str, str]]:
        """The valid (event, norm) cells, in catalog order."""
        return [
            (event, norm.id)
            for norm in self.norms.values()
            for event in self.events
            if event in norm.applicable_events
        ]

    def is_applicable(self, event: str, norm: str) -> bool:
        """Whether the norm is interactionally plausible for the event type."""
        return norm in self.norms and event in self.norms[norm].applicable_events


class _NormEntry(Schema):
    """One norm's entry in the catalog file (its id is the key above it)."""

    requirement: Text
    statement: Text
    example_elicitor: Text
    example_compliant_response: Text
    example_breaching_response: Text
    applicable_events: Annotated[
        tuple[Text, ...], Field(min_length=1, description="a non-empty list of event ids")
    ]


Descriptions = Annotated[
    dict[StrictStr, Text], Field(description="a mapping of ids to descriptions (text)")
]


class _CatalogFile(Schema):
    """The catalog file as written: checked by the config checker, like every config."""

    version: Text
    applicability_method: Text
    venues: Descriptions
    events: Descriptions
    norms: Annotated[
        dict[StrictStr, _NormEntry], Field(description="a mapping of norm ids to norm entries")
    ]

    @model_validator(mode="after")
    def _events_are_known(self) -> Self:
        for norm_id, norm in self.norms.items():
            unknown = [e for e in norm.applicable_events if e not in self.events]
            if unknown:
                raise Refusal(
                    "ids of events listed under 'events'",
                    f"unknown event ids {unknown}",
                    key=f"norms.{norm_id}.applicable_events",
                )
        return self


def parse_catalog(raw: Any) -> Catalog:
    """Build a Catalog from the parsed YAML, refusing anything incomplete or inconsistent."""
    checked = check(_CatalogFile, raw, origin=str(CATALOG_PATH), key="")
    return Catalog(
        **checked.model_dump(exclude={"norms"}),
        norms={
            norm_id: Norm(id=norm_id, **entry.model_dump())
            for norm_id, entry in checked.norms.items()
        },
    )


@cache
def load_catalog() -> Catalog:
    """The catalog shipped with the package (read once per process)."""
    return parse_catalog(read_yaml(CATALOG_PATH))


def format_matrix(catalog: Catalog) -> str:
    """The applicability matrix as text: one row per event, one column per norm."""
    norm_ids = list(catalog.norms)
    width = max(len(e) for e in catalog.events)
    lines = ["Columns (norms):"]
    lines += [f"  {i + 1:>2}  {n}" for i, n in enumerate(norm_ids)]
    lines.append("")
    lines.append(" " * width + "  " + " ".join(f"{i + 1:>2}" for i in range(len(norm_ids))))
    for event in catalog.events:
        marks = " ".join(" x" if catalog.is_applicable(event, n) else " ." for n in norm_ids)
        lines.append(f"{event:<{width}}  {marks}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Print the number of valid cells and the applicability matrix."""
    parser = argparse.ArgumentParser(prog="python -m losona.catalog", description=__doc__)
    parser.parse_args(argv)
    catalog = load_catalog()
    cells = catalog.cells()
    total = len(catalog.events) * len(catalog.norms)
    print(
        f"LoSoNA catalog {catalog.version}: {len(catalog.events)} event types, "
        f"{len(catalog.norms)} norms, {len(cells)} valid (event, norm) cells of {total}"
    )
    print()
    print(format_matrix(catalog))
    print()
    print("How applicability was decided:")
    print(catalog.applicability_method)
