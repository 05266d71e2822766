"""The run index (results/index.py): where each run is, validated against the file on every
use, caught up when the file only grew, rebuilt when it changed otherwise, and never the
only word on a refusal."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
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
    name = index_path(results).name
    assert sorted(p.name for p in index_path(results).parent.iterdir()) == [name, f"{name}.build"]
    build = index_path(results).with_name(f"{name}.build")
    assert build.stat().st_mode & 0o777 == 0o600  # the user's own, as the cache is


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


def _rebuilds(monkeypatch) -> list[int]:
    """Counts the whole-file builds of an index from now on (one entry each)."""
    calls: list[int] = []
    real = RunIndexFile.rebuild

    def counted(self):
        calls.append(1)
        real(self)

    monkeypatch.setattr(RunIndexFile, "rebuild", counted)
    return calls


def test_warm_waits_for_a_writer_building_the_index_and_uses_its_index(results, tmp_path,
                                                                        monkeypatch):
    """Jobs ending together onto a large file build its index once, not once each."""
    _lookup(results, "a")
    os.utime(results, ns=(1, 1))  # touched: stale, so the next writer rebuilds
    build = index_path(results).with_name(index_path(results).name + ".build")
    holder = hold_lock(build, tmp_path / "ready")  # another writer, building
    try:
        waiter = threading.Thread(target=RunIndexFile.warm, args=(results,))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive()  # waiting for the builder, not reading the file
        assert _lookup(results, "b")[1] is True  # what the builder does
        builds = _rebuilds(monkeypatch)
    finally:
        holder.kill()
        holder.wait()
    waiter.join(10)
    assert not waiter.is_alive() and builds == []  # found it built: nothing read again
    assert _lookup(results, "b") == ((3, len(HEADER_LINE) + len(_line("a"))), False)


def test_warm_builds_its_own_index_when_the_builder_takes_too_long(results, tmp_path,
                                                                   monkeypatch):
    docs = " ".join((Path(__file__).parents[2] / "docs" / "results-files.md").read_text().split())
    assert "waits for that build, up to 60 s" in docs and index_mod._BUILD_WAIT_SEC == 60.0
    _lookup(results, "a")
    os.utime(results, ns=(1, 1))
    build = index_path(results).with_name(index_path(results).name + ".build")
    monkeypatch.setattr(index_mod, "_BUILD_WAIT_SEC", 0.3)
    holder = hold_lock(build, tmp_path / "ready")
    try:
        builds = _rebuilds(monkeypatch)
        started = time.monotonic()
        RunIndexFile.warm(results)
        assert 0.3 <= time.monotonic() - started < 5
        assert builds == [1]
    finally:
        holder.kill()
        holder.wait()
    assert _lookup(results, "b") == ((3, len(HEADER_LINE) + len(_line("a"))), False)


# ------------------------------------------------------ the format and the validation's edges


def _meta(results: Path) -> dict:
    db = sqlite3.connect(index_path(results))
    try:
        return dict(db.execute("SELECT k, v FROM meta").fetchall())
    finally:
        db.close()


def test_the_index_format_is_pinned(results):
    """What another process (another version) reads back: the format number, the digest of
    a run identity (its cells joined by NUL), and how far the file was indexed."""
    from hashlib import blake2b

    _lookup(results, "a")
    meta = _meta(results)
    data = results.read_bytes()
    st = results.stat()
    assert meta == {
        "version": 1, "ino": str(st.st_ino), "size": len(data), "mtime_ns": str(st.st_mtime_ns),
        "head": blake2b(data[:4096]).hexdigest(), "tail": blake2b(data[-4096:]).hexdigest(),
        "ends_line": 1, "lines": 3}
    assert key_digest(("a", "b")) == blake2b(b"a\0b", digest_size=16).digest()
    assert len(index_path(results).stem) == 32


def test_an_index_of_another_format_is_rebuilt(results):
    _lookup(results, "a")
    db = sqlite3.connect(index_path(results))
    db.execute("UPDATE meta SET v = 2 WHERE k = 'version'")
    db.commit()
    db.close()
    assert _lookup(results, "a")[1] is True


def _padded(results: Path, rows: int) -> int:
    """``results`` with ``rows`` rows (about 100 bytes each); returns its size."""
    results.write_text(HEADER_LINE + "".join(_line(f"p{i:05d}") for i in range(rows)))
    return results.stat().st_size


@pytest.mark.parametrize("where, noticed", [
    ("head-last", True), ("head-after", False), ("tail-first", True), ("tail-before", False)])
def test_an_edit_that_keeps_the_size_is_noticed_in_the_4_kib_compared_and_not_beyond(
        results, where, noticed):
    """The documented window: an edit of the same size followed by an append is noticed only
    in the first 4 KiB or the last 4 KiB indexed (docs/results-files.md)."""
    size = _padded(results, 300)
    _lookup(results, "p00000")
    at = {"head-last": 4095, "head-after": 4096, "tail-first": size - 4096,
          "tail-before": size - 4097}[where]
    data = bytearray(results.read_bytes())
    assert data[at:at + 1] != b"\n"
    data[at:at + 1] = b"Q" if data[at:at + 1] != b"Q" else b"R"
    results.write_bytes(bytes(data) + _line("new").encode())
    assert _lookup(results, "new")[1] is noticed


@pytest.mark.parametrize("behind, rebuilt", [(1 << 20, False), ((1 << 20) + 1, True)])
def test_warm_rebuilds_an_index_more_than_a_mib_behind(results, behind, rebuilt):
    _lookup(results, "a")
    db = index_path(results)
    os.utime(db, ns=(1, 1))
    line = _line("q").encode()
    tail = b"".join(_line(f"q{i}").encode() for i in range(behind // len(line) + 1))
    with open(results, "ab") as f:
        f.write(tail[:behind - 1] + b"\n")
    assert results.stat().st_size - len(HEADER_LINE) - 2 * len(_line("a")) == behind
    RunIndexFile.warm(results)
    assert (db.stat().st_mtime_ns != 1) is rebuilt


class _Clock:
    """The wall clock at ``now``; waiting goes on in real time."""

    monotonic = staticmethod(time.monotonic)
    sleep = staticmethod(time.sleep)

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


def test_warm_removes_half_built_indexes_older_than_a_day_to_the_second(results, monkeypatch):
    _lookup(results, "a")
    folder = index_path(results).parent
    day, now = 86400, 1_000_086_400
    ages = {"old.sqlite.1.tmp": day + 1, "edge.sqlite.2.tmp": day, "young.sqlite.3.tmp": day - 1,
            "old.sqlite.1.tmp-journal": day + 1}
    for name, age in ages.items():
        (folder / name).write_text("half")
        os.utime(folder / name, (now - age, now - age))
    monkeypatch.setattr(index_mod, "time", _Clock(float(now)))
    os.utime(results, ns=(1, 1))  # touched: stale, so warm rebuilds, and tidies up first
    RunIndexFile.warm(results)
    left = sorted(p.name for p in folder.iterdir())
    assert "edge.sqlite.2.tmp" in left and "young.sqlite.3.tmp" in left
    assert "old.sqlite.1.tmp" not in left and "old.sqlite.1.tmp-journal" not in left
    assert index_path(results).name in left


def test_warm_takes_away_the_journal_of_the_index_it_replaces(results, monkeypatch):
    _lookup(results, "a")
    journal = index_path(results).with_name(index_path(results).name + "-journal")
    os.utime(results, ns=(1, 1))  # touched: stale, so warm rebuilds
    real = RunIndexFile.rebuild

    def meanwhile_a_journal(self):  # left beside the old index while the new one is built
        journal.write_bytes(b"stale")
        real(self)

    monkeypatch.setattr(RunIndexFile, "rebuild", meanwhile_a_journal)
    RunIndexFile.warm(results)
    assert not journal.exists()
    assert _lookup(results, "b")[1] is False


def test_an_index_with_a_journal_left_is_remade_under_the_lock(results):
    """A journal beside the index: a writer holding the lock is changing it, or one was
    killed doing so. warm() leaves it; the writer under the lock sorts it out."""
    _lookup(results, "a")
    journal = index_path(results).with_name(index_path(results).name + "-journal")
    journal.write_bytes(b"stale")
    os.utime(results, ns=(1, 1))
    RunIndexFile.warm(results)
    assert journal.read_bytes() == b"stale"
    assert _lookup(results, "b") == ((3, len(HEADER_LINE) + len(_line("a"))), True)
    assert not journal.exists()


def test_warm_leaves_an_index_it_cannot_read_to_the_writer_under_the_lock(results):
    """Outside the lock an index can be read half written by the writer holding it (jobs
    appending at once): warm() does not rebuild it for that; under the lock, open() remakes
    an index that is really broken."""
    _lookup(results, "a")
    db = index_path(results)
    db.write_bytes(b"not a database" * 100)
    RunIndexFile.warm(results)
    assert db.read_bytes() == b"not a database" * 100
    assert _lookup(results, "b") == ((3, len(HEADER_LINE) + len(_line("a"))), True)


def test_a_broken_index_and_its_journal_are_removed(results):
    _lookup(results, "a")
    db = index_path(results)
    db.write_bytes(b"not a database" * 100)
    journal = db.with_name(db.name + "-journal")
    journal.write_bytes(b"not a journal")
    assert _lookup(results, "a")[1] is True
    assert not journal.exists()


@pytest.mark.parametrize("start, end", [(b"", b"\n"), (HEADER_LINE.encode(), b"\r")],
                         ids=["empty", "CR"])
def test_an_index_of_a_file_that_then_grows_is_caught_up(tmp_path, start, end):
    """An empty file (then the header and a row), and a file of CR line ends."""
    out = tmp_path / "runs.csv"
    out.write_bytes(start.replace(b"\n", end))
    _lookup(out, "a")
    out.write_bytes(out.read_bytes() + (HEADER_LINE if not start else "").replace(
        "\n", end.decode()).encode() + _line("a").replace("\n", end.decode()).encode())
    got, rebuilt = _lookup(out, "a")
    assert rebuilt is False and got == (2, len(HEADER_LINE))


def test_without_xdg_cache_home_the_cache_is_under_home(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_folder() == tmp_path / ".cache" / "ezpz-amsc" / "runs"
