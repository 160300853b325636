"""The reproducibility check: a run's reports follow from its verdicts, or it names what not."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from conftest import rerun_stages
from test_judge import responses_table

from losona.core.config import AggregateSettings as Bootstrap
from losona.core.config import compose_paths, load_option, plain
from losona.core.contracts import CALL_SCHEMA, SCENARIO_SCHEMA, table
from losona.core.files import write_json, write_parquet
from losona.core.layout import RunLayout
from losona.judges import prompt as templates
from losona.judges.lexicon import LexiconJudge
from losona.judges.run import control_summary, judge_controls, judge_responses
from losona.prompts.render import render_prompts
from losona.provenance.record import judge_record, provenance
from losona.reproduce.checks import check_run
from losona.reproduce.cli import main
from losona.reproduce.compare import Difference, compare_json, compare_tables
from losona.results.aggregate import aggregate
from losona.results.presentation import presentation_for

SWEEP = {"models": ["m"], "conditions": ["naive", "norm_informed"], "judges": ["lexicon"]}
BOOTSTRAP = Bootstrap(resamples=200, seed=0, confidence=0.95)
NAIVE = "data/verdicts/lexicon/m/naive.parquet"


@pytest.fixture
def run(workdir: Path, scenario_row: Callable[..., dict[str, Any]]) -> RunLayout:
    """A small finished run in `workdir`: scenarios, responses, verdicts, reports, provenance."""
    rows = [
        scenario_row(scenario_id=f"standup__binary_answer_norm__{i}", source="test")
        for i in range(6)
    ]
    scenarios = table(rows, SCENARIO_SCHEMA, sort_by=["scenario_id"])
    layout = RunLayout(compose_paths([]))
    write_parquet(scenarios, layout.scenarios)
    cells = []
    for condition, bare in (("naive", (1, 4)), ("norm_informed", (0, 1, 2, 4, 5))):
        # binary_answer_norm: a bare "Yes." complies, an explained yes breaches.
        items = [
            (row["scenario_id"], t, "Yes." if (i + t) % 6 in bare else "Yes, it finished at six.")
            for i, row in enumerate(rows)
            for t in range(3)
        ]
        responses = responses_table(items, model="m", condition=condition)
        write_parquet(responses, layout.responses("m", condition))
        verdicts = judge_responses(
            scenarios,
            responses,
            LexiconJudge(),
            "lexicon",
            model="m",
            condition=condition,
            origin="",
        )
        write_parquet(verdicts, layout.verdicts("lexicon", "m", condition))
        cells.append(verdicts)
    verdicts = pl.concat(cells)
    presentation = presentation_for(verdicts, SWEEP)
    reports = aggregate(verdicts, scenarios, bootstrap=BOOTSTRAP, presentation=presentation)
    reports.write(layout.reports_folder)
    record = provenance(
        scenarios=scenarios,
        dataset={"name": "local", "kind": "local", "path": "s.jsonl"},
        sweep=SWEEP,
        models={"m": {"name": "m", "model": "openai/m", "params": {"temperature": 0.9}}},
        judges={"lexicon": plain(load_option("judge", "lexicon"))},
        trials=3,
        bootstrap=BOOTSTRAP,
    )
    write_json(record, layout.provenance)
    return layout


def overturn(path: str, row: int = 0) -> pl.DataFrame:
    """Flip one verdict of a verdict file in place; return the file as it was."""
    before = pl.read_parquet(path)
    flipped = pl.when(pl.int_range(pl.len()) == row).then(~pl.col("complies"))
    before.with_columns(complies=flipped.otherwise("complies")).write_parquet(path)
    return before


def test_a_fresh_run_reproduces(run: RunLayout) -> None:
    check = check_run(run)
    assert check.ok, check.differences
    assert {"reports/results.csv", "reports/metrics.json", NAIVE} <= set(check.files)
    assert check.values > 100
    # The run was made without the judge cells' calls files: every output a stage writes
    # again is compared, and one the run lacks is named.
    assert check.notes == [
        "data/calls/judge/lexicon/m/naive.parquet: absent, not rechecked",
        "data/calls/judge/lexicon/m/norm_informed.parquet: absent, not rechecked",
        "data/judge_controls/lexicon.parquet: no validity controls for 'lexicon'",
        "reports/audit: no audit in this run",
    ]


def test_the_published_calls_are_read_once_for_every_check(
    run: RunLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A published calls file that answers none of the run's responses: every stage run again
    # reads it (the replay's copy of it), from one reading. The fixture's model 'm' is the one
    # its provenance records.
    assert run.calls is not None
    scenarios = pl.read_parquet(run.scenarios)
    write_parquet(render_prompts(scenarios, SWEEP["conditions"]), run.prompts)
    write_parquet(pl.DataFrame(schema=CALL_SCHEMA), run.calls)
    reads: list[str] = []
    read_parquet = pl.read_parquet

    def counted(source: Any, *args: Any, **kwargs: Any) -> pl.DataFrame:
        reads.append(str(source))
        return read_parquet(source, *args, **kwargs)

    monkeypatch.setattr(pl, "read_parquet", counted)
    check = check_run(run)
    assert [Path(read).name for read in reads].count(run.calls.name) == 1
    assert {d.file for d in check.differences} == {str(run.calls)}  # and it was checked


def test_an_edited_verdict_is_named_with_the_numbers_it_changes(run: RunLayout) -> None:
    before = overturn(NAIVE)
    reported = (
        pl.read_csv("reports/results.csv").filter(pl.col("condition") == "naive").row(0, named=True)
    )
    edited = pl.concat(pl.read_parquet(p) for p in sorted(Path("data/verdicts").rglob("*.parquet")))
    scenarios = pl.read_parquet(run.scenarios)
    presentation = presentation_for(edited, SWEEP)
    again = aggregate(edited, scenarios, bootstrap=BOOTSTRAP, presentation=presentation)
    recomputed = again["results.csv"].filter(pl.col("condition") == "naive").row(0, named=True)
    assert recomputed["compliance"] != reported["compliance"]

    check = check_run(run)
    assert not check.ok
    where = "line 2 (judge=lexicon, subject_model=m, condition=naive)"
    assert (
        Difference(
            "reports/results.csv",
            where,
            "compliance",
            recomputed["compliance"],
            reported["compliance"],
        )
        in check.differences
    )
    # The verdict itself, judged again by the rules from its response.
    first = before.row(0, named=True)
    edited_verdict = next(d for d in check.differences if d.file == NAIVE)
    assert edited_verdict.where.startswith("row 1 (judge=lexicon, subject_model=m, condition=naive")
    assert (edited_verdict.field, edited_verdict.expected) == ("complies", first["complies"])
    # Every file that carries the number is named, metrics.json by its key.
    files = {d.file for d in check.differences}
    assert {"reports/outcomes.csv", "reports/metrics.json", "reports/table1.md"} <= files
    assert any(d.field == "lexicon.models.m.naive.compliance" for d in check.differences)
    before.write_parquet(NAIVE)
    assert check_run(run).ok


def test_a_changed_dataset_or_template_is_named(
    run: RunLayout, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenarios = pl.read_parquet(run.scenarios)
    # Same rows, other Parquet settings: the content hash does not move.
    scenarios.reverse().write_parquet(run.scenarios, compression="snappy", statistics=False)
    assert check_run(run).ok

    changed = scenarios.with_columns(
        channel_description=pl.when(pl.col("scenario_id").str.ends_with("__3"))
        .then(pl.lit("#elsewhere"))
        .otherwise("channel_description")
    )
    write_parquet(changed, run.scenarios)
    monkeypatch.setattr(templates, "JUDGE_TEMPLATE", templates.JUDGE_TEMPLATE + " ")
    fields = {d.field for d in check_run(run).differences}
    assert fields == {"dataset.content_sha256", "templates.judge.sha256"}


def test_verdicts_of_another_judge_version_are_named(run: RunLayout) -> None:
    verdicts = pl.read_parquet(NAIVE)
    verdicts.with_columns(judge_version=pl.lit("0")).write_parquet(NAIVE)
    named = {(d.file, d.field, d.expected, d.found) for d in check_run(run).differences}
    version = LexiconJudge().version
    assert ("data/verdicts/lexicon", "judge_version", version, "0") in named  # provenance
    assert (NAIVE, "judge_version", version, "0") in named  # the rules, run again


def test_an_llm_judges_verdicts_must_judge_the_recorded_responses(run: RunLayout) -> None:
    # The run's judge, as recorded, is an LLM judge, with no published calls to answer it.
    record = json.loads(run.provenance.read_text())
    node = plain(load_option("judge", "local_openai")) | {"name": "lexicon"}
    record["judges"]["lexicon"] = judge_record(node)
    check = rerun_stages(run, record, "judge")
    assert check.ok and len(check.files) == 2
    verdicts = pl.read_parquet(NAIVE)
    swapped = pl.when(pl.int_range(pl.len()) == 2).then(pl.lit("Another reply."))
    verdicts.with_columns(response=swapped.otherwise("response")).write_parquet(NAIVE)
    (difference,) = rerun_stages(run, record, "judge").differences
    assert (difference.file, difference.field, difference.found) == (
        NAIVE,
        "response",
        "Another reply.",
    )
    assert difference.expected == verdicts["response"][2]


def test_what_a_run_leaves_unrechecked_is_noted(run: RunLayout) -> None:
    check = check_run(RunLayout(compose_paths(["paths.calls=null"])))
    assert check.ok and "paths.calls is null: the run's calls are not rechecked" in check.notes
    # Verdicts of a judge the provenance does not record, and no config names: named, not
    # taken for the run's (as the aggregate reports them, the audit reads them).
    for condition in SWEEP["conditions"]:
        verdicts = pl.read_parquet(run.verdicts("lexicon", "m", condition))
        write_parquet(
            verdicts.with_columns(judge=pl.lit("other")), run.verdicts("other", "m", condition)
        )
    notes = check_run(run).notes
    assert "judge(s) ['other'] have verdicts but are not in the provenance's sweep" in notes


def test_a_damaged_recorded_config_is_named_not_a_traceback(
    run: RunLayout, capsys: pytest.CaptureFixture[str]
) -> None:
    # A published run is read as untrusted input: its checked copy of a config is one more file.
    copy = run.config("judge", "lexicon")
    copy.parent.mkdir(parents=True)
    for text, named in (
        ("{not json", "not JSON"),
        ("[1, 2]", "expected a JSON object, found list"),
    ):
        copy.write_text(text)
        assert main([]) == 2
        error = capsys.readouterr().err
        assert error.startswith(f"error: data/configs/judge/lexicon.json: {named}"), error
        assert "rerun the judge_config stage (dvc repro)" in error
    copy.unlink()
    record = json.loads(run.provenance.read_text())
    record["judges"]["lexicon"] = ["not", "a", "config"]
    run.provenance.write_text(json.dumps(record))
    assert main([]) == 2
    error = capsys.readouterr().err
    assert error.startswith("error: reports/provenance.json: 'judges.lexicon' is no mapping")


def test_an_llm_judges_control_summary_must_follow_from_its_controls(run: RunLayout) -> None:
    # The run's judge, as recorded, is an LLM judge, with no published calls to answer its
    # controls: its summary is recomputed from its control table, and a changed figure named.
    record = json.loads(run.provenance.read_text())
    node = plain(load_option("judge", "local_openai")) | {"name": "lexicon"}
    record["judges"]["lexicon"] = judge_record(node)
    controls = judge_controls(pl.read_parquet(run.scenarios), LexiconJudge(), "lexicon")
    write_parquet(controls, run.controls("lexicon"))
    summary = {"lexicon": control_summary(controls)}
    write_json(summary, run.controls_summary("lexicon"))
    check = rerun_stages(run, record, "judge_controls")
    assert check.ok and check.files == ["reports/judge_controls/lexicon.json"]
    summary["lexicon"]["all"]["right"] -= 1
    write_json(summary, run.controls_summary("lexicon"))
    (difference,) = rerun_stages(run, record, "judge_controls").differences
    assert (difference.file, difference.field) == (
        "reports/judge_controls/lexicon.json",
        "lexicon.all.right",
    )
    assert difference.found == difference.expected - 1


@pytest.mark.slow  # starts a Python process
def test_the_command_exits_0_3_or_2(run: RunLayout, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 0
    assert "every value matches" in capsys.readouterr().out

    overturn(NAIVE, row=4)
    done = subprocess.run(
        [sys.executable, "-m", "losona.reproduce"], capture_output=True, text=True, check=False
    )
    assert done.returncode == 3
    assert "differs: reports/results.csv, line 2 (judge=lexicon, subject_model=m, " in done.stdout
    assert "differ (expected: recomputed; found: on disk)" in done.stdout

    run.provenance.unlink()
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: reports/provenance.json not found: run the provenance stage")
    assert main(["paths.nope=1", "no_such_group=x"]) == 2
    assert "error: bad override" in capsys.readouterr().err


def test_tables_and_json_are_compared_value_by_value() -> None:
    want = pl.DataFrame({"judge": ["j", "j"], "condition": ["a", "b"], "acc": [50.0, 0.1 + 0.2]})
    got = want.with_columns(acc=pl.Series([50.0, 0.3]))
    assert compare_tables("t.csv", want, got) == []  # rounding noise is not a difference
    (diff,) = compare_tables("t.csv", want, got.with_columns(acc=pl.Series([50.0, 0.4])))
    assert (
        str(diff)
        == "t.csv, line 3 (judge=j, condition=b), acc: expected 0.30000000000000004, found 0.4"
    )
    assert compare_tables("t.csv", want, want.head(1))[0].field == "number of rows"

    compared, diffs = compare_json("m.json", {"a": {"b": 1, "c": True}}, {"a": {"b": 1, "c": 1}})
    assert compared == 2
    assert [(d.field, d.expected, d.found) for d in diffs] == [("a.c", True, 1)]
    _, diffs = compare_json("m.json", {"a": 1}, {"a": 1, "b": 2})
    assert [(d.field, d.expected) for d in diffs] == [("b", "(missing)")]
