"""Judge error under `dvc repro`: a panel, corrected compliance and self-preference.

On a temporary copy of the repo, a lean sweep (4 scenarios, K = 2, two conditions) of two
subject families: the embedded model's family (smollm2, Hugging Face; its responses are
written by the test and recorded with `dvc commit`, so no model runs) and the test
server's (`local`, a test double). Judges: the lexicon rules and the test server's scripted
judge (`local_openai`), and `offline_panel`, a panel of both. People's labels are made for
this run from the labelling sheet it exports.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import yaml
from conftest import run_dvc
from test_judge import responses_table

from losona.audit.correction import rogan_gladen
from losona.core.files import write_parquet
from losona.judges.panels import panel_vote
from losona.models import calls_table
from losona.testing.openai_server import OpenAIServer
from losona.testing.scripted_judge import ScriptedJudge

CONDITIONS = ("naive", "norm_informed")
MODELS = ("smollm2", "local")
KEY = ["scenario_id", "subject_model", "condition", "trial"]


def stages_run(output: str) -> set[str]:
    return set(re.findall(r"Running stage '([^']+)'", output))


def stage(repo: Path, name: str, *overrides: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, f"stages/{name}.py", *overrides],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(reply=ScriptedJudge()) as running:
        yield running


def edit(path: Path, pattern: str, replacement: str) -> None:
    text = path.read_text()
    changed = re.sub(pattern, replacement, text)
    assert changed != text, f"{path}: {pattern} not found"
    path.write_text(changed)


@pytest.fixture
def repo(repo_copy: Path, server: OpenAIServer, tmp_path: Path) -> Path:
    """The copy, sampled (smollm2 by hand, local by the test server), with people's labels."""
    params = {
        "dataset": "bundled",
        "sweep": {
            "models": list(MODELS),
            "conditions": list(CONDITIONS),
            "judges": ["lexicon", "local_openai"],
        },
    }
    (repo_copy / "params.yaml").write_text(yaml.safe_dump(params))
    (repo_copy / "conf" / "panels.yaml").write_text("panels: [offline_panel]\n")
    edit(repo_copy / "conf" / "run.yaml", r"limit: null", "limit: 4")
    edit(repo_copy / "conf" / "run.yaml", r"trials: 3", "trials: 2")
    model = server.model_config("local", label="Test server")
    assert model["family"] == "test double"
    (repo_copy / "conf" / "model" / "local.yaml").write_text(yaml.safe_dump(model))
    edit(
        repo_copy / "conf" / "judge" / "local_openai.yaml",
        r"api_base: .*",
        f"api_base: {server.url}",
    )
    edit(
        repo_copy / "conf" / "paths" / "default.yaml",
        r"call_cache: .*",
        f"call_cache: {tmp_path / 'calls.sqlite'}",
    )
    (repo_copy / "dvc.lock").unlink(missing_ok=True)
    for stale in ("reports/metrics.json", "reports/audit/metrics.json"):
        (repo_copy / stale).unlink(missing_ok=True)

    run_dvc("repro", "render", cwd=repo_copy)
    scenarios = pl.read_parquet(repo_copy / "data" / "scenarios.parquet")
    assert scenarios.height == 4
    for condition in CONDITIONS:
        # The embedded model's responses, by hand: a compliant example, then a breaching one.
        items = [
            (row["scenario_id"], trial, text)
            for row in scenarios.iter_rows(named=True)
            for trial, text in enumerate(
                (row["example_compliant_response"], row["example_breaching_response"])
            )
        ]
        out = repo_copy / "data" / "responses" / "smollm2" / f"{condition}.parquet"
        write_parquet(responses_table(items, condition=condition), out)
        calls = repo_copy / "data" / "calls" / "sample" / "smollm2" / f"{condition}.parquet"
        write_parquet(calls_table("", []), calls)
    # One DVC command for all the cells of a kind: each command costs seconds of DVC's start.
    run_dvc("commit", "--force", *(f"sample@smollm2-{c}" for c in CONDITIONS), cwd=repo_copy)
    run_dvc("repro", *(f"sample@local-{c}" for c in CONDITIONS), cwd=repo_copy)

    # People label every response of the run (32): the examples as the catalog says, the
    # test server's replies (greetings that take up nothing) as breaches.
    exported = stage(repo_copy, "audit", "audit.export=true", "audit.sheet.items=32")
    assert exported.returncode == 0, exported.stderr
    labels = repo_copy / "data" / "labels"
    sheet = pl.read_csv(labels / "sheet.csv", infer_schema=False)
    compliant = set(scenarios["example_compliant_response"])
    sheet.with_columns(
        complies=pl.when(pl.col("response").is_in(compliant))
        .then(pl.lit("true"))
        .otherwise(pl.lit("false"))
    ).write_csv(labels / "human.csv")
    return repo_copy


def verdicts(repo: Path, judge: str) -> pl.DataFrame:
    return pl.concat(
        pl.read_parquet(repo / "data" / "verdicts" / judge / m / f"{c}.parquet")
        for m in MODELS
        for c in CONDITIONS
    )


def csv(repo: Path, name: str) -> pl.DataFrame:
    return pl.read_csv(repo / "reports" / "audit" / name)


@pytest.mark.slow
def test_dvc_repro_runs_a_panel_corrects_compliance_and_measures_self_preference(
    repo: Path,
) -> None:
    first = run_dvc("repro", cwd=repo)
    ran = stages_run(first.stdout)
    assert {
        "panel_votes@offline_panel-lexicon",
        "panel_votes@offline_panel-local_openai",
        "panel@offline_panel",
        "audit",
        "plot",
    } <= ran
    assert not any(s.startswith("judge@offline_panel") for s in ran)  # a panel is not judged

    # The panel's verdicts: the unanimous vote of its members', in the verdict contract.
    lexicon, scripted, panel = (
        verdicts(repo, j) for j in ("lexicon", "local_openai", "offline_panel")
    )
    assert panel.height == lexicon.height == 32
    both = lexicon.join(scripted, on=KEY, suffix="_b").join(panel, on=KEY, suffix="_p")
    for row in both.iter_rows(named=True):
        expected = panel_vote([row["complies"], row["complies_b"]], "unanimous", "abstain")
        assert (row["complies_p"], row["judge_status_p"]) == expected
    assert set(panel["judge_model"]) == {
        "unanimous of lexicon, local_openai (unscored members abstain)"
    }
    splits = panel.filter(pl.col("judge_status") == "split").height
    assert splits == both.filter(pl.col("complies") != pl.col("complies_b")).height
    # Aggregate and the audit take it for a judge: its rows, its controls, its unscored trials.
    results = pl.read_csv(repo / "reports" / "results.csv")
    mine = results.filter(pl.col("judge") == "offline_panel")
    assert mine.height == 4 and mine["unscored_trials"].sum() == splits
    controls = json.loads((repo / "reports" / "judge_controls" / "offline_panel.json").read_text())
    assert controls["offline_panel"]["all"]["items"] == 8

    # Corrected compliance: each judge's sensitivity and specificity against people's labels.
    correction = {r["judge"]: r for r in csv(repo, "correction.csv").iter_rows(named=True)}
    assert set(correction) == {"lexicon", "local_openai", "offline_panel"}
    lex = correction["lexicon"]
    assert lex["labelled"] == 32 and lex["people_compliant"] == 8
    corrected = csv(repo, "corrected.csv")
    for judge, basis in correction.items():
        rows = corrected.filter(pl.col("judge") == judge)
        assert rows.height == (4 if basis["identifiable"] else 0), judge
        for r in rows.iter_rows(named=True):
            # The judge's own compliance is results.csv's; the correction is Rogan-Gladen's.
            cell = verdicts(repo, judge).filter(
                (pl.col("subject_model") == r["subject_model"])
                & (pl.col("condition") == r["condition"])
            )["complies"]
            own = cell.drop_nulls().mean()
            reported = results.filter(
                (pl.col("judge") == judge)
                & (pl.col("subject_model") == r["subject_model"])
                & (pl.col("condition") == r["condition"])
            )["compliance"][0]
            assert r["compliance"] == reported == round(100 * own, 1)
            sens = basis["true_positives"] / basis["people_compliant"]
            spec = basis["true_negatives"] / basis["people_breaching"]
            assert r["corrected"] == pytest.approx(100 * rogan_gladen(own, sens, spec), abs=0.051)
            assert r["corrected_low"] <= r["corrected"] <= r["corrected_high"]
    assert lex["identifiable"], lex["status"]
    deltas = csv(repo, "corrected_deltas.csv")
    assert set(deltas["condition"]) == {"norm_informed"}

    # Self-preference: the scripted judge (a test double) and its family's subject, `local`,
    # against the lexicon rules; the rules have no family; the panel is left out.
    preference = {r["judge"]: r for r in csv(repo, "self_preference.csv").iter_rows(named=True)}
    assert set(preference) == {"lexicon", "local_openai"}
    scripted_row = preference["local_openai"]
    assert (scripted_row["own_family_models"], scripted_row["other_models"]) == ("local", "smollm2")
    assert scripted_row["reference_judges"] == "lexicon"
    # The difference in differences, from the verdict files.
    rate = {
        (j, m): frame.filter(pl.col("subject_model") == m)["complies"].mean()
        for j, frame in (("lexicon", lexicon), ("local_openai", scripted))
        for m in MODELS
    }
    did = (rate["local_openai", "local"] - rate["local_openai", "smollm2"]) - (
        rate["lexicon", "local"] - rate["lexicon", "smollm2"]
    )
    assert scripted_row["self_preference"] == pytest.approx(100 * did, abs=0.051)
    assert scripted_row["self_preference_low"] <= scripted_row["self_preference_high"]
    assert preference["lexicon"]["status"].startswith("no family")
    metrics = json.loads((repo / "reports" / "audit" / "metrics.json").read_text())
    assert set(metrics["self_preference"]) == {"local_openai"}
    assert "lexicon" in metrics["corrected"]

    # The report shows them, apart from the paper's figures, and names the panel's members.
    page = (repo / "reports" / "index.html").read_text()
    assert "Compliance corrected for judge error" in page
    assert f"<b>lexicon, corrected</b>, on {lex['labelled']} labelled items" in page
    assert "Self-preference for the judge's own model family" in page
    assert "unanimous of lexicon, local_openai (unscored members abstain)" in page
    assert "a panel: it calls no model" in page
    # The Judges table: for each judge, beside its label and validity controls, its
    # degenerate-verdicts flag (none here) and what its compliance was corrected with.
    judges_table = page[page.index('<section id="judges">') :]
    judges_table = judges_table[: judges_table.index("</table>")]
    for judge, basis in correction.items():
        row = next(r for r in judges_table.split("<tr")[2:] if f"<code>{judge}</code>" in r)
        summary = json.loads((repo / "reports" / "judge_controls" / f"{judge}.json").read_text())
        for example in ("compliant", "breaching"):  # its controls, right of all
            kind = summary[judge][example]
            assert f'<td class="num">{kind["right"]}/{kind["items"]}</td>' in row, row
        assert "<td>none</td>" in row  # not degenerate
        if basis["identifiable"]:
            assert f"from {basis['labelled']} labelled items: sensitivity" in row, row
        else:
            assert "not corrected: " in row, row
    scripted_label = re.search(
        r"<tr class=\"double\"><td><b>([^<]+)</b></td><td><code>"
        r"local_openai</code>",
        judges_table,
    )
    assert scripted_label and scripted_label.group(1).endswith("[TEST DOUBLE]")
    print(
        "pipeline figures:",
        {j: (r["sensitivity"], r["specificity"], r["status"]) for j, r in correction.items()},
        corrected.select("judge", "subject_model", "condition", "compliance", "corrected").rows(),
        (
            scripted_row["self_preference"],
            scripted_row["self_preference_low"],
            scripted_row["self_preference_high"],
        ),
    )

    # Nothing left to do; and the run checks out: every number recomputed, the panel's
    # verdicts combined again from its members'. Only the hand-written responses have no
    # calls behind them.
    assert stages_run(run_dvc("repro", cwd=repo).stdout) == set()
    checked = subprocess.run(
        [sys.executable, "-m", "losona.reproduce"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        check=False,
    )
    differing = [line for line in checked.stdout.splitlines() if line.startswith("differs: ")]
    assert differing, checked.stdout + checked.stderr
    assert all("data/calls.parquet" in line for line in differing if "more" not in line), differing
    # The provenance records the panel (its members, rule and version), so its verdicts are
    # checked against it like any judge's.
    assert "not in the provenance's sweep" not in checked.stdout
    record = json.loads((repo / "reports" / "provenance.json").read_text())
    assert record["sweep"]["panels"] == ["offline_panel"]
    assert record["judges"]["offline_panel"] == {
        "name": "offline_panel",
        "label": "Lexicon and scripted judge (panel)",
        "kind": "panel",
        "members": ["lexicon", "local_openai"],
        "rule": "unanimous",
        "unscored_members": "abstain",
        "panel_version": "panel@1",
    }
