"""Kept prompt states: found by the tokens they share, used only when whole, held to capacity."""

from __future__ import annotations

import os
from pathlib import Path

from losona.models.prompt_states import PromptStates, identity

STATE = bytes(range(256)) * 40  # what llama.cpp would hand over, as opaque bytes


def states(folder: Path, capacity: int = 1 << 30) -> PromptStates:
    return PromptStates(folder, "model A on CPU X", capacity)


def test_the_kept_state_sharing_the_most_leading_tokens_is_found(tmp_path: Path) -> None:
    kept = states(tmp_path)
    kept.keep([1, 2, 3, 4], STATE)
    kept.keep([1, 2, 9], STATE[::-1])
    kept.keep([1, 2, 3, 4], b"kept once: the first state stays")
    # Another process, which has read no state file yet.
    found = states(tmp_path).longest([1, 2, 3, 7, 8])
    assert found is not None
    shared, state = found
    assert shared == 3 and state.tokens.tolist() == [1, 2, 3, 4]
    assert states(tmp_path).read(state) == STATE
    assert states(tmp_path).longest([5, 1, 2]) is None  # no shared first token


def test_a_corrupt_or_cut_state_is_passed_over_and_removed(tmp_path: Path) -> None:
    kept = states(tmp_path)
    kept.keep([1, 2, 3], STATE)
    kept.keep([4, 5, 6], STATE)
    corrupt, cut = sorted(tmp_path.glob("*.state"), key=lambda p: p.read_bytes()[-1])
    data = bytearray(corrupt.read_bytes())
    data[-10] ^= 1  # one bit of llama.cpp's state flipped
    corrupt.write_bytes(bytes(data))
    cut.write_bytes(cut.read_bytes()[:-1000])
    (tmp_path / "junk.state").write_bytes(b"not a state at all")
    for tokens in ([1, 2, 3], [4, 5, 6]):
        found = states(tmp_path).longest(tokens)
        assert found is not None and found[0] == 3  # the header still says so
        assert states(tmp_path).read(found[1]) is None  # ... but the bytes do not
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junk.state"]


def test_a_state_of_another_model_or_cpu_is_not_used(tmp_path: Path) -> None:
    states(tmp_path).keep([1, 2, 3], STATE)
    assert PromptStates(tmp_path, "model A on CPU Y").longest([1, 2, 3]) is None
    model = tmp_path / "model.gguf"
    model.write_bytes(b"weights")
    same = identity(model, "0.3.36", "AVX2 = 1", 4096)
    assert identity(model, "0.3.36", "AVX2 = 0", 4096) != same
    model.write_bytes(b"other weights")
    assert identity(model, "0.3.36", "AVX2 = 1", 4096) != same


def test_past_capacity_the_states_used_least_recently_are_removed(tmp_path: Path) -> None:
    size = len(STATE) + 200  # a state file: its header, its tokens, the state
    kept = states(tmp_path, capacity=2 * size)
    kept.keep([1], STATE)
    kept.keep([2], STATE)
    one, two = (kept.longest(tokens) for tokens in ([1], [2]))
    assert one is not None and two is not None
    os.utime(one[1].path, ns=(1, 1))  # [1] the older of the two
    os.utime(two[1].path, ns=(2, 2))
    assert kept.read(one[1]) == STATE  # [1] used: now the newer
    kept.keep([3], STATE)
    assert states(tmp_path).longest([2]) is None
    assert states(tmp_path).longest([1]) is not None and states(tmp_path).longest([3])


def test_a_write_cut_short_counts_against_capacity_and_goes_first(tmp_path: Path) -> None:
    left = tmp_path / ".abc.state.x1y2.tmp"  # what a killed process's write leaves
    left.write_bytes(STATE)
    os.utime(left, ns=(1, 1))
    kept = states(tmp_path, capacity=len(STATE) + 1000)
    kept.keep([1], STATE)
    assert not left.exists() and kept.longest([1]) is not None
