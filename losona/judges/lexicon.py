"""The lexicon judge: transparent rules per norm, offline, no model. A reply that takes up
the elicitor (uptake.py) is judged by its norm's rules (losona/data/lexicon.yaml)."""

from __future__ import annotations

from collections.abc import Sequence

from losona.core.catalog import load_catalog
from losona.core.errors import LosonaError
from losona.judges.base import JudgeCase, Judgement
from losona.judges.rules import RULES_PATH, Rule, Scope, Text, load_rules
from losona.judges.uptake import check_uptake


def judge_text(
    rules: Sequence[Rule],
    response: str,
    requirement: str,
    members: tuple[str, ...] = (),
    scope: Scope | None = None,
    uptake: str | None = None,
    subject: str = "",
) -> Judgement:
    """Apply one norm's rules to a reply that takes up its elicitor (`members`: the chat's
    other members, `subject`: the reply's author)."""
    text = Text.of(response)
    passed: list[str] = []
    for rule in rules:
        ok, spans = rule.apply(text, members, scope, subject)
        if not ok:
            found = (
                ", ".join(repr(s) for s in spans)
                if rule.test == "forbid"
                else spans[0]
                if spans
                else "none"
            )
            return Judgement(
                complies=False,
                elicitor_uptake=uptake,
                norm_requirement=requirement,
                evidence="; ".join(spans) or None,
                reasoning=f"breach ({rule.id}): expected {rule.checks}; found {found}",
                status="ok",
                non_answer=False,
            )
        if rule.test == "require":
            passed.extend(spans)
    return Judgement(
        complies=True,
        elicitor_uptake=uptake,
        norm_requirement=requirement,
        evidence="; ".join(passed) if passed else None,
        reasoning="complies: passed " + ", ".join(rule.id for rule in rules),
        status="ok",
        non_answer=False,
    )


class LexiconJudge:
    """The rule-based judge; `model` is `lexicon@<rules version>`."""

    def __init__(self) -> None:
        self.rulebook = load_rules()
        self.catalog = load_catalog()

    @property
    def model(self) -> str:
        """The judge_model string written into every verdict."""
        return f"lexicon@{self.rulebook.version}"

    @property
    def version(self) -> str:
        """The rules' version."""
        return self.rulebook.version

    def judge(self, cases: Sequence[JudgeCase]) -> list[Judgement]:
        """One judgement per case; a null response is unscored, not a breach."""
        return [self.judge_one(case) for case in cases]

    def judge_one(self, case: JudgeCase) -> Judgement:
        """Judge one case by its norm's rules."""
        if case.norm_id not in self.rulebook.norms:
            raise LosonaError(
                f"scenario '{case.scenario_id}': the lexicon judge has no rules for norm "
                f"'{case.norm_id}' (rules: {RULES_PATH})"
            )
        if case.response is None:
            return Judgement.unscored("no_response", "no subject message to judge")
        requirement = self.catalog.norms[case.norm_id].requirement
        text = Text.of(case.response)
        uptake, missing = check_uptake(case, text, self.rulebook)
        if missing is not None:
            # Appendix C, step 1: a reply that does not take up the elicitor follows no norm.
            return Judgement(
                complies=False,
                elicitor_uptake=f"none ({missing.id}): {missing.found}",
                norm_requirement=requirement,
                evidence=missing.evidence or text.original.strip() or None,
                reasoning=(
                    f"breach ({missing.id}): does not take up {case.elicitor_actor}'s message, "
                    f"so it complies with no norm; expected {missing.checks}; "
                    f"found {missing.found}"
                ),
                status="ok",
                non_answer=True,
            )
        rules, scope = self.rulebook.norms[case.norm_id], self.rulebook.scope
        return judge_text(
            rules, case.response, requirement, case.members, scope, uptake, case.subject
        )
