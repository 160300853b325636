"""The call cache on disk: stored at once, first answer kept, damage reported clearly."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from losona.core.errors import LosonaError
from losona.models import Completion
from losona.models.call_cache import CallCache


def answer(text: str) -> Completion:
    return Completion(
        text=text,
        finish_reason="stop",
        prompt_tokens=3,
        completion_tokens=2,
        cost_usd=0.25,
        error=None,
        cached=False,
        attempts=1,
    )


def test_a_stored_call_is_on_disk_before_put_returns(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "calls.sqlite"
    cache = CallCache(path)
    cache.put("k1", "openai/x", answer("hello"))
    # Another connection sees it while the first is still open (as after a kill -9).
    other = CallCache(path)
    found = other.get_many(["k1", "k2"])
    assert list(found) == ["k1"]
    assert found["k1"] == Completion("hello", "stop", 3, 2, 0.25, None, cached=True)
    other.close()
    cache.close()


def test_the_first_answer_for_a_key_is_kept(tmp_path: Path) -> None:
    with CallCache(tmp_path / "c.sqlite") as cache:
        cache.put("k", "m", answer("first"))
        cache.put("k", "m", answer("second"))
        assert cache.get_many(["k"])["k"].text == "first" and len(cache) == 1


def test_many_keys_are_looked_up_in_chunks(tmp_path: Path) -> None:
    with CallCache(tmp_path / "c.sqlite") as cache:
        for i in range(1200):
            cache.put(f"k{i}", "m", answer(str(i)))
        found = cache.get_many([f"k{i}" for i in range(0, 2400, 2)])
    assert len(found) == 600 and found["k1198"].text == "1198"


def test_the_location_may_start_with_a_tilde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    with CallCache("~/.cache/losona/calls.sqlite") as cache:
        assert cache.path == tmp_path / ".cache" / "losona" / "calls.sqlite"
    assert cache.path.is_file()


@pytest.mark.parametrize(
    "damage",
    [
        b"this is not a database at all, just text" * 100,
        b"SQLite format 3\x00" + b"\xff" * 4000,  # a header, then garbage
    ],
)
def test_a_damaged_file_is_a_clear_error_with_the_way_out(tmp_path: Path, damage: bytes) -> None:
    path = tmp_path / "calls.sqlite"
    path.write_bytes(damage)
    with pytest.raises(LosonaError) as error, CallCache(path) as cache:
        cache.get_many(["k"])
    message = str(error.value)
    assert str(path) in message and "the call cache cannot be used" in message
    assert f"mv {path} {path}.broken" in message and "paths.call_cache" in message


def test_a_cache_of_another_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    db = sqlite3.connect(path)
    db.execute("PRAGMA user_version=99")
    db.close()
    with pytest.raises(LosonaError, match="a call cache of format 99"):
        CallCache(path)
