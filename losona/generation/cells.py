"""Which candidates to write: cells of the catalog's valid (event, norm) space and venues.

Each draw is seeded by the run's seed and what it is drawn for, never a shared stream, so
adding a norm or a cell leaves every other draw where it was.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from losona.core.catalog import Catalog
from losona.core.errors import LosonaError
from losona.generation.settings import CellSelection


@dataclass(frozen=True, order=True)
class Slot:
    """One candidate to write: an (event, norm) cell, a venue and the sample index."""

    event_type: str
    norm_id: str
    venue: str
    sample: int

    @property
    def cell(self) -> tuple[str, str]:
        """The (event, norm) cell."""
        return (self.event_type, self.norm_id)


def parse_cell(entry: str, catalog: Catalog) -> tuple[str, str, str | None]:
    """One `generate.cells.list` entry, event/norm or event/norm@venue, checked."""
    where = f"generate.cells.list: {entry!r}"
    cell, _, venue = entry.partition("@")
    event, slash, norm = cell.partition("/")
    if not slash or not event or not norm or ("@" in entry and not venue):
        raise LosonaError(f"{where}: expected event/norm or event/norm@venue")
    if event not in catalog.events:
        raise LosonaError(f"{where}: unknown event type '{event}'; expected one of the catalog's")
    if norm not in catalog.norms:
        raise LosonaError(f"{where}: unknown norm '{norm}'; expected one of the catalog's")
    if not catalog.is_applicable(event, norm):
        raise LosonaError(
            f"{where}: the norm does not apply to this event in the catalog "
            "(python -m losona.core.catalog shows the valid cells)"
        )
    if venue and venue not in catalog.venues:
        raise LosonaError(
            f"{where}: unknown venue '{venue}'; expected one of {list(catalog.venues)}"
        )
    return event, norm, venue or None


def _venues(selection: CellSelection, catalog: Catalog) -> list[str]:
    if selection.venues is None:
        return list(catalog.venues)
    unknown = [v for v in selection.venues if v not in catalog.venues]
    if unknown:
        raise LosonaError(
            f"generate.cells.venues: unknown venue(s) {unknown}; expected some of "
            f"{list(catalog.venues)}"
        )
    return list(selection.venues)


def select_cells(
    selection: CellSelection, catalog: Catalog, seed: int
) -> list[tuple[str, str, str | None]]:
    """The chosen (event, norm, fixed venue or None) cells, sorted."""
    if selection.mode == "list":
        chosen = [parse_cell(entry, catalog) for entry in selection.cells]
        repeated = sorted(
            {(e, n) for e, n, _ in chosen if sum(c[:2] == (e, n) for c in chosen) > 1}
        )
        if repeated:
            raise LosonaError(
                f"generate.cells.list: the cell(s) {[f'{e}/{n}' for e, n in repeated]} appear "
                "more than once; ask for more candidates with generate.candidates_per_cell"
            )
        return sorted(chosen, key=lambda c: (c[0], c[1]))
    cells = catalog.cells()
    if selection.mode == "per_norm":
        drawn: list[tuple[str, str]] = []
        for norm in catalog.norms:
            pool = sorted(cell for cell in cells if cell[1] == norm)
            rng = random.Random(f"{seed}/cells/{norm}")
            drawn += rng.sample(pool, min(selection.per_norm, len(pool)))
        cells = drawn
    return sorted((event, norm, None) for event, norm in cells)


def plan_slots(
    selection: CellSelection, catalog: Catalog, candidates_per_cell: int, seed: int
) -> list[Slot]:
    """Every candidate to write: each chosen cell times `candidates_per_cell`, venues drawn."""
    venues = _venues(selection, catalog)
    slots = []
    for event, norm, fixed in select_cells(selection, catalog, seed):
        for sample in range(candidates_per_cell):
            venue = fixed or random.Random(f"{seed}/venue/{event}/{norm}/{sample}").choice(venues)
            slots.append(Slot(event, norm, venue, sample))
    return slots
