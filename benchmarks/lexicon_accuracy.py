"""How often the lexicon judge is right, norm by norm.

It judges, for every norm, the catalog's example compliant response (expected: complies)
and example breaching response (expected: breach), each as a reply to the catalog's
example elicitor, and every demonstration turn of the bundled scenario set as a reply to
the message right before it (expected: complies), then prints the share it got right.

    python benchmarks/lexicon_accuracy.py             # the table
    python benchmarks/lexicon_accuracy.py --markdown  # the same table for docs/judges.md
    python benchmarks/lexicon_accuracy.py --errors    # and every item it got wrong

Demonstrations only test the compliant side and the breaching examples are one per norm,
so the last column adds a check of the other side: the share of the *other* norms'
demonstrations that a norm's rules accept. It is not an error rate (another norm's
demonstration may happen to comply, and a norm that bans a feature such as apology should
accept most messages), but for a norm that requires something (a time, an analogy, a bare
yes/no) a high share means its rules let almost anything through.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import dataclass

from losona.core.catalog import load_catalog
from losona.core.contracts import scenarios_from_table
from losona.judges.base import JudgeCase, demonstration_cases
from losona.judges.lexicon import LexiconJudge, judge_text
from losona.scenarios.datasets import fetch_scenarios

KINDS = ("compliant example", "breaching example", "demonstrations")


@dataclass(frozen=True)
class Item:
    """One judged message and the label it should get."""

    norm_id: str
    kind: str
    case: JudgeCase
    expected: bool


def items() -> tuple[list[Item], str]:
    """The catalog's examples (once per norm) and the bundled set's demonstrations."""
    scenarios = scenarios_from_table(fetch_scenarios({"name": "bundled", "kind": "bundled"}))
    found: list[Item] = []
    examples_done: set[str] = set()
    for scenario in scenarios:
        if scenario.norm_id not in examples_done:
            examples_done.add(scenario.norm_id)
            compliant = JudgeCase.control(scenario, scenario.example_compliant_response)
            breaching = JudgeCase.control(scenario, scenario.example_breaching_response)
            found.append(Item(scenario.norm_id, KINDS[0], compliant, True))
            found.append(Item(scenario.norm_id, KINDS[1], breaching, False))
        found += [
            Item(scenario.norm_id, KINDS[2], case, True) for case in demonstration_cases(scenario)
        ]
    return found, scenarios[0].source


def main() -> None:
    """Judge every item and print per-norm accuracy."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    parser.add_argument("--errors", action="store_true", help="list every item judged wrongly")
    args = parser.parse_args()

    judge = LexiconJudge()
    all_items, source = items()
    verdicts = judge.judge([item.case for item in all_items])
    right: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    wrong: list[tuple[Item, str]] = []
    for item, verdict in zip(all_items, verdicts, strict=True):
        tally = right[(item.norm_id, item.kind)]
        tally[1] += 1
        if verdict.complies == item.expected:
            tally[0] += 1
        else:
            wrong.append((item, verdict.reasoning or ""))

    demos = [(item, item.case.response or "") for item in all_items if item.kind == KINDS[2]]

    def lax(norm: str | None) -> str:
        norm_ids = [norm] if norm else list(judge.rulebook.norms)
        accepted = total = 0
        for norm_id in norm_ids:
            rules = judge.rulebook.norms[norm_id]
            others = [text for item, text in demos if item.norm_id != norm_id]
            accepted += sum(bool(judge_text(rules, text, "").complies) for text in others)
            total += len(others)
        return f"{accepted}/{total} ({100 * accepted / total:.1f}%)"

    def cell(norm: str | None, kinds: tuple[str, ...]) -> str:
        keys = [k for k in right if (norm is None or k[0] == norm) and k[1] in kinds]
        good, total = (sum(right[k][i] for k in keys) for i in (0, 1))
        return f"{good}/{total} ({100 * good / total:.1f}%)" if total else "-"

    norms = list(load_catalog().norms)
    header = ["norm", *KINDS, "all", "other norms' demos accepted"]
    rows = [
        [norm, *(cell(norm, (k,)) for k in KINDS), cell(norm, KINDS), lax(norm)] for norm in norms
    ]
    rows.append(["all norms", *(cell(None, (k,)) for k in KINDS), cell(None, KINDS), lax(None)])
    print(
        f"Lexicon judge {judge.model} on the catalog's examples and the demonstrations of {source}"
    )
    print()
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            print("  ".join(value.ljust(width) for value, width in zip(row, widths, strict=True)))
    if args.errors:
        print()
        for item, reasoning in wrong:
            print(f"[{item.norm_id} / {item.kind}] expected complies={item.expected}")
            print(f"  {item.case.elicitor_actor}: {item.case.elicitor_content}")
            print(f"  > {item.case.response}")
            print(f"  judge: {reasoning}")


if __name__ == "__main__":
    main()
