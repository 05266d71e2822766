"""Run identities as digests (results/seen.py): where each run was first seen, confirmed
against the file whenever a digest matches, in 4-byte columns while they fit."""

from __future__ import annotations

import gc
import weakref

import pytest

from ezpz_amsc.results import seen as seen_module
from ezpz_amsc.results.seen import SeenRuns


def _runs(keys_at):
    """A SeenRuns whose records are ``keys_at[offset]``; the re-reads it asks for, logged."""
    asked = []

    def key_at(where, offset):
        asked.append((where, offset))
        return keys_at.get(offset)

    return SeenRuns(key_at), asked


def test_the_first_sighting_of_each_run_is_kept_and_returned_for_the_next():
    runs, asked = _runs({10: ("a", "b"), 20: ("a", "c")})
    assert runs.first("a,b", 2, 10) is None
    assert runs.first("a,c", 3, 20) is None
    assert runs.first("a,b", 4, 30) == 2
    assert runs.first("a,c", 5, 40) == 3
    assert runs.first("a,b", 6, 50) == 2
    assert len(runs) == 2
    assert asked == [(2, 10), (3, 20), (2, 10)]  # only where a digest matched


def test_a_digest_collision_is_no_duplicate_and_hides_none(monkeypatch):
    monkeypatch.setattr(seen_module, "_digest", lambda text: 5)
    runs, asked = _runs({1: ("x",), 2: ("y",), 3: ("z,w",)})
    assert runs.first("x", 10, 1) is None
    assert runs.first("y", 11, 2) is None
    assert runs.first("z,w", 12, 3, key=("z,w",)) is None  # one cell holding a comma
    assert runs.first("y", 13, 4) == 11
    assert runs.first("z,w", 14, 5, key=("z,w",)) == 12
    assert runs.first("z,w", 15, 6) is None  # the cells "z" and "w": another run
    assert asked[:2] == [(10, 1), (10, 1)]


def test_a_record_that_is_gone_confirms_nothing():
    runs, _ = _runs({})
    assert runs.first("a", 1, 0) is None
    assert runs.first("a", 2, 5) is None
    assert len(runs) == 2


@pytest.mark.parametrize("where, offset", [(7, 1 << 40), (1 << 33, 9)])
def test_lines_and_offsets_past_four_bytes_widen_the_columns(where, offset):
    keys = {offset: ("big",), 3: ("small",)}
    runs, asked = _runs(keys)
    assert runs.first("small", 1, 3) is None
    assert runs.first("big", where, offset) is None
    assert runs.first("big", 99, 100) == where
    assert runs.first("small", 100, 101) == 1
    assert asked == [(where, offset), (1, 3)]


def test_thousands_of_runs_grow_the_table_and_lose_none():
    runs, _ = _runs({i: (str(i),) for i in range(5000)})
    assert all(runs.first(str(i), i + 2, i) is None for i in range(5000))
    assert [runs.first(str(i), 0, 0) for i in (0, 1234, 4999)] == [2, 1236, 5001]
    assert len(runs) == 5000


@pytest.mark.parametrize("released", [False, True])
def test_a_released_index_lets_its_reader_go_without_the_garbage_collector(released):
    class Reader:
        def key_at(self, _where: int, _offset: int) -> tuple[str, ...] | None:
            return ("a",)

    reader = Reader()
    reader.seen = SeenRuns(reader.key_at)  # the reader holds its index, which points back
    reader.seen.first("a", 2, 0)
    seen, gone = reader.seen, weakref.ref(reader)
    if released:
        seen.release()
    gc.disable()
    try:
        del reader
        assert (gone() is None) is released  # freed at once, or only by the collector
    finally:
        gc.enable()
        gc.collect()
    if released:  # nothing is looked up afterwards: a match would say so, not guess
        with pytest.raises(RuntimeError, match="the runs seen were released"):
            seen.first("a", 3, 10)
