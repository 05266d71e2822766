"""The run index (results/index.py): where each run is, validated against the file on every
use, caught up when the file only grew, rebuilt when it changed otherwise, and never the
only word on a refusal."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from helpers import hold_lock, parse_csv

from ezpz_amsc.errors import AmscError
from ezpz_amsc.results import append as sink
from ezpz_amsc.results import index as index_mod
from ezpz_amsc.results.index import RunIndexFile, cache_folder, index_path, key_digest
from ezpz_amsc.results.schema import HEADER, cells_key

HEADER_LINE = ",".join(HEADER) + "\n"


def _row(config: str, ts: str = "2026-08-11T17:11:17Z") -> list[str]:
    return [ts, "Aurora", config, "1", "12", "pass", "1.000", "", "", "", "", "", "10", ""]


def _line(config: str) -> str:
    return ",".join(_row(config)) + "\n"


def _open(path: Path) -> tuple[int, RunIndexFile]:
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    idx = RunIndexFile.open(path, fd)
    assert idx is not None
    return fd, idx


def _lookup(path: Path, config: str) -> tuple[tuple[int, int] | None, bool]:
    """(line, offset) of run ``config`` in the index of ``path``, and whether it was rebuilt."""
    fd, idx = _open(path)
    try:
        return idx.find(cells_key(_row(config))), idx.rebuilt
    finally:
        idx.close()
        os.close(fd)


@pytest.fixture
def results(tmp_path: Path) -> Path:
    out = tmp_path / "runs.csv"
    out.write_text(HEADER_LINE + _line("a") + _line("b"))
    return out


def test_the_first_use_indexes_the_file_then_only_what_was_appended(results, monkeypatch):
    assert _lookup(results, "b") == ((3, len(HEADER_LINE) + len(_line("a"))), True)
    with open(results, "a") as f:  # appended by a program that ignores the lock
        f.write(_line("c"))
    read = []
    real = index_mod.read_records
    monkeypatch.setattr(index_mod, "read_records",
                        lambda f, offset=0, line=1: (read.append((offset, line)),
                                                     real(f, offset, line))[1])
    size_before = len(HEADER_LINE) + 2 * len(_line("a"))
    assert _lookup(results, "c") == ((4, size_before), False)
    assert read == [(size_before, 4)]  # only the new bytes, numbered on from line 4
    read.clear()
    assert _lookup(results, "a") == ((2, len(HEADER_LINE)), False)
    assert read == []  # nothing new: nothing read


@pytest.mark.parametrize("change", ["edited-same-size", "truncated", "replaced", "edited-then-grew",
                                    "touched"])
def test_any_change_but_growth_rebuilds_the_index(results, change):
    assert _lookup(results, "a")[1] is True
    if change == "edited-same-size":
        results.write_text(HEADER_LINE + _line("x") + _line("b"))  # same inode, same size
        os.utime(results, ns=(1, 1))
    elif change == "truncated":
        results.write_text(HEADER_LINE + _line("x"))
    elif change == "replaced":
        new = results.with_name("new.csv")
        new.write_text(HEADER_LINE + _line("x") + _line("b") + _line("c"))
        new.rename(results)
    elif change == "edited-then-grew":
        results.write_text(HEADER_LINE + _line("x") + _line("b") + _line("c"))
    else:
        os.utime(results, ns=(1, 1))
    got, rebuilt = _lookup(results, "a")
    assert rebuilt is True
    assert got is None if change != "touched" else got == (2, len(HEADER_LINE))
    if change != "touched":
        assert _lookup(results, "x") == ((2, len(HEADER_LINE)), False)


def test_a_file_that_ended_inside_a_line_is_indexed_again_when_it_grows(results):
    results.write_text(HEADER_LINE + _line("a") + _line("b").rstrip("\n"))
    assert _lookup(results, "b")[1] is True
    with open(results, "a") as f:
        f.write(",more\n" + _line("c"))
    got, rebuilt = _lookup(results, "c")
    assert rebuilt is True and got == (4, len(HEADER_LINE) + 2 * len(_line("a")) + len(",more"))


def test_a_broken_database_is_made_again(results):
    _lookup(results, "a")
    db = index_path(results)
    db.write_bytes(b"not a database" * 100)
    assert _lookup(results, "b") == ((3, len(HEADER_LINE) + len(_line("a"))), True)


def test_an_index_naming_a_wrong_line_is_not_believed(results):
    """A refusal is always checked against the file: an index claiming a run the line at its
    offset does not hold is dropped, and the file itself is read."""
    _lookup(results, "a")
    db = sqlite3.connect(index_path(results))
    db.execute("INSERT INTO runs VALUES (?, 2, ?)", (key_digest(cells_key(_row("zz"))),
                                                     len(HEADER_LINE)))
    db.commit()
    db.close()
    sink.append_rows(results, [_row("zz")])  # not refused: line 2 holds run a
    assert [r["config"] for r in parse_csv(results.read_text())] == ["a", "b", "zz"]
    with pytest.raises(AmscError, match="is already at line 4 of"):
        sink.append_rows(results, [_row("zz")])


def test_without_a_cache_folder_the_whole_file_is_read(results, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for value in ("relative/cache", str(blocker)):  # ignored (the XDG rule), not a folder
        monkeypatch.setenv("XDG_CACHE_HOME", value)
        fd = os.open(results, os.O_RDWR)
        try:
            assert RunIndexFile.open(results, fd) is None
        finally:
            os.close(fd)
        with pytest.raises(AmscError, match="is already at line 3 of"):
            sink.append_rows(results, [_row("b")])
    sink.append_rows(results, [_row("c")])
    assert [r["config"] for r in parse_csv(results.read_text())] == ["a", "b", "c"]


def test_the_cache_folder_follows_xdg_and_home(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_folder() == tmp_path / "ezpz-amsc" / "runs"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_folder() == tmp_path / "home" / ".cache" / "ezpz-amsc" / "runs"
    monkeypatch.setenv("XDG_CACHE_HOME", "rel")
    assert cache_folder() is None
    assert index_path(tmp_path / "r.csv") is None


def test_one_index_per_results_file_by_its_real_path(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "a")
    assert index_path(tmp_path / "a" / "r.csv") == index_path(tmp_path / "link" / "r.csv")
    assert index_path(tmp_path / "a" / "r.csv") != index_path(tmp_path / "a" / "s.csv")
    assert index_path(tmp_path / "a" / "r.csv").suffix == ".sqlite"


def test_a_key_digest_is_16_bytes_and_tells_runs_apart():
    a = key_digest(("2026-08-11T17:11:17Z", "Aurora", "a", "1", "12"))
    assert len(a) == 16
    assert a != key_digest(("2026-08-11T17:11:17Z", "Aurora", "a", "1", "2"))
    assert a != key_digest(("2026-08-11T17:11:17Z", "Aurora", "a1", "", "12"))  # not joined
    assert key_digest(("a\udc80",)) != key_digest(("a",))  # lone surrogates kept


@pytest.mark.slow
def test_a_million_rows_the_lock_reads_only_what_changed(tmp_path, monkeypatch):
    """The 1M-row file: a duplicate on line 500,002 is found by the index and refused with its
    line, and an append after the first reads none of the file's rows."""
    out = tmp_path / "runs.csv"
    with open(out, "w") as f:
        f.write(HEADER_LINE)
        for i in range(1_000_000):
            f.write(_line(f"sweep/{i}"))
    sink.append_rows(out, [_row("first")])  # builds the index
    read = []
    real = index_mod.read_records
    monkeypatch.setattr(index_mod, "read_records",
                        lambda f, offset=0, line=1: (read.append(offset), real(f, offset, line))[1])
    with pytest.raises(AmscError) as e:
        sink.append_rows(out, [_row("sweep/500000")])
    assert str(e.value).startswith("the run (2026-08-11T17:11:17Z, Aurora, sweep/500000, 1, 12) "
                                   f"is already at line 500002 of {out}")
    sink.append_rows(out, [_row("second")])
    assert read == [out.stat().st_size - len(_line("second"))]  # its own new line, after it
    with open(out, "rb") as f:
        f.seek(-2 * len(_line("first")) - 1, os.SEEK_END)
        assert f.read().decode().splitlines()[-2:] == [_line("first").strip(),
                                                       _line("second").strip()]


# ------------------------------------------------------------- built before the lock is taken


def test_warm_builds_a_missing_index_without_the_lock(results, tmp_path, monkeypatch):
    """While another process holds the results file's lock, warm() still builds the index;
    the append that then gets the lock finds it up to date and reads nothing."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    holder = hold_lock(results, tmp_path / "ready")
    try:
        assert not index_path(results).exists()
        RunIndexFile.warm(results)
        assert index_path(results).exists()
    finally:
        holder.kill()
        holder.wait()
    assert _lookup(results, "b") == ((3, len(HEADER_LINE) + len(_line("a"))), False)
    assert [p.name for p in index_path(results).parent.iterdir()] == [index_path(results).name]


def test_warm_leaves_an_index_close_enough_alone_and_rebuilds_one_far_behind(results):
    _lookup(results, "a")
    db = index_path(results)
    os.utime(db, ns=(1, 1))
    with open(results, "a") as f:
        f.write(_line("c"))
    RunIndexFile.warm(results)
    assert db.stat().st_mtime_ns == 1  # a line behind: caught up under the lock, cheaply
    with open(results, "a") as f:  # more than a MiB behind: rebuilt before the lock
        f.write("".join(_line(f"x{i}") for i in range((2 << 20) // len(_line("x")))))
    RunIndexFile.warm(results)
    assert db.stat().st_mtime_ns != 1
    got, rebuilt = _lookup(results, "x1000")
    offset = len(HEADER_LINE) + 3 * len(_line("a")) + sum(len(_line(f"x{i}")) for i in range(1000))
    assert (got, rebuilt) == ((1005, offset), False)  # header, a, b, c, then x0 on line 5


def test_warm_removes_what_a_killed_warm_left_a_day_ago(results):
    _lookup(results, "a")
    folder = index_path(results).parent
    old, new = folder / "x.sqlite.123.tmp", folder / "y.sqlite.456.tmp"
    for p in (old, new):
        p.write_text("half")
    os.utime(old, (0, 0))
    os.utime(index_path(results), ns=(1, 1))  # stale: warm rebuilds, and tidies up first
    results.write_text(HEADER_LINE + _line("z"))
    RunIndexFile.warm(results)
    assert not old.exists() and new.exists()
