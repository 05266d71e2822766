"""Writing rows to a results file (results/append.py): the header, appending, locking, duplicates,
and every fault leaving the file as it was."""

from __future__ import annotations

import csv
import errno
import importlib.util
import os
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
from helpers import (
    MFU_NOTE,
    REPO,
    RUNS,
    error_line,
    good_run,
    hold_lock,
    mode_of,
    names_in,
    notes_of,
    one_row,
    parse_csv,
    paused,
    release,
    run_cli,
    run_group,
    wait_until_paused,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from ezpz_amsc.errors import AmscError
from ezpz_amsc.fs.create import check_can_create
from ezpz_amsc.results import append as sink
from ezpz_amsc.results.schema import HEADER, cells_key, render_csv

A = RUNS / "fsdp_tp-2rank"
B = RUNS / "fsdp_tp-1rank-launch"
HEADER_LINE = ",".join(HEADER)
ROW = ["2026-08-11T17:11:17Z", "Aurora", "sweep/0", "1", "12", "pass", "1.000", "", "", "", "",
       "", "10", ""]


# ----------------------------------------------------------- the header, and appending


def test_append_creates_file_and_folders(tmp_path):
    out = tmp_path / "results" / "deep" / "runs.csv"
    r = run_cli(A, "--config", "c", "--append", out)
    assert r.exit_code == 0 and r.stdout == ""
    rows = parse_csv(out.read_text())
    assert len(rows) == 1 and rows[0]["throughput_tokens_per_sec"] == "3930.349"


def test_append_twice_one_header(tmp_path):
    out = tmp_path / "runs.csv"
    assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    assert run_cli(B, "--config", "b", "--append", out).exit_code == 0
    text = out.read_text()
    assert text.count("timestamp,system") == 1
    assert [r["config"] for r in parse_csv(text)] == ["a", "b"]


def test_empty_existing_file_gets_header(tmp_path):
    out = tmp_path / "runs.csv"
    out.write_text("")
    assert run_cli(A, "--config", "c", "--append", out).exit_code == 0
    assert len(parse_csv(out.read_text())) == 1


@pytest.mark.parametrize("header", [
    ",".join(reversed(HEADER)),  # same columns, other order
    ",".join(HEADER[:-1]),  # one column short
    ",".join(HEADER) + ",extra",
    "system,timestamp," + ",".join(HEADER[2:]),
    "model,tokens_per_sec,nodes",
])
def test_foreign_header_refused_and_file_untouched(tmp_path, header):
    out = tmp_path / "runs.csv"
    before = (header + "\n1,2,3\n").encode()
    out.write_bytes(before)
    result = run_cli(A, "--config", "c", "--append", out)
    assert (result.exit_code, result.stdout) == (1, "")
    first, *both = result.stderr.splitlines()
    assert first.startswith(f"error: {out}: existing header differs from this tool's (")
    assert first.endswith("); refusing to append — write to a new file")
    # Both headers whole, each column name unbroken, in lines of at most 80 columns.
    assert both[0].startswith("  the file's:  ") and all(len(ln) <= 80 for ln in both)
    at = next(i for i, ln in enumerate(both) if ln.startswith("  this tool's: "))
    assert "".join(ln[15:] for ln in both[:at]) == header
    assert "".join(ln[15:] for ln in both[at:]) == ",".join(HEADER)
    assert out.read_bytes() == before


def test_appended_rows_parse_with_csv_module(tmp_path):
    out = tmp_path / "runs.csv"
    assert run_cli(A, "--config", 'label, with "quotes"', "--append", out).exit_code == 0
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["config"] for r in rows] == ['label, with "quotes"']


def test_file_without_trailing_newline_gets_one(tmp_path):
    out = tmp_path / "runs.csv"
    assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    out.write_bytes(out.read_bytes().rstrip(b"\n"))  # hand-edited
    assert run_cli(B, "--config", "b", "--append", out).exit_code == 0
    rows = parse_csv(out.read_text())
    assert [r["config"] for r in rows] == ["a", "b"]
    assert all(len(r) == len(HEADER) for r in rows)


def test_bom_and_crlf_header_is_the_same_header_and_crlf_is_kept(tmp_path):
    out = tmp_path / "runs.csv"
    out.write_bytes(b"\xef\xbb\xbf" + HEADER_LINE.encode() + b"\r\n")
    r = run_cli(A, "--config", "c", "--append", out)
    assert r.exit_code == 0, r.stderr
    data = out.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf" + HEADER_LINE.encode() + b"\r\n")
    assert data.count(b"\r\n") == 2 and data.count(b"\n") == 2


def test_append_bare_cr_file_keeps_its_line_endings(tmp_path):
    """Regression (fuzzer): a CR-only results file crashed the header check with csv.Error."""
    run = good_run(tmp_path / "run")
    target = tmp_path / "results.csv"
    old = EXISTING.replace(b"\n", b"\r")
    target.write_bytes(old)
    r = run_cli(run, "--config", "c", "--append", target)
    assert r.exit_code == 0, r.stderr
    new = target.read_bytes()
    assert new.startswith(old) and new.endswith(b"\r") and b"\n" not in new
    rows = parse_csv(new.decode().replace("\r", "\n"))
    assert [x["config"] for x in rows] == ["old", "c"]


def test_empty_file_left_by_a_writer_counts_as_new(tmp_path):
    out = tmp_path / "runs.csv"
    out.touch()
    sink.append_rows(out, [ROW])
    assert out.read_text().count("timestamp,system") == 1
    assert len(parse_csv(out.read_text())) == 1


def test_no_companion_file_after_appends_and_refusals(tmp_path):
    out = tmp_path / "runs.csv"
    assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    assert run_cli(A, B, "--config", "b", "--append", out).exit_code == 0
    error_line(run_cli(A, "--config", "a", "--append", out))  # a duplicate: refused
    assert names_in(tmp_path) == ["runs.csv"]
    assert [r["config"] for r in parse_csv(out.read_text())] == ["a", "b", "b"]


# -------------------------------------------------------------------------- duplicates


def test_duplicate_run_refused_with_its_line_number(tmp_path):
    out = tmp_path / "runs.csv"
    assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    assert run_cli(B, "--config", "b", "--append", out).exit_code == 0
    before = out.read_bytes()
    assert [r["config"] for r in parse_csv(before.decode())] == ["a", "b"]
    line = error_line(run_cli(B, "--config", "b", "--append", out))
    assert f"is already at line 3 of {out}" in line
    assert "--allow-duplicate" in line
    assert out.read_bytes() == before


def test_allow_duplicate(tmp_path):
    out = tmp_path / "runs.csv"
    first = run_cli(A, "--config", "a", "--append", out)
    assert (first.exit_code, first.stdout) == (0, "")
    assert notes_of(first) == [MFU_NOTE, f"appended 1 row to {out}"]
    assert len(parse_csv(out.read_text())) == 1
    r = run_cli(A, "--config", "a", "--append", out, "--allow-duplicate")
    assert (r.exit_code, r.stdout) == (0, "")
    assert notes_of(r) == [MFU_NOTE, f"appended 1 row to {out}"]
    rows = parse_csv(out.read_text())
    assert len(rows) == 2 and rows[0] == rows[1]
    assert rows[0]["throughput_tokens_per_sec"] == "3930.349"


def test_same_run_under_another_config_is_not_a_duplicate(tmp_path):
    out = tmp_path / "runs.csv"
    assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    assert len(parse_csv(out.read_text())) == 1
    r = run_cli(A, "--config", "a2", "--append", out)
    assert r.exit_code == 0
    assert notes_of(r) == [MFU_NOTE, f"appended 1 row to {out}"]
    rows = parse_csv(out.read_text())
    assert [x["config"] for x in rows] == ["a", "a2"]
    assert rows[0]["timestamp"] == rows[1]["timestamp"] == "2026-11-29T22:18:43Z"


def test_skip_existing_adds_a_run_unless_it_is_there(tmp_path):
    """Re-running a job script under ``set -e``: the same export again exits 0 and says where
    the row already is; a batch adds the runs that are new."""
    out = tmp_path / "runs.csv"
    assert run_cli(A, "--config", "a", "--append", out, "-q").exit_code == 0
    before = out.read_bytes()
    r = run_cli(A, "--config", "a", "--append", out, "--skip-existing")
    assert (r.exit_code, r.stdout) == (0, "")
    assert notes_of(r) == [MFU_NOTE, "the run (2026-11-29T22:18:43Z, localhost, a, 1, 2) is "
                                     f"already at line 2 of {out}; skipped it (--skip-existing)"]
    assert out.read_bytes() == before
    r = run_cli(B, A, "--config", "a", "--append", out, "--skip-existing")
    assert r.exit_code == 0
    assert notes_of(r)[-2:] == [
        f"{A}: the run (2026-11-29T22:18:43Z, localhost, a, 1, 2) is already at line 2 of "
        f"{out}; skipped it (--skip-existing)"[len(f"{A}: "):],
        f"appended 1 row to {out}"]
    assert [(x["config"], x["timestamp"]) for x in parse_csv(out.read_text())] == [
        ("a", "2026-11-29T22:18:43Z"), ("a", "2026-11-29T22:19:13Z")]


def test_a_skipped_run_with_provenance_makes_no_records_folder(tmp_path):
    """Nothing appended, nothing to record: the records folder is not made for a skip."""
    out, records = tmp_path / "runs.csv", tmp_path / "records"
    assert run_cli(A, "--config", "a", "--append", out, "-q").exit_code == 0
    r = run_cli(A, "--config", "a", "--append", out, "--skip-existing", "--provenance", records)
    assert r.exit_code == 0
    assert "skipped it (--skip-existing)" in notes_of(r)[-1]
    assert not records.exists()


def test_skip_existing_says_when_the_row_there_has_other_values(tmp_path):
    out = tmp_path / "runs.csv"
    assert run_cli(A, "--config", "a", "--append", out, "-q").exit_code == 0
    before = out.read_bytes()
    (there,) = parse_csv(before.decode())
    now = one_row(run_cli(A, "--config", "a", "--reducer", "max"))
    differ = [c for c in HEADER if there[c] != now[c]]
    assert differ == ["throughput_tokens_per_sec", "throughput_tokens_per_sec_per_gpu", "tflops"]
    r = run_cli(A, "--config", "a", "--append", out, "--skip-existing", "--reducer", "max")
    assert r.exit_code == 0
    shown = "; ".join(f"{c} {there[c]!r} there, {now[c]!r} now" for c in differ)
    assert notes_of(r)[-1] == (
        f"the run (2026-11-29T22:18:43Z, localhost, a, 1, 2) is already at line 2 of {out} with "
        f"other values ({shown}); skipped it (--skip-existing)")
    assert out.read_bytes() == before


# ----------------------------------------------------------------------------- locking


def _load_bench():
    spec = importlib.util.spec_from_file_location(
        "concurrent_append", REPO / "benchmarks" / "concurrent_append.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_32_processes_append_at_once(tmp_path):
    ok, report = _load_bench().run(32, tmp_path)
    assert ok, report


@pytest.mark.slow
def test_lock_timeout_names_the_results_file(tmp_path):
    out = tmp_path / "results" / "runs.csv"
    assert run_cli(B, "--config", "b", "--append", out).exit_code == 0
    before = out.read_bytes()
    holder = hold_lock(out, tmp_path / "ready")
    try:
        line = error_line(run_cli(A, "--config", "c", "--append", out, "--lock-timeout", "0.3"))
    finally:
        holder.kill()
        holder.wait()
    assert line == (f"error: {out}: still locked by another writer after 0.3 s; retry, "
                    "or raise --lock-timeout")
    assert out.read_bytes() == before
    assert [p.name for p in out.parent.iterdir()] == ["runs.csv"]


def test_appender_killed_while_holding_lock_does_not_block_the_next(tmp_path):
    # The killed writer had created the file and written nothing: an empty file
    # is a new file, so the next append writes the header.
    out = tmp_path / "runs.csv"
    holder = hold_lock(out, tmp_path / "ready")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert out.read_bytes() == b""
    r = run_cli(A, "--config", "c", "--append", out, "--lock-timeout", "5")
    assert r.exit_code == 0, r.stderr
    assert out.read_text().count("timestamp,system") == 1
    assert [x["config"] for x in parse_csv(out.read_text())] == ["c"]


@pytest.mark.parametrize("value", ["0", "0.5"])
def test_lock_timeout_edges_are_accepted(tmp_path, value):
    out = tmp_path / "r.csv"
    assert run_group(A, "--config", "c", "--append", out, "--lock-timeout", value
                     ).exit_code == 0
    assert len(parse_csv(out.read_text())) == 1


def _paused_writer(out: Path, point: str, folder: Path, config: str = "first"
                   ) -> subprocess.Popen:
    """Another process appending a row to ``out``, paused at ``point`` (fs/create.py's
    EZPZ_AMSC_PAUSE_AT); returns once it is there. ``release`` lets it go on."""
    code = (
        "import sys\n"
        "from ezpz_amsc.results.append import append_rows\n"
        f"row = {[*ROW[:2], config, *ROW[3:]]!r}\n"
        "append_rows(sys.argv[1], [row])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), **paused(folder, point)}
    p = subprocess.Popen([sys.executable, "-c", code, str(out)], env=env)
    wait_until_paused(p, folder, point)
    return p


@pytest.mark.slow
def test_a_writer_holding_the_lock_keeps_it_while_it_reads_the_file(tmp_path):
    """Reading the header and the earlier runs must not drop the lock.

    A record lock is dropped when its process closes any descriptor of the
    file; a reader opened beside the locked one would let a second writer in.
    """
    out = tmp_path / "runs.csv"
    sink.append_rows(out, [ROW])
    holder = _paused_writer(out, "rows", tmp_path)  # header and runs read, the row not written
    try:
        with pytest.raises(AmscError, match="still locked by another writer after 0.2 s"):
            sink.append_rows(out, [[*ROW[:2], "second", *ROW[3:]]], lock_timeout_sec=0.2)
    finally:
        release(tmp_path, "rows")
        assert holder.wait(timeout=30) == 0
    assert [r["config"] for r in parse_csv(out.read_text())] == ["sweep/0", "first"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["removed", "moved-away"])
def test_a_writer_that_locked_a_file_no_longer_at_its_path_starts_over(tmp_path, how):
    """The creator of a file whose first write failed removes it (or someone moves the file
    away): a writer that had opened it meanwhile must append to the file now at the path."""
    out, moved = tmp_path / "runs.csv", tmp_path / "runs-old.csv"
    if how == "moved-away":
        out.write_bytes(EXISTING)
    writer = _paused_writer(out, "opened", tmp_path)  # opened, not yet locked
    if how == "removed":
        out.unlink()
    else:
        out.rename(moved)  # still linked, under another name
        out.write_bytes(EXISTING)
    release(tmp_path, "opened")
    assert writer.wait(timeout=30) == 0
    first = (HEADER_LINE + "\n").encode() if how == "removed" else EXISTING
    assert out.read_bytes() == first + ROW_LINE.replace(b"sweep/0", b"first")
    if how == "moved-away":
        assert moved.read_bytes() == EXISTING


# ------------------------------------------------------------------------------ faults


EXISTING = b"timestamp,system,config,nodes,gpus,status,wall_time_sec," \
           b"throughput_tokens_per_sec,throughput_tokens_per_sec_per_gpu,mfu,tflops," \
           b"final_loss,steps,error\n2026-01-01T00:00:00Z,Aurora,old,1,1,pass,1.0,,,,,,,\n"


def _fail_os_call(monkeypatch, name: str, target: Path, err: int, partial: bool = False):
    """Make ``os.<name>`` fail with ``err`` on ``target`` (by path or by open fd).

    An ``open`` the kernel would refuse with ENOENT first (a missing file without
    ``O_CREAT``, or a missing folder) still gets ENOENT.
    """
    real = getattr(os, name)

    def hits(arg) -> bool:
        if isinstance(arg, int):
            try:
                return Path(os.readlink(f"/proc/self/fd/{arg}")) == target.resolve()
            except OSError:
                return False
        return Path(arg) == target

    def kernel_says_enoent_first(arg, *args) -> bool:
        if name != "open" or isinstance(arg, int) or os.path.exists(arg):
            return False
        return not (args[0] & os.O_CREAT and os.path.isdir(os.path.dirname(arg)))

    def fake(arg, *args, **kwargs):
        if hits(arg) and not kernel_says_enoent_first(arg, *args):
            if partial:  # the kernel took some bytes before the disk filled up
                real(arg, args[0][: max(1, len(args[0]) // 2)])
            raise OSError(err, os.strerror(err), None if isinstance(arg, int) else str(arg))
        return real(arg, *args, **kwargs)

    monkeypatch.setattr(sink.os, name, fake)


def _tree(root: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes())
            for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("fault,call,err,message", [
    # (message for an existing file, message for a new one)
    ("permission denied", "open", errno.EACCES,
     ("results.csv: not writable by you (root): owner root, group root, mode 0644; its mode "
      "allows it", "deeper: cannot create results.csv there: not writable by you (root): "
      "owner root, group root, mode 0755")),
    ("read-only file system", "open", errno.EROFS,
     ("cannot open results file: Read-only file system",
      "cannot create results file: Read-only file system")),
    ("disk full", "write", errno.ENOSPC,
     ("cannot write results file: No space left on device",) * 2),
    ("quota at fsync", "fsync", errno.EDQUOT,
     ("cannot write results file: Disk quota exceeded",) * 2),
])
@pytest.mark.parametrize("existing", [True, False], ids=["existing", "new"])
def test_append_fault_leaves_results_as_they_were(tmp_path, monkeypatch, fault, call, err,
                                                  message, existing):
    old_umask = os.umask(0o022)  # the modes the messages name, whatever the suite's umask
    try:
        _append_fault(tmp_path, monkeypatch, call, err, message, existing)
    finally:
        os.umask(old_umask)


def _append_fault(tmp_path, monkeypatch, call, err, message, existing):
    run = good_run(tmp_path / "run")
    out = tmp_path / "out"
    target = out / "deeper" / "results.csv"
    if existing:
        target.parent.mkdir(parents=True)
        target.write_bytes(EXISTING)
    before = _tree(tmp_path)
    _fail_os_call(monkeypatch, call, target, err, partial=call == "write")
    line = error_line(run_cli(run, "--config", "c", "--append", target))
    assert line.startswith(f"error: {out}/") and message[not existing] in line
    # Byte-identical when it existed; when new, no results file and no folder made
    # for it. Nothing else either: no lock file.
    assert _tree(tmp_path) == before


def test_append_target_is_a_directory(tmp_path):
    run = good_run(tmp_path / "run")
    for target in (tmp_path / "results.csv", tmp_path / "link.csv"):
        if target.name == "results.csv":
            target.mkdir()
        else:
            target.symlink_to(tmp_path / "results.csv", target_is_directory=True)
        line = error_line(run_cli(run, "--config", "c", "--append", target))
        assert line == f"error: {target}: is a directory; --append needs a CSV file path"


def test_append_target_is_a_fifo(tmp_path, no_hang):
    run = good_run(tmp_path / "run")
    os.mkfifo(tmp_path / "results.csv")
    line = error_line(run_cli(run, "--config", "c", "--append", tmp_path / "results.csv"))
    assert line == (f"error: {tmp_path / 'results.csv'}: not a regular file (a FIFO); "
                    "--append needs a CSV file path")


def test_append_under_a_file_is_a_clear_error(tmp_path):
    run = good_run(tmp_path / "run")
    (tmp_path / "plain").write_text("x")
    line = error_line(run_cli(run, "--config", "c", "--append", tmp_path / "plain" / "r.csv"))
    assert f"{tmp_path / 'plain'}: exists and is not a folder" in line
    assert (tmp_path / "plain").read_text() == "x"


def test_failed_first_write_removes_the_new_file_and_folder(tmp_path, monkeypatch):
    real_fsync = os.fsync

    def quota(fd):
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    monkeypatch.setattr(os, "fsync", quota)
    with pytest.raises(AmscError, match="cannot write results file: Disk quota exceeded"):
        sink.append_rows(tmp_path / "new" / "runs.csv", [ROW])
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert names_in(tmp_path) == []


def test_failed_write_keeps_an_empty_file_someone_else_made(tmp_path, monkeypatch):
    out = tmp_path / "runs.csv"
    out.touch(mode=0o660)  # set up by hand for the team: not this writer's to remove
    out.chmod(0o660)

    def io_error(fd):
        raise OSError(errno.EIO, "EIO")

    monkeypatch.setattr(os, "fsync", io_error)
    with pytest.raises(AmscError, match="cannot write results file: EIO; file left as it was"):
        sink.append_rows(out, [ROW])
    assert out.read_bytes() == b"" and mode_of(out) == 0o660


def test_symlink_to_a_missing_file_is_a_clear_error(tmp_path):
    link = tmp_path / "runs.csv"
    link.symlink_to(tmp_path / "gone.csv")
    with pytest.raises(AmscError, match=f"^{link}: a symlink to .*gone.csv, which does not exist"):
        sink.append_rows(link, [ROW])


# ------------------------------------------- every refusal by its exact text, byte for byte

BOM = b"\xef\xbb\xbf"
ROW_LINE = (",".join(ROW) + "\n").encode()
KEY_TEXT = "2026-08-11T17:11:17Z, Aurora, sweep/0, 1, 12"
DOUBLE_COUNT = ("; not appending a double count (pass --skip-existing to skip it, "
                "--allow-duplicate to add it anyway)")


def _refusal(out: Path, rows: list[list[str]] | None = None, **kwargs) -> str:
    with pytest.raises(AmscError) as e:
        sink.append_rows(out, [ROW] if rows is None else rows, **kwargs)
    return str(e.value)


def test_appends_keep_lf_endings_byte_for_byte(tmp_path):
    out = tmp_path / "runs.csv"
    sink.append_rows(out, [ROW])
    assert out.read_bytes() == (HEADER_LINE + "\n").encode() + ROW_LINE
    out.write_bytes(EXISTING)
    sink.append_rows(out, [ROW])
    assert out.read_bytes() == EXISTING + ROW_LINE


def test_a_file_holding_only_a_bom_is_a_new_file(tmp_path):
    out = tmp_path / "runs.csv"
    out.write_bytes(BOM)
    sink.append_rows(out, [ROW])
    assert out.read_bytes() == BOM + (HEADER_LINE + "\n").encode() + ROW_LINE
    sink.append_rows(out, [[*ROW[:2], "sweep/1", *ROW[3:]]])  # ... and a results file after
    assert [r["config"] for r in parse_csv(out.read_text("utf-8-sig"))] == ["sweep/0", "sweep/1"]


@pytest.mark.parametrize("content", [b"\n", b"\r\n", b" \t", BOM + b"\n", b"\n" + EXISTING])
def test_a_blank_first_line_is_refused(tmp_path, content):
    """Regression: a file of blank lines was taken as new, the header went after the
    blank line, and every later append refused the file."""
    out = tmp_path / "runs.csv"
    out.write_bytes(content)
    message = f"{out}: first line is empty; not a results file, refusing to append"
    assert _refusal(out) == message
    with pytest.raises(AmscError) as e:
        sink.check_append_target(out)
    assert str(e.value) == message
    assert out.read_bytes() == content


LONG_HEADER = ",".join(f"column_{i}" for i in range(30))
# This tool's header, as a refusal shows it under the file's.
OURS = ("  this tool's: timestamp,system,config,nodes,gpus,status,wall_time_sec,\n"
        "               throughput_tokens_per_sec,throughput_tokens_per_sec_per_gpu,mfu,\n"
        "               tflops,final_loss,steps,error")


@pytest.mark.parametrize("first,why", [
    (b"\xe9timestamp\n", "header is not UTF-8; refusing to append"),
    (b"x" * 200_000 + b"\n",
     "header is not CSV (field larger than field limit (131072)); refusing to append"),
    # the longest first line read whole, and one byte more
    (b"y" * ((1 << 20) - 1) + b"\n",
     "header is not CSV (field larger than field limit (131072)); refusing to append"),
    (b"y" * (1 << 20) + b"\n", "first line is longer than 1 MiB; not a results file, "
                              "refusing to append"),
    (b"X\n", "existing header differs from this tool's (lacks timestamp, system, config, "
              "nodes and 10 more; has X); refusing to append \u2014 write to a new file\n"
              "  the file's:  X\n" + OURS),
    (HEADER_LINE.encode() + b"X\n", "existing header differs from this tool's (lacks error; "
                                    "has errorX); refusing to append \u2014 write to a new "
                                    "file\n" + OURS.replace("this tool's:", "the file's: ")
                                    + "X\n" + OURS),
    (b'a,"b\n', "existing header differs from this tool's (lacks timestamp, system, config, "
                "nodes and 10 more; has a, b); refusing to append \u2014 write to a new file\n"
                "  the file's:  a,b\n" + OURS),
    # at most 16 names of the file's header
    (LONG_HEADER.encode() + b"\n", "existing header differs from this tool's (lacks "
                                   "timestamp, system, config, nodes and 10 more; has "
                                   "column_0, column_1, column_2, column_3 and 26 more); "
                                   "refusing to append \u2014 write to a new file\n"
                                   "  the file's:  column_0,column_1,column_2,column_3,"
                                   "column_4,column_5,column_6,\n"
                                   "               column_7,column_8,column_9,column_10,"
                                   "column_11,column_12,\n"
                                   "               column_13,column_14,column_15,... (30 "
                                   "columns)\n" + OURS),
    # a line that is no header is never echoed: its length only
    (b"h" * 1500 + b"\n", "existing header differs from this tool's (lacks timestamp, "
                          "system, config, nodes and 10 more; has <1,500 characters>); "
                          "refusing to append \u2014 write to a new file\n  the file's:  "
                          "<1,500 characters>\n" + OURS),
    # an environment's or a key file's secrets are no column names
    (b"HF_TOKEN=hf_AbCdEf0123456789xyz,PATH=/usr/bin\n",
     "existing header differs from this tool's (lacks timestamp, system, config, nodes and "
     "10 more; has <31 characters>, <13 characters>); refusing to append \u2014 write to a "
     "new file\n  the file's:  <31 characters>,<13 characters>\n" + OURS),
    # a spreadsheet's save, named by its cause
    ("\ufefftimestamp,system\n".encode("utf-16"),
     "is UTF-16 text (a spreadsheet's \"Unicode text\" export), not UTF-8 CSV; save it again "
     "as \"CSV UTF-8 (comma delimited)\"; refusing to append"),
    (HEADER_LINE.replace(",", ";").encode(),
     "has its columns separated by semicolons, not commas (a spreadsheet set to a language "
     "that writes decimal commas saves CSV that way); save it again with comma separators "
     "and decimal points; refusing to append"),
], ids=["not-utf8", "not-csv", "1MiB", "longer", "X", "header-X", "quoted", "long",
        "too-long-to-show", "secrets", "utf-16", "semicolons"])
def test_a_foreign_first_line_is_refused_by_its_exact_text(tmp_path, first, why):
    out = tmp_path / "runs.csv"
    out.write_bytes(first + EXISTING)
    assert _refusal(out) == f"{out}: {why}"
    assert out.read_bytes() == first + EXISTING


@pytest.mark.parametrize("which", ["header", "earlier-runs"])
def test_a_read_error_is_named_and_nothing_written(tmp_path, monkeypatch, which):
    out = tmp_path / "runs.csv"
    out.write_bytes(EXISTING + ROW_LINE)
    real = os.pread

    def failing(fd, size, offset):
        # the header is read from offset 0; a run found in the file, at its line's offset
        if (offset == 0) == (which == "header"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(fd, size, offset)

    monkeypatch.setattr(os, "pread", failing)
    assert _refusal(out) == f"{out}: cannot read results file: Input/output error"
    assert out.read_bytes() == EXISTING + ROW_LINE


def test_duplicates_are_refused_by_their_exact_text(tmp_path):
    out = tmp_path / "runs.csv"
    for skip in (False, True):
        assert _refusal(out, [ROW, ROW], skip_existing=skip) == (
            f"rows 1 and 2 of this export are the same run ({KEY_TEXT}); not appending a "
            "double count")
    assert not out.exists()
    sink.append_rows(out, [ROW])
    before = out.read_bytes()
    assert _refusal(out) == f"the run ({KEY_TEXT}) is already at line 2 of {out}{DOUBLE_COUNT}"
    assert out.read_bytes() == before


class _Clock:
    """A stand-in for the time module: sleeping moves the clock, nothing waits."""

    def __init__(self) -> None:
        self.now, self.sleeps = 1000.0, []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, sec: float) -> None:
        self.sleeps.append(sec)
        self.now += sec


def _lockf_fails(monkeypatch, err: int) -> None:
    """The results file's lock fails with ``err``."""
    def lockf(fd, op):
        raise OSError(err, os.strerror(err))

    own = types.SimpleNamespace(**{**vars(sink.fcntl), "lockf": lockf})
    monkeypatch.setattr(sink, "fcntl", own)


def test_the_lock_is_polled_5_ms_doubling_to_250_ms_for_the_default_60_s(tmp_path, monkeypatch):
    out = tmp_path / "runs.csv"
    out.write_bytes(EXISTING)
    clock = _Clock()
    monkeypatch.setattr(sink, "time", clock)
    _lockf_fails(monkeypatch, errno.EAGAIN)
    assert _refusal(out) == (f"{out}: still locked by another writer after 60 s; retry, or "
                             "raise --lock-timeout")
    assert clock.sleeps[:8] == [0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.25, 0.25]
    assert set(clock.sleeps[6:]) == {0.25}
    assert 60 <= sum(clock.sleeps) < 60.25  # the first poll past the deadline gives up
    # A timeout of 0: one try, no pause.
    clock.sleeps.clear()
    assert _refusal(out, lock_timeout_sec=0) == (
        f"{out}: still locked by another writer after 0 s; retry, or raise --lock-timeout")
    assert clock.sleeps == []
    assert out.read_bytes() == EXISTING


def test_a_lock_error_other_than_busy_is_named(tmp_path, monkeypatch):
    out = tmp_path / "runs.csv"
    out.write_bytes(EXISTING)
    _lockf_fails(monkeypatch, errno.ENOLCK)
    assert _refusal(out) == (f"{out}: cannot lock: No locks available (on Lustre, mount with "
                             "-o flock)")
    assert out.read_bytes() == EXISTING


def test_a_file_that_keeps_vanishing_is_given_up_after_100_tries(tmp_path, monkeypatch):
    out = tmp_path / "runs.csv"
    real, creates = os.open, []

    def flickering(path, flags, *args, **kwargs):
        if Path(path) != out:
            return real(path, flags, *args, **kwargs)
        if flags & os.O_EXCL:
            creates.append(path)
            raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST))
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))

    monkeypatch.setattr(sink.os, "open", flickering)
    assert _refusal(out) == (f"{out}: appeared and disappeared 100 times while opening it; "
                             "is another program removing it?")
    assert len(creates) == 100


def test_locking_a_directory_is_refused(tmp_path):
    with pytest.raises(AmscError) as e, sink.locked(tmp_path, 1):
        pass
    assert str(e.value) == f"{tmp_path}: is a directory; --append needs a CSV file path"


def test_the_pre_check_opens_the_file_for_writing(tmp_path, monkeypatch):
    """A file that can be read but not written is refused before any export work."""
    out = tmp_path / "runs.csv"
    out.write_bytes(EXISTING)
    real = os.open

    def read_only_fs(path, flags, *args, **kwargs):
        if Path(path) == out and flags & (os.O_RDWR | os.O_WRONLY):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(sink.os, "open", read_only_fs)
    with pytest.raises(AmscError) as e:
        sink.check_append_target(out)
    assert str(e.value) == f"{out}: cannot open results file: Read-only file system"


def test_create_permission_is_judged_by_effective_ids_for_write_and_search(tmp_path,
                                                                          monkeypatch):
    # Tests run as root, whom access() lets write anywhere: watch the question instead.
    asked = []

    def access(path, mode, *, effective_ids=False):
        asked.append((Path(path), mode, effective_ids))
        return False

    monkeypatch.setattr(sink.os, "access", access)
    with pytest.raises(AmscError) as e:
        check_can_create(tmp_path / "new" / "runs.csv")
    assert str(e.value).startswith(f"{tmp_path}: cannot create new there: not writable by you")
    # open() judges by the effective ids (Linux: os.access supports effective_ids)
    assert asked == [(tmp_path, os.W_OK | os.X_OK, True)]


def test_bytes_another_program_appended_meanwhile_are_kept(tmp_path, monkeypatch):
    """The file is open for appending: a program that ignores the lock (a shell's >>)
    and appends between our seek to the end and our write loses nothing."""
    out = tmp_path / "runs.csv"
    out.write_bytes(EXISTING)
    real = sink.write_all

    def someone_appends_first(fd, data):
        with open(out, "ab") as f:
            f.write(b"# by hand\n")
        real(fd, data)

    monkeypatch.setattr(sink, "write_all", someone_appends_first)
    sink.append_rows(out, [ROW])
    assert out.read_bytes() == EXISTING + b"# by hand\n" + ROW_LINE


# ------------------------------------------- a file changed under the append, not through the lock


def _replace_with_copy(out: Path) -> None:
    """What editors and ``sed -i`` do: a new file with the content, renamed over the old."""
    new = out.with_name(out.name + ".new")
    new.write_bytes(out.read_bytes())
    new.rename(out)


@pytest.mark.slow
@pytest.mark.parametrize("point", ["rows", "rows-synced"], ids=["before-write", "after-write"])
@pytest.mark.parametrize("change", ["replaced", "truncated", "removed"])
def test_a_file_changed_under_the_append_still_gets_the_row_once(tmp_path, point, change):
    """Replaced (the copy made before or after the row was written), truncated or removed by
    a program that ignores the lock: the row ends up once in the file at the path, whole."""
    out = tmp_path / "runs.csv"
    out.write_bytes(EXISTING)
    writer = _paused_writer(out, point, tmp_path)
    if change == "replaced":
        _replace_with_copy(out)
    elif change == "truncated":
        os.truncate(out, 0)
    else:
        out.unlink()
    release(tmp_path, point)
    assert writer.wait(timeout=30) == 0
    mine = ROW_LINE.replace(b"sweep/0", b"first")
    kept = EXISTING if change == "replaced" else (HEADER_LINE + "\n").encode()
    assert out.read_bytes() == kept + mine
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"{point}.go", f"{point}.reached",
                                                          "runs.csv"]


def test_a_file_that_keeps_changing_is_given_up_with_nothing_appended(tmp_path, monkeypatch):
    out = tmp_path / "runs.csv"
    out.write_bytes(EXISTING)
    real = sink.write_all

    def someone_replaces_it_first(fd, data):
        _replace_with_copy(out)  # a program that ignores the lock, every time
        real(fd, data)

    monkeypatch.setattr(sink, "write_all", someone_replaces_it_first)
    assert _refusal(out) == (f"{out}: replaced, truncated or removed 10 times during this "
                             "append by a program that does not take its lock; nothing appended")
    assert out.read_bytes() == EXISTING


# ------------------------------------------------------------------ paths that name no file


@pytest.mark.parametrize("path, message", [
    ("-", "--append -: rows go to stdout without --append; to append to a file named -, "
          "pass ./-"),
    ("{tmp}/x.csv/", "{tmp}/x.csv/: ends with /, so it names a folder; --append needs a CSV "
                     "file path"),
])
def test_a_path_that_names_no_file_is_refused(tmp_path, path, message):
    path = path.format(tmp=tmp_path)
    for result in (run_cli(A, "--config", "c", "--append", path), ):
        assert error_line(result) == "error: " + message.format(tmp=tmp_path)
    with pytest.raises(AmscError) as e:
        sink.append_rows(path, [ROW])
    assert str(e.value) == message.format(tmp=tmp_path)
    assert list(tmp_path.iterdir()) == [] and not Path("-").exists()


# ----------------------------------------------------------- what the file system refuses


def test_a_failed_cut_back_says_the_file_may_end_in_a_partial_line(tmp_path, monkeypatch):
    out = tmp_path / "runs.csv"
    out.write_bytes(EXISTING)

    def disk_full(fd, data):
        os.write(fd, data[:5])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def no_truncate(fd, size):
        raise OSError(errno.EPERM, os.strerror(errno.EPERM))

    monkeypatch.setattr(sink, "write_all", disk_full)
    monkeypatch.setattr(os, "ftruncate", no_truncate)
    assert _refusal(out) == (
        f"{out}: cannot write results file: No space left on device; cutting the file back "
        f"failed too (Operation not permitted): it may end in a partial line after byte "
        f"{len(EXISTING)}; check it with: ezpz-amsc check {out}")
    assert out.read_bytes() == EXISTING + ROW_LINE[:5]


def _chattr(flag: str, path: Path) -> bool:
    return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0


def test_an_append_only_file_takes_rows(tmp_path):
    """chattr +a: only O_APPEND writes are allowed, which is all an append needs."""
    out = tmp_path / "runs.csv"
    out.write_bytes(EXISTING)
    if not _chattr("+a", out):
        pytest.skip("chattr +a is not supported here (needs root and ext4-like file system)")
    try:
        r = run_cli(A, "--config", "c", "--append", out, "-q")
        assert (r.exit_code, r.stderr) == (0, "")
        assert [x["config"] for x in parse_csv(out.read_text())] == ["old", "c"]
    finally:
        _chattr("-a", out)


def test_an_immutable_file_is_named_as_such(tmp_path):
    out = tmp_path / "runs.csv"
    out.write_bytes(EXISTING)
    if not _chattr("+i", out):
        pytest.skip("chattr +i is not supported here")
    try:
        line = error_line(run_cli(A, "--config", "c", "--append", out))
    finally:
        _chattr("-i", out)
    assert line == (f"error: {out}: cannot open results file: operation not permitted (an "
                    "immutable file? see lsattr)")


def test_a_new_file_on_a_read_only_file_system_says_so(tmp_path, monkeypatch):
    real = os.statvfs

    class ReadOnly:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(sink.os, "access", lambda *a, **k: False)  # as access() says there
    monkeypatch.setattr(os, "statvfs", lambda p: ReadOnly() if Path(p) == tmp_path else real(p))
    with pytest.raises(AmscError) as e:
        check_can_create(tmp_path / "new" / "runs.csv")
    assert str(e.value) == f"{tmp_path}: cannot create new there: read-only file system"


# ------------------------------------------------------------- cells and lines past the cap


def test_a_field_past_the_csv_limit_blocks_no_append_and_check_names_its_line(tmp_path):
    """Regression: one field over 128 KiB made every later append fail with a traceback."""
    out = tmp_path / "runs.csv"
    huge = ",".join(["2026-01-01T00:00:00Z", "X" * 200_000, *ROW[2:]]) + "\n"
    longer = ",".join(["2026-01-02T00:00:00Z", "Y" * 300_000, *ROW[2:]]) + "\n"
    out.write_bytes(EXISTING + huge.encode() + longer.encode())
    sink.append_rows(out, [ROW])
    sink.append_rows(out, [[*ROW[:2], "sweep/1", *ROW[3:]]])
    assert out.read_bytes().endswith(ROW_LINE + ROW_LINE.replace(b"sweep/0", b"sweep/1"))
    assert "already at line 5" in _refusal(out)
    r = run_group("check", out, "-q")
    assert r.stderr.splitlines() == [
        f"{out}:3: field larger than field limit (131072); read on from the next line",
        f"{out}:4: line longer than 229,418 bytes; not read",
        f"error: {out}: 2 problems in 5 rows"]


SWARM = r"""
import os, sys, time
from ezpz_amsc.errors import AmscError
from ezpz_amsc.results.append import append_rows
target, go, i, bad = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "bad"
row = ["2026-08-11T17:11:17Z", "Aurora", f"sweep/{i}", "1", "12", "pass", "1.000"] + [""] * 7
while not os.path.exists(go):
    time.sleep(0.001)
try:
    append_rows(target, [row, row] if bad else [row], lock_timeout_sec=60)
except AmscError as e:
    sys.exit(3 if bad and "same run" in str(e) else 1)
"""


@pytest.mark.slow
def test_writers_that_fail_take_back_their_folders_without_failing_the_others(tmp_path):
    """Regression (9 of 163 valid appends failed): writers whose batch is refused made the
    new folders, and removed them while the others were creating the file in them."""
    target, go = tmp_path / "a" / "b" / "c" / "runs.csv", tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [(i % 2 == 0, subprocess.Popen(
        [sys.executable, "-c", SWARM, str(target), str(go), str(i),
         "bad" if i % 2 == 0 else "good"], env=env)) for i in range(16)]
    time.sleep(1)
    go.touch()
    codes = [(bad, p.wait(timeout=120)) for bad, p in procs]
    assert [c for bad, c in codes if not bad] == [0] * 8
    assert [c for bad, c in codes if bad] == [3] * 8
    rows = parse_csv(target.read_text())
    assert sorted(r["config"] for r in rows) == sorted(f"sweep/{i}" for i in range(1, 16, 2))


# ------------------------------------- finding a run: its timestamp cell, searched as bytes


def _oracle(data: bytes) -> dict[tuple[str, ...], tuple[int, int]]:
    """Each run's first (line, offset), as a reading of every record finds them."""
    import io

    from ezpz_amsc.results.rows import read_records

    found: dict[tuple[str, ...], tuple[int, int]] = {}
    for rec in read_records(io.BytesIO(data)):
        if rec.offset and rec.cells is not None and len(rec.cells) >= len(HEADER):
            found.setdefault(cells_key(rec.cells), (rec.line, rec.offset))
    return found


def _found(path: Path, keys, runs: sink.RunsInFile | None = None):
    """Each key's (line, offset) in ``path``, searched before and under the lock."""
    if runs is None:
        runs = sink.RunsInFile(path, keys)
        runs.search()
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        runs.locked(fd)
        return {k: (e.line, e.offset) for k in keys if (e := runs.find(k)) is not None}
    finally:
        os.close(fd)


def _row(stamp: str, config: str = "sweep/0", error: str = "") -> list[str]:
    return [stamp, "Aurora", config, "1", "12", "pass", "1.000", "", "", "", "", "", "10", error]


STAMPS = ["2026-08-11T17:11:17Z", "2026-08-11T17:11:18Z", "2026-08-12T00:00:00Z"]


@pytest.mark.parametrize("block", [5, 23, 64, 1 << 20])
@pytest.mark.parametrize("form", ["lf", "crlf", "cr", "quoted", "bom", "multi-line", "all-quoted"])
def test_a_run_is_found_at_its_first_line_in_any_form(tmp_path, monkeypatch, block, form):
    monkeypatch.setattr(sink, "_SEARCH_BYTES", block)
    nl = {"crlf": "\r\n", "cr": "\r"}.get(form, "\n")
    rows = [_row(STAMPS[0], "other"), _row(STAMPS[1], "x", f"at {STAMPS[0]} it failed"),
            _row(STAMPS[0]), _row(STAMPS[2], "y", "two\nlines" if form == "multi-line" else ""),
            _row(STAMPS[0]), _row(STAMPS[2], "z")]
    text = render_csv(rows, header=True, newline=nl)
    if form == "quoted":  # a writer that quotes every timestamp
        for s in STAMPS:
            text = text.replace(s, f'"{s}"')
    if form == "all-quoted":
        buf = __import__("io").StringIO()
        csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator=nl).writerows([HEADER, *rows])
        text = buf.getvalue()
    data = ("\ufeff" if form == "bom" else "").encode() + text.encode()
    out = tmp_path / "runs.csv"
    out.write_bytes(data)
    keys = [cells_key(_row(STAMPS[0])), cells_key(_row(STAMPS[2], "z")),
            cells_key(_row(STAMPS[1])), cells_key(_row(STAMPS[0], "nowhere"))]
    want = {k: v for k, v in _oracle(data).items() if k in keys}
    assert _found(out, keys) == want
    line = {cells_key(_row(STAMPS[0])): 4, cells_key(_row(STAMPS[2], "z")): 7}
    if form == "multi-line":
        line[cells_key(_row(STAMPS[2], "z"))] = 8  # the line numbers of check, not records
    assert {k: v[0] for k, v in want.items()} == line


@pytest.mark.parametrize("nl", ["\n", "\r\n", "\r"])
def test_every_block_size_finds_what_reading_every_record_finds(tmp_path, monkeypatch, nl):
    """Whatever the block size, a run starting at, before or after a block's edge (quoted
    or not, after any line end) is found at its first line, and nowhere else."""
    rows = [_row(STAMPS[1], "x"), _row(STAMPS[0]), _row(STAMPS[2], "z"), _row(STAMPS[0], "q"),
            _row(STAMPS[2], "y")]
    text = render_csv(rows, header=True, newline=nl)
    text = text.replace(f"{nl}{STAMPS[0]}", f'{nl}"{STAMPS[0]}"')  # quoted, as some write
    data = text.encode()
    out = tmp_path / "runs.csv"
    out.write_bytes(data)
    keys = [cells_key(_row(STAMPS[0])), cells_key(_row(STAMPS[2], "z")),
            cells_key(_row(STAMPS[0], "q"))]
    want = {k: v for k, v in _oracle(data).items() if k in keys}
    assert len(want) == 3
    for block in range(1, len(data) + 2):
        monkeypatch.setattr(sink, "_SEARCH_BYTES", block)
        assert _found(out, keys) == want, block


@pytest.mark.parametrize("nl", ["\n", "\r\n"])
def test_a_bare_conflict_marker_line_is_refused_by_the_append(tmp_path, nl):
    """A conflict opened by ``<<<<<<<`` alone on its line (a hand-made one, no branch
    named): the append refuses the file, as check names it."""
    out = tmp_path / "runs.csv"
    out.write_bytes(render_csv([_row(STAMPS[1])], header=True, newline=nl).encode()
                    + f"<<<<<<<{nl}".encode()
                    + render_csv([_row(STAMPS[2])], header=False, newline=nl).encode())
    runs = sink.RunsInFile(out, [cells_key(_row(STAMPS[0]))])
    runs.search()
    fd = os.open(out, os.O_RDWR | os.O_APPEND)
    try:
        runs.locked(fd)
        refusal = runs.conflict()
    finally:
        os.close(fd)
    assert refusal is not None and "holds git merge conflict markers (from line 3)" in str(
        refusal)


def test_a_timestamp_elsewhere_in_a_line_is_no_run(tmp_path):
    out = tmp_path / "runs.csv"
    stamp = STAMPS[0]
    out.write_text(render_csv([_row(STAMPS[1], error=f"{stamp},Aurora,sweep/0,1,12"),
                               [f" {stamp}", *_row(stamp)[1:]],
                               [f"x{stamp}", *_row(stamp)[1:]],
                               _row(stamp)[:5]], header=True))  # a short line: no row
    assert _found(out, [cells_key(_row(stamp))]) == {}


@settings(max_examples=150)
@given(st.lists(st.tuples(st.sampled_from(STAMPS), st.sampled_from(["a", "b", "a,b", 'q"q']),
                          st.sampled_from(["", "x", "l1\nl2", "cr\rcr"]),
                          st.sampled_from(["\n", "\r\n", "\r"])), max_size=12),
       st.sampled_from([3, 17, 40, 1 << 20]), st.booleans())
def test_the_search_finds_what_reading_every_record_finds(scratch, lines, block, grow):
    parts = [",".join(HEADER).encode() + b"\n"]
    for stamp, config, error, nl in lines:
        parts.append(render_csv([_row(stamp, config, error)], header=False, newline=nl).encode())
    data = b"".join(parts)
    out = scratch / "prop.csv"
    keys = [cells_key(_row(s, c)) for s in STAMPS for c in ["a", "b", "a,b", 'q"q']]
    old = sink._SEARCH_BYTES
    sink._SEARCH_BYTES = block
    try:
        if grow:  # half of it searched before the lock, the rest appended meanwhile
            half = len(parts) // 2
            out.write_bytes(b"".join(parts[:half]))
            runs = sink.RunsInFile(out, keys)
            runs.search()
            with open(out, "ab") as f:
                f.write(b"".join(parts[half:]))
            got = _found(out, keys, runs)
            assert not runs.searched_whole_under_lock
        else:
            out.write_bytes(data)
            got = _found(out, keys)
    finally:
        sink._SEARCH_BYTES = old
    assert got == {k: v for k, v in _oracle(data).items() if k in keys}


def test_a_quoted_timestamp_after_other_text_on_its_line_is_no_run(tmp_path):
    """A quote opens a line's first cell only at the start of the line: ``x"STAMP",...``
    is one cell ``x"STAMP"`` to check and to csv, not the run read from the quote on."""
    out = tmp_path / "runs.csv"
    stamp = STAMPS[0]
    rest = ",".join(_row(stamp)[1:])
    out.write_bytes(render_csv([_row(STAMPS[1])], header=True).encode()
                    + f'x"{stamp}",{rest}\n'.encode() + f'xy"{stamp}",{rest}\n'.encode())
    assert _found(out, [cells_key(_row(stamp))]) == {}


def test_counting_lines_past_the_files_end_is_an_error_not_a_wait(tmp_path):
    """A file cut shorter while its lines are counted (a line number for a message) is an
    error; counting on would never reach the offset."""
    out = tmp_path / "runs.csv"
    out.write_bytes(b"a\nb\nc\n")
    fd = os.open(out, os.O_RDONLY)
    try:
        search = sink._Search(fd, [])
        assert search.line_of(4) == 3  # "c" starts line 3
        with pytest.raises(OSError, match="the file got shorter while it was read"):
            search.line_of(50)
    finally:
        os.close(fd)


def _searched(out: Path, key) -> sink.RunsInFile:
    runs = sink.RunsInFile(out, [key])
    runs.search()
    return runs


def _rows_file(out: Path, count: int, extra: list[list[str]] = ()) -> None:
    out.write_text(render_csv([_row(f"2025-01-01T00:{i // 60:02d}:{i % 60:02d}Z", "sweep/9")
                               for i in range(count)] + list(extra), header=True))


@pytest.mark.parametrize("change, whole", [
    ("appended", False), ("replaced", True), ("shorter", True), ("tail-edited", True),
    ("untouched", False), ("others-appended", False)])
def test_under_the_lock_only_what_was_appended_is_searched(tmp_path, monkeypatch, change, whole):
    out = tmp_path / "runs.csv"
    _rows_file(out, 200)
    key = cells_key(_row(STAMPS[0]))
    runs = _searched(out, key)
    data = out.read_bytes()
    row = render_csv([_row(STAMPS[0])], header=False).encode()
    if change == "appended":
        out.write_bytes(data + row)
    elif change == "others-appended":
        out.write_bytes(data + row.replace(b"sweep/0", b"sweep/1") * 3)
    elif change == "replaced":  # a copy renamed over it (git, an editor)
        (tmp_path / "new").write_bytes(data + row)
        os.replace(tmp_path / "new", out)
    elif change == "shorter":  # cut at a line end
        out.write_bytes(data[:data.index(b"\n", len(data) // 2) + 1] + row)
    elif change == "tail-edited":  # in place, the same inode: the last row rewritten
        with open(out, "r+b") as f:
            f.seek(len(data) - len(row))
            f.write(row)
    read = []
    real = os.pread

    def counted(fd, n, at):
        data = real(fd, n, at)
        read.append(len(data))
        return data

    monkeypatch.setattr(os, "pread", counted)
    got = _found(out, [key], runs)
    assert runs.searched_whole_under_lock is whole
    if change in ("untouched", "others-appended"):
        assert got == {}
        # the tail compared, the bytes appended, the tail kept: no more
        assert sum(read) <= 2 * 4096 + 3 * len(row)
    else:
        # found among the rows appended meanwhile (two writers of one run at once): the
        # lines before it are counted, under the lock, for the message's line number
        now = out.read_bytes()
        at = now.index(STAMPS[0].encode())
        assert got == {key: (now.count(b"\n", 0, at) + 1, at)}
        assert got[key][0] == {"appended": 202, "replaced": 202, "shorter": 101,
                               "tail-edited": 201}[change]


@pytest.mark.parametrize("edit", ["another run", "unreadable"])
def test_a_line_edited_in_place_between_search_and_lock_is_read_again(tmp_path, edit):
    """A run found before the lock whose line was changed in place (the same size, far from
    the end) is confirmed under the lock, and the whole file searched again: the line now
    holds another run, or no longer reads as a record (a quote opened and never closed)."""
    out = tmp_path / "runs.csv"
    _rows_file(out, 10, [_row(STAMPS[0])])
    with open(out, "ab") as f:
        f.write(render_csv([_row(STAMPS[1], "pad" + "x" * 5000)], header=False).encode())
    key = cells_key(_row(STAMPS[0]))
    runs = _searched(out, key)
    data = out.read_bytes()
    stamp = STAMPS[0].encode()
    old, new = (b"sweep/0", b"sweep/1") if edit == "another run" else (stamp, b'"' + stamp[1:])
    at = data.index(old)
    out.write_bytes(data[:at] + new + data[at + len(old):])
    assert _found(out, [key], runs) == {}
    assert runs.searched_whole_under_lock


def test_git_rewriting_a_middle_row_and_adding_one_is_seen_by_the_next_append(tmp_path):
    """Nothing of an earlier append is kept: a file rewritten between two appends (even into
    the same inode number) is searched as it is now."""
    out = tmp_path / "runs.csv"
    assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    rows = parse_csv(out.read_text())
    _rows_file(out, 50)
    text = out.read_text().splitlines(keepends=True)
    stamp = rows[0]["timestamp"]
    text[20] = render_csv([[stamp, *list(rows[0].values())[1:]]], header=False)
    out.write_text("".join(text) + render_csv([_row(STAMPS[2])], header=False))
    r = run_cli(A, "--config", "a", "--append", out)
    assert r.exit_code == 1
    assert f"is already at line 21 of {out}" in error_line(r)


def test_an_append_keeps_nothing_outside_the_results_file(tmp_path, monkeypatch):
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    out = tmp_path / "r" / "runs.csv"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    for config in ("a", "b", "a"):
        assert run_cli(A, "--config", config, "--append", out, "--skip-existing").exit_code == 0
    assert [r["config"] for r in parse_csv(out.read_text())] == ["a", "b"]
    assert names_in(home) == [] and names_in(cache) == []
    assert names_in(out.parent) == ["runs.csv"]


def test_a_file_holding_git_conflict_markers_is_refused(tmp_path):
    out = tmp_path / "runs.csv"
    ours, theirs = (render_csv([_row(s)], header=False) for s in STAMPS[1:])
    content = (HEADER_LINE + "\n" + render_csv([_row(STAMPS[0], "old")], header=False)
               + "<<<<<<< HEAD\n" + ours + "=======\n" + theirs + ">>>>>>> other\n").encode()
    out.write_bytes(content)
    message = (f"{out}: holds git merge conflict markers (from line 3); "
               "refusing to append until the merge is resolved: keep the rows of both sides "
               "(not the common ancestor's lines between ||||||| and =======, if any) and "
               "delete the marker lines; a results repository with merge=union in "
               "ezpz-amsc init) merges appended rows without conflicts; then: ezpz-amsc check "
               f"{out}")
    message = message.replace("merge=union in ezpz", "merge=union in .gitattributes (ezpz")
    assert _refusal(out, allow_duplicate=True) == message
    assert out.read_bytes() == content
    r = run_cli(A, "--config", "c", "--append", out)
    assert error_line(r) == f"error: {message}"
    out.write_bytes(content.replace(b"<<<<<<< HEAD", b"<<<<<<<<"))  # no marker: 8 of them
    out.write_bytes(out.read_bytes().replace(b">>>>>>> other", b">>>>>>>x"))
    assert sink.append_rows(out, [_row(STAMPS[0], "new")]).written == [0]


def test_append_to_a_proc_file_is_refused_before_reading_it(tmp_path, monkeypatch):
    secret = "hf_" + "Zq9" * 12
    monkeypatch.setenv("HF_TOKEN", secret)
    r = run_cli(A, "--config", "c", "--append", "/proc/self/environ")
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == ("error: /proc/self/environ: not a regular file (a /proc or /sys file); "
                        "--append needs a CSV file path\n")
    with pytest.raises(AmscError) as e:
        sink.append_rows("/proc/self/environ", [ROW])
    assert secret not in str(e.value) and "a /proc or /sys file" in str(e.value)


def test_a_header_differs_error_never_echoes_a_secret(tmp_path):
    out = tmp_path / "env.csv"
    secret = "ghp_" + "a1B2" * 9
    out.write_text(f"HOME=/root,GITHUB_TOKEN={secret},x\nmore,{secret}\n")
    message = _refusal(out)
    assert secret not in message and secret[:12] not in message
    assert len(message) < 1000


@pytest.mark.parametrize("block", [5, 64, 1 << 20])
@pytest.mark.parametrize("nl", ["\n", "\r\n", "\r"])
def test_a_conflict_marker_is_found_past_lookalikes_in_any_line_ending(tmp_path, monkeypatch,
                                                                       block, nl):
    monkeypatch.setattr(sink, "_SEARCH_BYTES", block)
    out = tmp_path / "runs.csv"
    rows = [_row(STAMPS[0], "a", "a < b << c"), _row(STAMPS[1], "<<<<<<<")]
    text = render_csv(rows, header=True, newline=nl) + f"<<<<<<<<{nl}x<<<<<<< y{nl}"
    marker = f"<<<<<<< HEAD{nl}" + render_csv([_row(STAMPS[2])], header=False, newline=nl)
    out.write_text(text + marker + f">>>>>>> b{nl}" + render_csv([_row(STAMPS[2], "z")] * 3,
                                                                header=False, newline=nl))
    runs = _searched(out, cells_key(_row(STAMPS[2])))
    assert _found(out, [cells_key(_row(STAMPS[2]))], runs) == {
        cells_key(_row(STAMPS[2])): (7, len(text) + len(f"<<<<<<< HEAD{nl}"))}
    refusal = runs.conflict()
    assert refusal is not None and "(from line 6)" in str(refusal)
    out.write_text(text + render_csv([_row(STAMPS[2], "z")] * 3, header=False, newline=nl))
    assert _searched(out, cells_key(_row(STAMPS[2]))).conflict() is None
