"""A run's published calls: deterministic bytes, no secret, a read-only layer that never lies.

The subject is the local test server, which counts every request, so "no call" is a count.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from losona.core.errors import LosonaError
from losona.core.files import write_parquet
from losona.models import (
    CallOptions,
    CallStore,
    ModelSpec,
    PublishedCalls,
    Request,
    calls_table,
    complete,
    read_calls,
)
from losona.models.call_store import lock_outputs, recorded_md5
from losona.models.published_calls import md5_file
from losona.provenance.call_files import merge_calls
from losona.testing.openai_server import OpenAIServer

REMEDY = "get the run's own"


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer() as running:
        yield running


def spec_for(server: OpenAIServer, **settings: object) -> ModelSpec:
    return ModelSpec.from_config(server.model_config("m", **settings))


def requests(count: int) -> list[Request]:
    return [
        Request(messages=({"role": "user", "content": f"prompt {i}"},), trial=i % 3)
        for i in range(count)
    ]


def publish(server: OpenAIServer, tmp_path: Path, count: int = 6) -> tuple[Path, ModelSpec]:
    """Make `count` calls into a cache of their own and publish them as a calls file."""
    spec = spec_for(server)
    made = complete(spec, requests(count), CallOptions(cache_path=tmp_path / "origin.sqlite"))
    path = tmp_path / "calls.parquet"
    write_parquet(calls_table(spec.model, made), path)
    return path, spec


def texts(path: Path) -> dict[str, str]:
    return dict(read_calls(path, REMEDY).select("key", "text").iter_rows())


def test_the_calls_file_holds_no_key_and_no_endpoint(
    server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-test-must-never-be-published-4242"
    monkeypatch.setenv("LOSONA_TEST_KEY", secret)
    spec = spec_for(server, api_key_env="LOSONA_TEST_KEY")
    made = complete(spec, requests(4), CallOptions(cache_path=tmp_path / "c.sqlite"))
    path = tmp_path / "calls.parquet"
    write_parquet(calls_table(spec.model, made), path)
    written = path.read_bytes()
    assert secret.encode() not in written
    assert f"127.0.0.1:{server.port}".encode() not in written
    assert read_calls(path, REMEDY).columns == [
        "key", "model", "text", "finish_reason", "prompt_tokens", "completion_tokens", "cost_usd"
    ]  # fmt: skip


def test_the_same_calls_give_the_same_bytes_in_any_order(
    server: OpenAIServer, tmp_path: Path
) -> None:
    spec = spec_for(server)
    made = complete(spec, requests(8), CallOptions(cache_path=tmp_path / "c.sqlite"))
    first, second = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_parquet(calls_table(spec.model, made), first)
    write_parquet(calls_table(spec.model, [*reversed(made), made[0]]), second)
    assert first.read_bytes() == second.read_bytes()
    assert read_calls(first, REMEDY)["key"].is_sorted()


def test_published_calls_answer_with_no_request_and_fill_the_users_cache(
    server: OpenAIServer, tmp_path: Path
) -> None:
    path, spec = publish(server, tmp_path)
    sent = server.request_count
    mine = tmp_path / "home" / "calls.sqlite"
    store = CallStore(mine, PublishedCalls(path, md5_file(path), REMEDY))
    again = complete(spec, requests(6), CallOptions(cache_path=store))
    assert server.request_count == sent
    published = texts(path)
    assert [c.text for c in again] == [published[str(c.key)] for c in again]
    assert all(c.cached for c in again)
    with sqlite3.connect(mine) as db:
        assert db.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 6
    assert path.read_bytes() == path.read_bytes()  # read only: never written back
    # A call the run never made goes to the model as usual.
    complete(spec, requests(7), CallOptions(cache_path=store))
    assert server.request_count == sent + 1


def test_with_every_call_published_no_key_is_needed(
    server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = publish(server, tmp_path)
    monkeypatch.delenv("LOSONA_TEST_KEY", raising=False)
    spec = spec_for(server, api_key_env="LOSONA_TEST_KEY")  # the key is not part of the key
    store = CallStore(tmp_path / "home.sqlite", PublishedCalls(path, md5_file(path), REMEDY))
    sent = server.request_count
    assert len(complete(spec, requests(6), CallOptions(cache_path=store))) == 6
    with pytest.raises(LosonaError, match="LOSONA_TEST_KEY, which is not set"):
        complete(spec, requests(7), CallOptions(cache_path=store))  # one call must really be made
    assert server.request_count == sent


@pytest.mark.parametrize("damage", ["missing", "corrupt", "edited"])
def test_a_recorded_calls_file_that_is_missing_or_changed_stops_before_any_call(
    damage: str, server: OpenAIServer, tmp_path: Path
) -> None:
    path, spec = publish(server, tmp_path)
    recorded = md5_file(path)
    if damage == "missing":
        path.unlink()
    elif damage == "corrupt":
        path.write_bytes(b"PAR1 cut short")
    else:
        write_parquet(read_calls(path, REMEDY).head(3), path)
    store = CallStore(tmp_path / "home.sqlite", PublishedCalls(path, recorded, REMEDY))
    sent = server.request_count
    with pytest.raises(LosonaError) as error:
        complete(spec, requests(6), CallOptions(cache_path=store))
    assert str(error.value).startswith(f"{path}: the run's calls file is ")
    assert "no model is called in its place" in str(error.value) and REMEDY in str(error.value)
    assert server.request_count == sent


def test_an_unrecorded_calls_file_is_optional_but_must_be_readable(
    server: OpenAIServer, tmp_path: Path
) -> None:
    spec = spec_for(server)
    absent = CallStore(tmp_path / "a.sqlite", PublishedCalls(tmp_path / "none.parquet", None, ""))
    assert not absent.published or not absent.published.expected
    complete(spec, requests(2), CallOptions(cache_path=absent))  # never published: calls as usual
    assert server.request_count == 2
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"not parquet")
    store = CallStore(tmp_path / "b.sqlite", PublishedCalls(bad, None, REMEDY))
    with pytest.raises(LosonaError, match=r"bad\.parquet: cannot be read as a calls table"):
        complete(spec, requests(2), CallOptions(cache_path=store))
    write_parquet(pl.DataFrame({"key": ["k"], "text": ["t"]}), bad)
    with pytest.raises(LosonaError, match=r"bad\.parquet: expected the columns"):
        read_calls(bad, REMEDY)


def test_a_calls_file_that_answers_a_key_twice_or_not_at_all_is_refused(
    server: OpenAIServer, tmp_path: Path
) -> None:
    # A published run is untrusted input: which of two answers to a key would be the run's?
    path, _ = publish(server, tmp_path)
    calls = read_calls(path, REMEDY)
    write_parquet(pl.concat([calls, calls.head(1)]), path)
    with pytest.raises(LosonaError, match=f"key '{calls['key'][0]}' appears twice; {REMEDY}"):
        read_calls(path, REMEDY)
    for column in ("key", "text"):
        emptied = pl.when(pl.int_range(pl.len()) == 1).then(None).otherwise(pl.col(column))
        write_parquet(calls.with_columns(emptied.alias(column)), path)
        with pytest.raises(LosonaError, match=f"a row has no '{column}'; {REMEDY}"):
            read_calls(path, REMEDY)


def test_merging_refuses_one_call_answered_two_ways(server: OpenAIServer, tmp_path: Path) -> None:
    path, _ = publish(server, tmp_path)
    calls = read_calls(path, REMEDY)
    a, b, c = tmp_path / "a.parquet", tmp_path / "b.parquet", tmp_path / "c.parquet"
    write_parquet(calls.head(4), a)
    write_parquet(calls.tail(4), b)  # overlaps a on two calls, answered the same
    merged = merge_calls([a, b])
    assert merged.equals(calls)
    write_parquet(calls.tail(1).with_columns(text=pl.lit("another answer")), c)
    with pytest.raises(
        LosonaError, match=r"has different answers in .*a?\.parquet and .*\.parquet"
    ):
        merge_calls([a, b, c])
    with pytest.raises(LosonaError, match=r"missing\.parquet not found"):
        merge_calls([a, tmp_path / "missing.parquet"])
    # A sweep of no cell publishes no call: an empty table of the calls' own columns.
    nothing = merge_calls([])
    assert nothing.is_empty() and nothing.columns == calls.columns


def test_a_lock_that_is_not_dvcs_or_records_an_output_without_md5_is_refused() -> None:
    with pytest.raises(LosonaError, match=r"dvc\.lock: no 'stages' mapping; is it DVC's lock"):
        lock_outputs(["not", "a", "lock"], "dvc.lock")
    unhashed = {"stages": {"sample": {"outs": [{"path": "data/a.parquet"}]}}}
    with pytest.raises(LosonaError, match=r"dvc\.lock: the entry of data/a\.parquet has no md5"):
        lock_outputs(unhashed, "dvc.lock")


def test_the_recorded_hash_is_read_from_dvc_lock(tmp_path: Path) -> None:
    lock = tmp_path / "dvc.lock"
    assert recorded_md5("data/calls.parquet", lock) is None
    lock.write_text(
        "schema: '2.0'\nstages:\n  calls:\n    cmd: python stages/calls.py\n    outs:\n"
        "    - path: data/calls.parquet\n      hash: md5\n      md5: 0123abcd\n      size: 9\n"
    )
    assert recorded_md5("data/calls.parquet", lock) == "0123abcd"
    assert recorded_md5("data/other.parquet", lock) is None


def test_the_published_calls_are_read_once_however_they_are_asked(
    server: OpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, spec = publish(server, tmp_path)
    keys = set(texts(path))
    published = PublishedCalls(path, md5_file(path), REMEDY)
    reads: list[str] = []
    read_parquet = pl.read_parquet

    def counted(source: object, *args: object, **kwargs: object) -> pl.DataFrame:
        reads.append(str(source))
        return read_parquet(source, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pl, "read_parquet", counted)
    # Served to a rerun (the call cache's layer), then read as a table (reproduce).
    store = CallStore(tmp_path / "rerun.sqlite", published, offline=True)
    complete(spec, requests(6), CallOptions(cache_path=store))
    assert set(published.table()["key"]) == keys and published.table().height == 6
    assert reads.count(str(path)) == 1
    assert server.request_count == 6  # publish's calls: the rerun made none
