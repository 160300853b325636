"""Scenarios on the command line, as people read them.

    python -m losona.scenarios show <scenario_id>   # the chat, demos and elicitor marked
    python -m losona.scenarios stats                # coverage of the set
    python -m losona.scenarios list

By default these read the bundled set; `--table data/scenarios.parquet` reads a fetched
scenario table instead (any dataset).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from losona.core.catalog import load_catalog
from losona.core.contracts import SCENARIO_SCHEMA, Scenario, scenarios_from_table
from losona.core.errors import LosonaError
from losona.core.files import read_parquet
from losona.scenarios.datasets import fetch_scenarios
from losona.scenarios.view import coverage, format_chat, without_demonstrations


def _load(table: Path | None) -> list[Scenario]:
    if table is None:
        frame = fetch_scenarios({"kind": "bundled", "name": "bundled"})
    else:
        frame = read_parquet(table, SCENARIO_SCHEMA, made_by="fetch")
    return scenarios_from_table(frame)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line: show one scenario, list them, or print the coverage table."""
    parser = argparse.ArgumentParser(
        prog="python -m losona.scenarios",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--table", type=Path, help="a scenario table (default: the bundled set)")
    commands = parser.add_subparsers(dest="command", required=True)
    show = commands.add_parser("show", help="print one scenario as a reader sees the chat")
    show.add_argument("scenario_id")
    show.add_argument(
        "--no-demos", action="store_true", help="show the no-demonstration control instead"
    )
    commands.add_parser("stats", help="print the coverage table")
    commands.add_parser("list", help="print every scenario id")
    args = parser.parse_args(argv)
    try:
        scenarios = _load(args.table)
        if args.command == "stats":
            print(coverage(scenarios, load_catalog()))
        elif args.command == "list":
            print("\n".join(s.scenario_id for s in scenarios))
        else:
            by_id = {s.scenario_id: s for s in scenarios}
            if args.scenario_id not in by_id:
                raise LosonaError(
                    f"no scenario '{args.scenario_id}'; "
                    "`python -m losona.scenarios list` shows the ids"
                )
            chosen = by_id[args.scenario_id]
            print(format_chat(without_demonstrations(chosen) if args.no_demos else chosen))
    except LosonaError as exc:
        raise SystemExit(f"error: {exc}") from None
