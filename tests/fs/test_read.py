"""Reading files (fs/read.py): regular files only, never a hang, never more than the cap,
and every command that reads a whole file goes through it.

Each case runs under ``no_hang``: a FIFO opened for reading without a writer would block
the suite, /dev/zero would fill the memory."""

from __future__ import annotations

import errno
import json
import os
import socket
from pathlib import Path

import pytest
from helpers import RUNS, error_line, good_run, one_row, run_cli, run_group, run_report

from ezpz_amsc.fs.read import NotRegularFile, open_regular, read_capped

pytestmark = pytest.mark.usefixtures("no_hang", "clean_hook_env")

PROC_FILE = Path("/proc/self/status")  # regular, 0 bytes by stat, a read would give more


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


# ------------------------------------------------------------------------- the one opener


def test_a_regular_file_is_read_to_the_cap_and_one_byte_more(tmp_path):
    p = tmp_path / "f"
    p.write_bytes(b"x" * 100)
    assert read_capped(p, 100) == b"x" * 100
    assert read_capped(p, 99) == b"x" * 100  # cap + 1: too large
    assert read_capped(p, 10) == b"x" * 11
    (tmp_path / "empty").write_bytes(b"")
    assert read_capped(tmp_path / "empty", 10) == b""


def _first(paths) -> Path | None:
    return next(iter(paths), None)


@pytest.mark.parametrize("what, why", [
    ("fifo", "not a regular file (a FIFO)"),
    ("device", "not a regular file (a device)"),
    ("block-device", "not a regular file (a device)"),
    ("socket", "not a regular file (a socket)"),
    ("proc", "not a regular file (a /proc or /sys file)"),
    ("sys", "not a regular file (a /proc or /sys file)"),
])
def test_what_is_no_regular_file_is_refused_unread(tmp_path, what, why):
    if what == "fifo":
        path = _fifo(tmp_path / "f")
    elif what == "device":
        path = Path("/dev/zero")
    elif what == "block-device":
        path = _first(p for p in Path("/dev").iterdir() if p.is_block_device())
    elif what == "socket":
        path = tmp_path / "s"
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
    elif what == "sys":
        path = _first(p for p in Path("/sys/kernel").glob("*") if p.is_file())
    else:
        path = PROC_FILE
    if path is None:
        pytest.skip(f"no {what} file here")
    link = tmp_path / "link"
    link.symlink_to(path)
    for p in (path, link):  # a symlink to it too: what is opened is what is checked
        for read in (open_regular, lambda q: read_capped(q, 1 << 30)):
            with pytest.raises(NotRegularFile) as e:
                read(p)
            assert (e.value.errno, e.value.strerror, e.value.filename) == (errno.EINVAL, why,
                                                                            str(p))


def test_a_folder_is_refused_as_a_folder(tmp_path):
    with pytest.raises(IsADirectoryError):
        open_regular(tmp_path)


def test_a_fifo_swapped_in_after_the_look_is_refused_without_blocking(tmp_path, monkeypatch):
    """The path is looked at, then opened with O_NONBLOCK and looked at again: a FIFO put
    there in between neither blocks the open nor gets read."""
    p = tmp_path / "f"
    p.write_text("x")
    real = os.open

    def swap(path, flags, *a, **kw):
        if Path(path) == p:
            p.unlink()
            os.mkfifo(p)
            assert flags & os.O_NONBLOCK
        return real(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", swap)
    with pytest.raises(NotRegularFile, match="a FIFO"):
        open_regular(p)


# ------------------------------------------------- every command that reads a whole file


def test_a_name_in_a_folder_is_read_never_through_a_link(tmp_path):
    """With dir_fd (folders others can write in) a link is ELOOP, even to a regular file;
    a regular file is read to the cap; a FIFO and a folder are refused unread."""
    (tmp_path / "rec.json").write_bytes(b"x" * 10)
    (tmp_path / "link.json").symlink_to(tmp_path / "rec.json")
    _fifo(tmp_path / "fifo.json")
    (tmp_path / "dir.json").mkdir()
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert read_capped("rec.json", 4, fd) == b"x" * 5
        assert read_capped("rec.json", 40, fd) == b"x" * 10
        with pytest.raises(OSError) as e:
            read_capped("link.json", 40, fd)
        assert e.value.errno == errno.ELOOP
        with pytest.raises(NotRegularFile, match="a FIFO"):
            read_capped("fifo.json", 40, fd)
        with pytest.raises(IsADirectoryError):
            read_capped("dir.json", 40, fd)
        with pytest.raises(FileNotFoundError):
            read_capped("gone.json", 40, fd)
    finally:
        os.close(fd)
    assert read_capped(tmp_path / "link.json", 40) == b"x" * 10  # a path the user gave: followed


@pytest.mark.parametrize("what", ["fifo", "device"])
def test_check_and_report_refuse_a_fifo_or_a_device_with_one_line(tmp_path, what):
    path = _fifo(tmp_path / "r.csv") if what == "fifo" else Path("/dev/zero")
    kind = "a FIFO" if what == "fifo" else "a device"
    want = f"error: {path}: cannot read: not a regular file ({kind})"
    assert error_line(run_group("check", path)) == want
    assert error_line(run_report(path)) == want


def test_a_fifo_among_the_records_is_one_problem_and_reproduce_refuses_it(tmp_path):
    results, folder = tmp_path / "r.csv", tmp_path / "records"
    assert run_cli(RUNS / "minimal-1rank", "--config", "c", "--append", results,
                   "--provenance", folder, "-q").exit_code == 0
    fifo = _fifo(folder / "x.json")
    r = run_group("check", results, "--provenance", folder, "-q")
    assert r.stderr.splitlines() == [f"{fifo}: cannot read: not a regular file (a FIFO)",
                                     f"error: {results}: 1 problem in 1 row and 1 record"]
    assert error_line(run_group("reproduce", fifo)) == (
        f"error: {fifo}: cannot read: not a regular file (a FIFO)")


@pytest.mark.parametrize("target", ["fifo", "proc"])
def test_a_metrics_file_that_is_no_file_is_a_clear_error_not_a_hang(tmp_path, target):
    run = good_run(tmp_path / "run")
    metrics = run / "metrics-0.jsonl"
    metrics.unlink()
    metrics.symlink_to(_fifo(tmp_path / "fifo") if target == "fifo" else PROC_FILE)
    line = error_line(run_cli(run, "--config", "c"))
    if target == "fifo":  # never taken for a metrics file (run/layout.py)
        assert line.startswith(f"error: {run}: no metrics found (looked for"), line
    else:  # a regular file by its stat: refused once opened
        assert line == (f"error: {metrics}: cannot read metrics file: not a regular file (a "
                        "/proc or /sys file)")


def test_a_metrics_file_named_by_its_run_id_pointing_at_proc_is_refused(tmp_path):
    """A <run_id>.jsonl is sniffed before it is read: a /proc file must block neither."""
    run = good_run(tmp_path / "run")
    (run / "metrics-0.jsonl").rename(run / "20260811-182837.jsonl")
    (run / "20260811-182838.jsonl").symlink_to(PROC_FILE)
    row = one_row(run_cli(run, "--config", "c"))
    assert row["steps"] == "4"


def test_a_run_info_json_that_is_a_proc_file_is_skipped_with_a_note(tmp_path):
    run = good_run(tmp_path / "run", MACHINE="Aurora")
    info = json.loads((run / "run_info.json").read_text())
    (run / "run_info.json").unlink()
    (run / "run_info.json").symlink_to(PROC_FILE)
    r = run_cli(run, "--config", "c", "--system", "Aurora", "--gpus", "1", "--nodes", "1")
    assert r.exit_code == 0, r.stderr
    assert "note: skipped run_info.json: not a regular file (a /proc or /sys file)" in (
        r.stderr.splitlines())
    assert info["Distributed"]["MACHINE"] == "Aurora"
