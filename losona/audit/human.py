"""Judge against people: each judge against the labels people gave a blinded sample."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from losona.audit.agreement import RESPONSE_KEY, Confusion
from losona.audit.tables import HUMAN_AGREEMENT_SCHEMA, HUMAN_ITEM_SCHEMA
from losona.core.config import AggregateSettings
from losona.core.contracts import table
from losona.core.errors import LosonaError
from losona.core.files import sha256_text
from losona.core.formatting import percent
from losona.judges.verdicts import judge_model
from losona.results.metrics import bootstrap_intervals


def human_agreement(
    labelled: pl.DataFrame,
    verdicts: pl.DataFrame,
    judges: Sequence[str],
    bootstrap: AggregateSettings,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """human_agreement.csv and human_items.csv: each judge against people's labels (`labelled`:
    the sheet's key with a `human` column); an item a judge did not score is counted, left out."""
    summary, items = [], []
    for judge in judges:
        rows = labelled_verdicts(labelled, verdicts, judge)
        scored = rows.filter(pl.col("judge_complies").is_not_null())
        confusion = Confusion.of(scored["judge_complies"], scored["human"])
        low, high = _agreement_interval(scored["judge_complies"] == scored["human"], bootstrap)
        figures = confusion.figures()

        summary.append(
            {
                "judge": judge,
                "judge_model": judge_model(verdicts, judge),
                "items": rows.height,
                "not_judged": rows["judged"].null_count(),
                "unscored": rows.filter(pl.col("judged")).height - scored.height,
                "scored": confusion.n,
                "agree": figures["agree"],
                "agreement": figures["agreement"],
                "agreement_low": percent(low),
                "agreement_high": percent(high),
                "kappa": figures["kappa"],
                "human_compliance": figures["b_compliance"],
                "judge_compliance": figures["a_compliance"],
                "false_positives": confusion.yes_no,
                "false_negatives": confusion.no_yes,
            }
        )
        items += [
            {
                **{k: row[k] for k in HUMAN_ITEM_SCHEMA.names() if k in row},
                "judge": judge,
                "agree": None
                if row["judge_complies"] is None
                else row["judge_complies"] == row["human"],
            }
            for row in rows.iter_rows(named=True)
        ]
    return (
        table(summary, HUMAN_AGREEMENT_SCHEMA, sort_by=[]),
        table(items, HUMAN_ITEM_SCHEMA, sort_by=["item_id"]),
    )


def labelled_verdicts(labelled: pl.DataFrame, verdicts: pl.DataFrame, judge: str) -> pl.DataFrame:
    """Every labelled item with the judge's verdict on it: `judge_complies` (null: unscored or
    no verdict), `judged` (null: no verdict); a verdict on another text is refused."""
    mine = verdicts.filter(pl.col("judge") == judge)
    rows = labelled.join(
        mine.select(*RESPONSE_KEY, "response", judge_complies="complies", judged=pl.lit(True)),
        on=RESPONSE_KEY,
        how="left",
    ).sort("item_id")
    for row in rows.filter(pl.col("judged")).iter_rows(named=True):
        if sha256_text(row["response"] or "") != row["response_sha256"]:
            raise LosonaError(
                f"labelled item '{row['item_id']}': the response judge '{judge}' scored "
                f"(model '{row['subject_model']}', condition '{row['condition']}', scenario "
                f"'{row['scenario_id']}', trial {row['trial']}) is not the text on the sheet: "
                "the responses were sampled again after the sheet was exported; export a "
                "new sheet (python stages/audit.py audit.export=true) and label it"
            )
    return rows


def _agreement_interval(agree: pl.Series, bootstrap: AggregateSettings) -> tuple[float | None, ...]:
    """A percentile interval on agreement from resampling the labelled items."""
    if agree.len() < 2:
        return None, None
    result = bootstrap_intervals(agree.cast(pl.Float64).to_numpy()[None, :], bootstrap)
    return float(result.low[0]), float(result.high[0])
