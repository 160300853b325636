"""Reproduce's replay: a stage's own function run again in a scratch copy of the run, whose
writes are put back afterwards, and the run itself never written."""

from __future__ import annotations

import hashlib
from pathlib import Path

import polars as pl
import pytest
from conftest import run_layout
from test_reproduce import NAIVE, overturn
from test_reproduce import run as run  # the fixture: a small finished run

from losona.core.config import ModelSpec
from losona.core.errors import LosonaError
from losona.core.files import write_text
from losona.core.layout import RunLayout
from losona.models import CallNotFound, CallOptions, Request, complete
from losona.models.call_store import call_store
from losona.reproduce.checks import check_run
from losona.reproduce.replay import replaying
from losona.testing.openai_server import OpenAIServer


def tree(root: Path) -> dict[str, str]:
    """Every file under `root`, by path, with its SHA-256."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_reproduce_reads_the_run_and_writes_nothing_of_it(run: RunLayout, workdir: Path) -> None:
    overturn(NAIVE)  # so that the stages run again write tables other than the run's
    before = tree(workdir)
    check = check_run(run)
    assert not check.ok  # the replayed judge and aggregate disagree with the files
    assert tree(workdir) == before


def test_what_a_stage_wrote_in_the_copy_is_put_back_as_the_run_has_it(run: RunLayout) -> None:
    with replaying(run) as replay:
        copy = replay.scratch
        assert copy.verdicts("lexicon", "m", "naive") != run.verdicts("lexicon", "m", "naive")
        assert tree(copy.verdicts_folder) == tree(run.verdicts_folder)

        def stage(layout: RunLayout) -> None:
            print("an account the terminal does not see")
            write_text("changed", layout.verdicts("lexicon", "m", "naive"))
            write_text("new", layout.reports_folder / "new.txt")

        with replay.rerun(stage) as scratch:
            assert scratch.verdicts("lexicon", "m", "naive").read_text() == "changed"
            assert (scratch.reports_folder / "new.txt").is_file()
        # The next stage reads the run's files again, and the run was not touched.
        assert tree(copy.verdicts_folder) == tree(run.verdicts_folder)
        assert not (copy.reports_folder / "new.txt").exists()
        assert not (run.reports_folder / "new.txt").exists()

        def failing(layout: RunLayout) -> None:
            layout.verdicts("lexicon", "m", "naive").unlink()
            raise RuntimeError("the stage failed")

        with pytest.raises(RuntimeError), replay.rerun(failing):
            pytest.fail("a failed stage yields nothing to compare")
        assert tree(copy.verdicts_folder) == tree(run.verdicts_folder)


def test_a_file_a_replayed_stage_names_is_the_runs(run: RunLayout) -> None:
    def stage(layout: RunLayout) -> None:
        raise LosonaError(f"{layout.verdicts('lexicon', 'm', 'naive')}: not a Parquet file")

    with replaying(run) as replay, pytest.raises(LosonaError) as refused, replay.rerun(stage):
        pytest.fail("a failed stage yields nothing to compare")
    assert str(refused.value) == f"{NAIVE}: not a Parquet file"


def test_a_replayed_stage_is_answered_by_the_published_calls_alone(run: RunLayout) -> None:
    # The user's own cache holds the call and the server would answer it: in a replay
    # neither may, only the run's published calls (here there are none).
    with OpenAIServer() as server:
        spec = ModelSpec.from_config(server.model_config("m"))
        request = [Request(messages=({"role": "user", "content": "hello"},), trial=0)]
        (cached,) = complete(spec, request, CallOptions(cache_path=run.call_cache))
        assert cached.text is not None and server.request_count == 1
        with replaying(run) as replay, pytest.raises(CallNotFound):
            complete(spec, request, CallOptions(cache_path=call_store(replay.scratch)))
        assert server.request_count == 1


@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_the_copy_keeps_each_file_where_the_layout_places_it(where: str, workdir: Path) -> None:
    verdicts = "data/verdicts" if where == "relative" else str(workdir / "elsewhere" / "verdicts")
    layout = run_layout(verdicts_dir=verdicts)
    cell = layout.verdicts("lexicon", "m", "naive")
    cell.parent.mkdir(parents=True)
    pl.DataFrame({"a": [1]}).write_parquet(cell)
    with replaying(layout) as replay:
        copied = replay.scratch.verdicts("lexicon", "m", "naive")
        assert copied.read_bytes() == cell.read_bytes()
        assert replay.root in copied.parents
