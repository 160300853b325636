"""Whether a judge's verdicts in one cell say anything: the degenerate-verdicts flag (the
same verdict while its validity controls fail, no reasoning, one reasoning copied onto
most replies), and whether its controls show it cannot judge at all."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import polars as pl

# Below this share of its validity controls right, a judge looks broken: the judge_controls
# stage warns, and a cell of uniform verdicts from it is degenerate.
TRUSTWORTHY_PERCENT = 90.0
# Fewer scored verdicts than this say too little about a judge's reasoning to call a
# pattern (a subset of five scenarios at K = 1 may share one reasoning by chance).
MIN_SCORED = 10
# "Most replies": more than this share of the scored verdicts.
MOST = 0.5


@dataclass(frozen=True)
class JudgeEvidence:
    """What telling a judge's degenerate verdicts needs beyond the verdicts themselves."""

    controls: float | None = None  # its validity-control accuracy in percent; None: unknown
    # Whether its reasoning is its own words, as a model's (kind llm) is. Rules and panels
    # write the same sentence for the same decision by design: a repeated reasoning says
    # nothing there. Unknown counts as not, so a flag never rests on a guess.
    own_words: bool = False


def controls_accuracy(controls: pl.DataFrame) -> float | None:
    """The share of validity controls a judge got right, in percent; None with none."""
    if controls.is_empty():
        return None
    right = controls.filter(pl.col("complies") == pl.col("expected")).height
    return 100 * right / controls.height


def degenerate_signs(verdicts: pl.DataFrame, judge: JudgeEvidence = JudgeEvidence()) -> list[str]:
    """Why one cell's verdicts say nothing, one phrase per sign; empty when they do. Uniform
    verdicts count only beside failing controls: a model may really comply every time."""

    scored = verdicts.filter(pl.col("complies").is_not_null())
    signs = []
    labels = set(scored["complies"].to_list())
    controls = judge.controls
    if len(labels) == 1 and controls is not None and controls < TRUSTWORTHY_PERCENT:
        (label,) = labels
        signs.append(
            f"every scored verdict is {'comply' if label else 'breach'} while it got "
            f"{controls:.1f}% of its validity controls right"
        )
    if scored.height < MIN_SCORED or not judge.own_words:
        return signs
    reasoning = [(text or "").strip() for text in scored["reasoning"].to_list()]
    empty = reasoning.count("")
    if empty > MOST * scored.height:
        signs.append(f"{empty} of {scored.height} scored verdicts give no reasoning")
    repeated = Counter(text for text in reasoning if text).most_common(1)
    if repeated and repeated[0][1] > MOST * scored.height:
        signs.append(
            f"{repeated[0][1]} of {scored.height} scored verdicts give the same reasoning, "
            "word for word"
        )
    return signs


def uniform_verdict(verdicts: pl.DataFrame) -> bool | None:
    """The one label all of a cell's scored verdicts have, if they are MIN_SCORED or more."""
    scored = verdicts["complies"].drop_nulls()
    labels = set(scored.to_list())
    return labels.pop() if len(labels) == 1 and scored.len() >= MIN_SCORED else None


def cannot_judge(controls: pl.DataFrame) -> list[str]:
    """Why a judge's validity controls show it cannot judge at all, one phrase per sign:
    most of them unscored, or every scored one the same verdict (half the examples comply
    and half breach). A judge merely wrong on some is left to the accuracy warning."""
    signs = []
    unscored = controls["complies"].null_count()
    if unscored > MOST * controls.height:
        signs.append(f"{unscored} of its {controls.height} validity controls are unscored")
    label = uniform_verdict(controls)
    if label is not None:
        scored = controls.height - unscored
        signs.append(
            f"every one of its {scored} scored validity controls is "
            f"{'comply' if label else 'breach'}, though half the examples comply and half "
            "breach"
        )
    return signs
