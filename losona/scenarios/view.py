"""Reading scenarios as people do, and the no-demonstration control built from them."""

from __future__ import annotations

import dataclasses
import statistics
import textwrap
from collections import Counter
from collections.abc import Sequence

from losona.core.catalog import Catalog
from losona.core.contracts import Scenario


def without_demonstrations(scenario: Scenario) -> Scenario:
    """The screening control: the same scenario with exactly its demonstration turns removed,
    every other turn and the elicitor unchanged (paper Sections 3 and 5.4)."""
    kept = tuple(turn for turn in scenario.turns if not turn.is_demo)
    return dataclasses.replace(scenario, turns=kept)


def format_chat(scenario: Scenario, width: int = 100) -> str:
    """A scenario as a reader sees it: setting, cast, numbered chat, demos and elicitor marked."""
    lines = [
        f"{scenario.scenario_id}",
        f"  event: {scenario.event_type}    norm: {scenario.norm_id}    venue: {scenario.venue}",
        f"  channel: {scenario.channel_description}",
        f"  subject: {scenario.subject} ({scenario.subject_bio})",
    ]
    if scenario.end_goal:
        lines.append(f"  end goal (generation only): {scenario.end_goal}")
    lines.append("  cast:")
    lines += [f"    - {member.name}: {member.bio}" for member in scenario.cast]
    lines.append("")
    turns = [*scenario.turns, scenario.elicitor]
    for turn in turns:
        mark = "## DEMO" if turn.is_demo else ""
        if turn.index == scenario.elicitor_index:
            mark = "## ELICITOR"
        head = f"[{turn.index:>2}] {turn.actor}: "
        body = textwrap.fill(
            turn.content, width=width, initial_indent=head, subsequent_indent=" " * len(head)
        )
        lines.append(f"{body}    {mark}".rstrip())
    lines += [
        "",
        f"Hidden norm ({scenario.norm_id}):",
        textwrap.indent(textwrap.fill(scenario.norm_statement, width=width - 2), "  "),
    ]
    return "\n".join(lines)


def coverage(scenarios: Sequence[Scenario], catalog: Catalog) -> str:
    """The coverage table: scenarios per norm, event and venue, turn and demo counts."""
    norms = Counter(s.norm_id for s in scenarios)
    events = Counter(s.event_type for s in scenarios)
    venues = Counter(s.venue for s in scenarios)
    lengths = [len(s.turns) + 1 for s in scenarios]  # counting the elicitor, as the paper does
    demos = [sum(t.is_demo for t in s.turns) for s in scenarios]
    lines = [
        f"{len(scenarios)} scenarios, {len(norms)} of {len(catalog.norms)} norms, "
        f"{len(events)} of {len(catalog.events)} event types, {len(venues)} venues",
        f"turns (with the elicitor): {min(lengths)} to {max(lengths)}, "
        f"mean {statistics.mean(lengths):.1f}",
        f"demonstration turns: {min(demos)} to {max(demos)}, mean {statistics.mean(demos):.2f}",
    ]
    for name, counts, keys in (
        ("norm", norms, catalog.norms),
        ("event", events, catalog.events),
        ("venue", venues, sorted(venues)),
    ):
        lines += ["", f"{name:<42}scenarios", *(f"  {k:<40}{counts[k]:>3}" for k in keys)]
    return "\n".join(lines)
