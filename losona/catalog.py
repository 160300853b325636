"""The taxonomy catalog: events, norms, venues and the applicability relation A(n).

The facts live in `losona/data/catalog.yaml`; this module only reads and checks them.
`python -m losona.catalog` prints the number of valid (event, norm) cells and the matrix.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from losona.errors import LosonaError
from losona.files import read_yaml

CATALOG_PATH = Path(str(resources.files("losona") / "data" / "catalog.yaml"))

_NORM_TEXT_FIELDS = (
    "requirement",
    "statement",
    "example_elicitor",
    "example_compliant_response",
    "example_breaching_response",
)


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


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise LosonaError(f"{CATALOG_PATH}: {where}: expected non-empty text, found {value!r}")
    return value.strip()


def parse_catalog(raw: Any, origin: Path = CATALOG_PATH) -> Catalog:
    """Build a Catalog from the parsed YAML, refusing anything incomplete or inconsistent."""
    if not isinstance(raw, dict):
        raise LosonaError(f"{origin}: expected a mapping at the top level")
    for key in ("version", "applicability_method", "venues", "events", "norms"):
        if key not in raw:
            raise LosonaError(f"{origin}: missing top-level key '{key}'")
    events = {str(k): _text(v, f"events.{k}") for k, v in raw["events"].items()}
    venues = {str(k): _text(v, f"venues.{k}") for k, v in raw["venues"].items()}
    norms: dict[str, Norm] = {}
    for norm_id, entry in raw["norms"].items():
        if not isinstance(entry, dict):
            raise LosonaError(f"{origin}: norms.{norm_id}: expected a mapping")
        texts = {f: _text(entry.get(f), f"norms.{norm_id}.{f}") for f in _NORM_TEXT_FIELDS}
        applicable = entry.get("applicable_events")
        if not isinstance(applicable, list) or not applicable:
            raise LosonaError(
                f"{origin}: norms.{norm_id}.applicable_events: expected a non-empty list"
            )
        unknown = [e for e in applicable if e not in events]
        if unknown:
            raise LosonaError(
                f"{origin}: norms.{norm_id}.applicable_events: unknown event ids {unknown}"
            )
        norms[str(norm_id)] = Norm(id=str(norm_id), applicable_events=tuple(applicable), **texts)
    return Catalog(
        version=str(raw["version"]),
        applicability_method=_text(raw["applicability_method"], "applicability_method"),
        venues=venues,
        events=events,
        norms=norms,
    )


@cache
def load_catalog(path: Path = CATALOG_PATH) -> Catalog:
    """The catalog shipped with the package (read once per process)."""
    return parse_catalog(read_yaml(path), path)


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


if __name__ == "__main__":
    main()
