"""Filesystem faults, resource bounds and impossible numbers (issue 6).

Each case ends in a clear ``error:`` line or a row plus a ``note:``, never a
traceback, and a results file that was there before is byte-identical after a
failure. Faults that need privileges (unreadable files: CI runs as root;
read-only folders; a full disk) are simulated by making the one system call
for the one path fail with the errno the kernel would give.
"""

from __future__ import annotations

import builtins
import errno
import io
import json
import os
import signal
import tracemalloc
from pathlib import Path

import pytest
from conftest import (
    error_line,
    fail_for,
    one_row,
    parse_csv,
    run_cli,
    step,
    write_jsonl,
    write_run_info,
)

from ezpz_amsc import sink
from ezpz_amsc.export import ExportOptions, export_run
from ezpz_amsc.row import dashboard_problems, format_timestamp
from ezpz_amsc.steps import MAX_LINE_BYTES


@pytest.fixture
def no_hang():
    """Fail, instead of blocking the suite, if the code under test waits on a FIFO."""

    def boom(signum, frame):
        raise TimeoutError("blocked for 10 s (opened a FIFO?)")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def good_run(folder: Path, n: int = 4, **dist) -> Path:
    write_jsonl(folder / "metrics-0.jsonl", [step(i, dt=0.5, tps=1000.0 + i, loss=2.0)
                                             for i in range(1, n + 1)])
    write_run_info(folder, **dist)
    return folder


def notes_of(result) -> list[str]:
    return [ln for ln in result.stderr.splitlines() if ln.startswith("note: ")]


# ------------------------------------------------------------- metrics file faults


def _break(path: Path, fault: str) -> None:
    """Put something at ``path`` that is not a readable regular file."""
    if fault == "directory":
        path.mkdir()
    elif fault == "dangling-symlink":
        path.symlink_to(path.parent / "gone.jsonl")
    elif fault == "symlink-loop":
        path.symlink_to(path)
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("fault", ["directory", "dangling-symlink", "symlink-loop", "fifo"])
def test_broken_rank0_file_is_passed_over_for_the_next_rank(tmp_path, fault, no_hang):
    run = tmp_path / "run"
    write_run_info(run)
    write_jsonl(run / "metrics-1.jsonl", [step(i, rank=1, dt=0.5, tps=1000.0 + i, loss=2.0)
                                          for i in range(1, 5)])
    _break(run / "metrics-0.jsonl", fault)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert row["steps"] == "4"
    assert "note: rank 0 logged no step; used rank 1" in notes_of(r)


@pytest.mark.parametrize("fault", ["directory", "dangling-symlink", "symlink-loop", "fifo"])
def test_only_metrics_file_broken_is_a_clear_error(tmp_path, fault, no_hang):
    run = tmp_path / "run"
    write_run_info(run)
    bad = run / "metrics.jsonl"
    _break(bad, fault)
    for extra in ("run_info.json", "x.jsonl"):  # FIFOs/loops also where others are sniffed
        p = run / "sub" / extra
        p.parent.mkdir(exist_ok=True)
        if fault == "fifo":
            os.mkfifo(p)
        elif fault == "symlink-loop":
            p.symlink_to(p)
    assert "no metrics found" in error_line(run_cli(run, "--config", "c"))


def test_symlinked_folder_loop_is_not_followed(tmp_path, no_hang):
    run = good_run(tmp_path / "run")
    (run / "train").mkdir()
    (run / "train" / "up").symlink_to(run, target_is_directory=True)
    assert one_row(run_cli(run, "--config", "c"))["steps"] == "4"


def test_unreadable_metrics_file(tmp_path, monkeypatch):
    run = good_run(tmp_path / "run")
    fail_for(monkeypatch, run / "metrics-0.jsonl", errno.EACCES)
    line = error_line(run_cli(run, "--config", "c"))
    assert "metrics-0.jsonl: cannot read metrics file: Permission denied" in line


def test_read_error_midway_through_metrics(tmp_path, monkeypatch):
    run = good_run(tmp_path / "run")
    target = run / "metrics-0.jsonl"
    real_open = builtins.open

    class Flaky(io.BufferedReader):
        def readline(self, *a):
            if self.tell() > 0:
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return super().readline(*a)

    def fake(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file) == target:
            return Flaky(io.FileIO(file, "rb"))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake)
    line = error_line(run_cli(run, "--config", "c"))
    assert "cannot read metrics file: Input/output error" in line


def test_unreadable_run_info_falls_back_to_the_report_with_a_note(tmp_path, monkeypatch):
    run = good_run(tmp_path / "run")
    (run / "report-train.md").write_text(
        "### Distributed\n\n- **MACHINE**: Aurora\n- **world_size**: 24\n"
        "- **GPUS_PER_NODE**: 12\n")
    fail_for(monkeypatch, run / "run_info.json", errno.EACCES)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["system"], row["nodes"], row["gpus"]) == ("Aurora", "2", "24")
    assert "note: skipped run_info.json: Permission denied" in notes_of(r)


# ------------------------------------------------------------- --append faults

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
    run = good_run(tmp_path / "run")
    out = tmp_path / "out"
    target = out / "deeper" / "results.csv"
    if existing:
        target.parent.mkdir(parents=True)
        target.write_bytes(EXISTING)
    before = _tree(tmp_path)
    _fail_os_call(monkeypatch, call, target, err, partial=call == "write")
    assert message[not existing] in error_line(run_cli(run, "--config", "c", "--append", target))
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
        assert "is a directory; --append needs a CSV file path" in line


def test_append_target_is_a_fifo(tmp_path, no_hang):
    run = good_run(tmp_path / "run")
    os.mkfifo(tmp_path / "results.csv")
    line = error_line(run_cli(run, "--config", "c", "--append", tmp_path / "results.csv"))
    assert "not a regular file" in line


def test_append_under_a_file_is_a_clear_error(tmp_path):
    run = good_run(tmp_path / "run")
    (tmp_path / "plain").write_text("x")
    line = error_line(run_cli(run, "--config", "c", "--append", tmp_path / "plain" / "r.csv"))
    assert f"{tmp_path / 'plain'}: exists and is not a folder" in line
    assert (tmp_path / "plain").read_text() == "x"


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


# ------------------------------------------------------------- resource bounds


def test_long_line_skipped_with_a_note_small_limit(tmp_path):
    run = tmp_path / "run"
    recs = [step(1, dt=0.5, loss=3.0),
            '{"metrics": {"train/iter": 2, "pad": "' + "x" * 50_000 + '"}}',
            step(3, dt=0.5, loss=2.0)]
    write_jsonl(run / "metrics-0.jsonl", recs)
    write_run_info(run)
    res = export_run(run, ExportOptions(config="c", max_line_bytes=4096))
    assert res.row["steps"] == "2" and res.row["final_loss"] == "2.000000"
    assert "skipped 1 line over 4096 bytes unread" in res.notes


@pytest.mark.parametrize("kind", ["step", "garbage"])
def test_50_mb_line_under_the_limit_is_read(tmp_path, kind):
    run = tmp_path / "run"
    big = step(2, dt=0.5, loss=2.5)
    big["metrics"]["pad"] = "x" * (50 << 20)
    line = json.dumps(big) if kind == "step" else "{" + "x" * (50 << 20)
    write_jsonl(run / "metrics-0.jsonl", [step(1, dt=0.5, loss=3.0), line,
                                          step(3, dt=0.5, loss=2.0)])
    write_run_info(run)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == ("3" if kind == "step" else "2")
    assert ("note: skipped 1 unparsable line" in notes_of(r)) == (kind == "garbage")


def _write_long_line_run(run: Path, line_bytes: int) -> None:
    """Step 1, then one line of ``line_bytes`` NULs (a sparse hole: no disk used), step 2."""
    path = run / "metrics-0.jsonl"
    write_jsonl(path, [step(1, dt=0.5, loss=3.0)])
    with open(path, "r+b") as f:
        f.seek(0, os.SEEK_END)
        f.truncate(f.tell() + line_bytes)
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + json.dumps(step(2, dt=0.5, loss=2.0)).encode() + b"\n")
    write_run_info(run)


def _peak_bytes(run: Path, opts: ExportOptions):
    tracemalloc.start()
    try:
        res = export_run(run, opts)
        return res, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_long_line_memory_is_bounded_by_the_limit_not_the_line(tmp_path):
    limit = 1 << 20
    _write_long_line_run(tmp_path / "run", 64 << 20)
    res, peak = _peak_bytes(tmp_path / "run", ExportOptions(config="c", max_line_bytes=limit))
    assert res.row["steps"] == "2" and "skipped 1 line over 1 MiB unread" in res.notes
    assert peak < 2 * limit + (8 << 20), peak  # the whole line would be 64 MiB


def test_line_over_the_real_64_mib_default_is_skipped_without_holding_it(tmp_path):
    """The default limit end to end, on a 200 MiB line."""
    _write_long_line_run(tmp_path / "run", 200 << 20)
    res, peak = _peak_bytes(tmp_path / "run", ExportOptions(config="c"))
    assert res.row["steps"] == "2" and res.row["final_loss"] == "2.000000"
    assert "skipped 1 line over 64 MiB unread" in res.notes
    # readline(limit) builds one limit-sized chunk (briefly twice that while joining its
    # buffers); reading the line whole would hold all 200 MiB.
    assert peak < 2 * MAX_LINE_BYTES + (16 << 20), peak


def test_run_directory_with_100000_files(tmp_path):
    """A 100,000-rank run: every per-rank file is named by the walk, only rank 0 is read."""
    run = tmp_path / "run"
    good_run(run, GPUS_PER_NODE="12", world_size="100000", WORLD_SIZE_IN_USE="100000",
             NUM_NODES="8334")
    for r in range(1, 100_000):
        os.close(os.open(run / f"metrics-{r}.jsonl", os.O_CREAT | os.O_WRONLY, 0o644))
    res = export_run(run, ExportOptions(config="c"))
    assert (res.row["gpus"], res.row["nodes"], res.row["steps"]) == ("100000", "8334", "4")
    assert res.details.files_read == [str(run / "metrics-0.jsonl")]
    assert res.details.rank_files_not_read == 99_999


# ------------------------------------------------------------- impossible numbers


@pytest.mark.parametrize("dts,wall,dropped", [
    ([0.5, -1.0, 0.5, 0.5], "1.500", "1 impossible value"),
    ([0.5, 0.0, 0.5, 0.0], "1.000", "2 impossible values"),
])
def test_nonpositive_step_times_dropped_with_a_note(tmp_path, dts, wall, dropped):
    run = tmp_path / "run"
    write_jsonl(run / "metrics-0.jsonl", [step(i, dt=d) for i, d in enumerate(dts, 1)])
    write_run_info(run)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["wall_time_sec"] == wall
    assert any(f"dropped {dropped} (" in n and f"dt {dropped[0]})" in n
               for n in notes_of(r)), r.stderr


def test_all_step_times_nonpositive_is_an_error_naming_the_flag(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "metrics-0.jsonl", [step(i, dt=d) for i, d in enumerate([0, -2, 0], 1)])
    write_run_info(run)
    line = error_line(run_cli(run, "--config", "c"))
    assert "all 3 step times logged are zero or negative" in line
    assert "pass --wall-time-sec SECONDS" in line
    row = one_row(run_cli(run, "--config", "c", "--wall-time-sec", "9"))
    assert row["wall_time_sec"] == "9.000"


@pytest.mark.parametrize("name,column", [
    ("tps", "throughput_tokens_per_sec"), ("tps_per_gpu", "throughput_tokens_per_sec_per_gpu"),
    ("mfu", "mfu"), ("tflops", "tflops"),
])
def test_negative_rates_dropped_with_a_note(tmp_path, name, column):
    run = tmp_path / "run"
    vals = [-5.0, 40.0, -1.0, 44.0, 42.0]
    write_jsonl(run / "metrics-0.jsonl",
                [step(i, dt=0.5, **{name: v}) for i, v in enumerate(vals, 1)])
    write_run_info(run)
    r = run_cli(run, "--config", "c", "--warmup", "0")
    assert one_row(r)[column] == "42.000"  # median of 40, 44, 42
    assert any("dropped 2 impossible values" in n and f"{name} 2" in n
               for n in notes_of(r)), r.stderr


def test_only_negative_throughput_leaves_the_cell_empty_not_zero(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "metrics-0.jsonl", [step(i, dt=0.5, tps=-3.0) for i in range(1, 4)])
    write_run_info(run)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert row["throughput_tokens_per_sec"] == row["throughput_tokens_per_sec_per_gpu"] == ""


@pytest.mark.parametrize("dist,missing", [
    ({"world_size": "0", "WORLD_SIZE_IN_USE": "-2", "NGPUS": "0"}, "gpus"),
    ({"world_size": "-8", "WORLD_SIZE_IN_USE": None, "NGPUS": None}, "gpus"),
    ({"GPUS_PER_NODE": "-4", "NUM_NODES": "0"}, "nodes"),
    ({"GPUS_PER_NODE": "four", "NUM_NODES": "-1"}, "nodes"),
])
def test_counts_below_one_from_provenance_are_refused(tmp_path, dist, missing):
    run = good_run(tmp_path / "run", **dist)
    line = error_line(run_cli(run, "--config", "c"))
    assert f"cannot tell {missing} of this run" in line and f"pass --{missing} N" in line


def test_ignored_count_is_noted_when_another_source_answers(tmp_path):
    run = good_run(tmp_path / "run", world_size="-8", WORLD_SIZE_IN_USE="2")
    r = run_cli(run, "--config", "c")
    assert one_row(r)["gpus"] == "2"
    assert "note: ignored world_size='-8' from run_info.json: not a usable count" in notes_of(r)


@pytest.mark.parametrize("flag,value", [("--nodes", "0"), ("--gpus", "-1"), ("--gpus", "0")])
def test_counts_below_one_from_flags_are_refused(tmp_path, flag, value):
    run = good_run(tmp_path / "run")
    result = run_cli(run, "--config", "c", flag, value)
    assert f"invalid value for '{flag}': must be 1 or more, got {value}" in error_line(result)
    assert result.exit_code == 2


HUGE = "1" + "0" * 400  # hypothesis found this one: OverflowError in tps / gpus


@pytest.mark.parametrize("key,flag", [("world_size", "--gpus"), ("WORLD_SIZE_IN_USE", "--gpus"),
                                      ("NUM_NODES", "--nodes"), ("GPUS_PER_NODE", "--nodes")])
@pytest.mark.parametrize("value", [HUGE, "1000001"])
def test_absurd_count_from_provenance_is_an_error_naming_the_flag(tmp_path, key, flag, value):
    dist = {key: value}
    if key == "NUM_NODES":
        dist["GPUS_PER_NODE"] = "0"  # so that NUM_NODES is the rule that reads it
    run = good_run(tmp_path / "run", **dist)
    line = error_line(run_cli(run, "--config", "c"))
    shown = value if len(value) <= 20 else "100000000000... (401 digits)"
    assert line == (f"error: {key}={shown} from run_info.json is not a plausible count "
                    f"(more than 1,000,000); pass {flag} N")


def test_largest_plausible_count_is_accepted(tmp_path):
    run = good_run(tmp_path / "run", world_size="1000000", WORLD_SIZE_IN_USE="1000000",
                   GPUS_PER_NODE="12", NUM_NODES=None)
    row = one_row(run_cli(run, "--config", "c"))
    assert (row["gpus"], row["nodes"]) == ("1000000", "83334")
    assert row["throughput_tokens_per_sec_per_gpu"] == "0.001"  # 1002.0 / 1e6, kept non-zero


@pytest.mark.parametrize("flag", ["--gpus", "--nodes"])
@pytest.mark.parametrize("value,shown", [(HUGE, "100000000000... (401 digits)"),
                                         ("1000001", "1000001")])
def test_absurd_count_from_flags_is_refused(tmp_path, flag, value, shown):
    run = good_run(tmp_path / "run")
    result = run_cli(run, "--config", "c", flag, value)
    assert error_line(result) == (f"error: invalid value for '{flag}': {shown} is not a "
                                  "plausible count (more than 1,000,000)")
    assert result.exit_code == 2


@pytest.mark.parametrize("extra", [[], ["--nodes", "2"]])
def test_gpus_not_a_multiple_of_gpus_per_node_is_allowed_but_noted(tmp_path, extra):
    run = good_run(tmp_path / "run", GPUS_PER_NODE="4", world_size="8", NUM_NODES="2")
    r = run_cli(run, "--config", "c", "--gpus", "6", *extra)
    row = one_row(r)
    assert (row["gpus"], row["nodes"]) == ("6", "2")
    assert "note: --gpus 6 is not a multiple of GPUS_PER_NODE 4" in notes_of(r)


# ------------------------------------------------------------- fuzzer regressions


@pytest.mark.parametrize(("first_ts", "why"), [
    (6.77679762335328e16, "6.77679762335328e+16 is later than now"),
    (253402300800.0, "253402300800.0 is later than now"),
    (-1e11, "-100000000000.0 is before 2015"),
    (1e300, "1e+300 is later than now"),
])
def test_timestamp_beyond_year_9999_or_before_1970_is_ignored(tmp_path, first_ts, why):
    """Regression (fuzzer): a huge timestamp crashed time.gmtime; past 9999 broke the row."""
    run = tmp_path / "run"
    recs = [step(i, dt=1.0) for i in range(3)]
    recs[0]["timestamp"] = first_ts
    write_jsonl(run / "metrics-0.jsonl", recs)
    write_run_info(run)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["timestamp"] == format_timestamp(recs[1]["timestamp"])
    (note,) = [n for n in notes_of(r) if "timestamp" in n]
    assert note.startswith(f"note: step 0's timestamp {why}")
    assert note.endswith("the row's timestamp is step 1's (2026-11-29T22:06:41Z); "
                         "pass --timestamp to set it")


def test_only_out_of_range_timestamps_ask_for_the_flag(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "metrics-0.jsonl",
                [{**step(i, dt=1.0), "timestamp": 1e17} for i in range(3)])
    write_run_info(run)
    assert "pass --timestamp" in error_line(run_cli(run, "--config", "c"))


def test_step_times_near_float_max_do_not_warn_or_print_inf(tmp_path, recwarn):
    run = tmp_path / "run"
    write_jsonl(run / "metrics-0.jsonl",
                [step(i, dt=1.7e308, tps=1.7e308) for i in range(1, 4)])
    write_run_info(run)
    line = error_line(run_cli(run, "--config", "c", "--reducer", "mean"))
    assert "pass --wall-time-sec SECONDS" in line
    r = run_cli(run, "--config", "c", "--reducer", "mean", "--wall-time-sec", "5")
    row = one_row(r)
    assert row["throughput_tokens_per_sec"] == "" and dashboard_problems(row) == []
    assert "note: tps reduces to a value too large for a float; left empty" in notes_of(r)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("machine", ["Aur\nora", "\ud800", "a\x00b", "x\u2028y"])
def test_unprintable_machine_is_ignored_and_system_asked_for(tmp_path, machine):
    """Regression (fuzzer): a line break split the row; a lone surrogate crashed the write."""
    run = good_run(tmp_path / "run", MACHINE=machine, HOSTNAME=None)
    assert "pass --system NAME" in error_line(run_cli(run, "--config", "c"))
    assert one_row(run_cli(run, "--config", "c", "--system", "Aurora"))["system"] == "Aurora"
    # With a HOSTNAME recorded, the bad MACHINE is treated as missing: get_machine(HOSTNAME).
    run = good_run(tmp_path / "run2", MACHINE=machine, HOSTNAME="x4102c5s0b0n0")
    result = run_cli(run, "--config", "c")
    assert one_row(result)["system"] == "Aurora"
    assert "ignored MACHINE=" in result.stderr


@pytest.mark.parametrize("flag", ["--config", "--system", "--error"])
@pytest.mark.parametrize("value", ["l1\nl2", "\udcff", "a\tb", "x\u2028"])
def test_unprintable_flag_text_is_refused(tmp_path, flag, value):
    run = good_run(tmp_path / "run")
    args = ["--config", "c", flag, value] if flag != "--config" else [flag, value]
    line = error_line(run_cli(run, *args))
    assert f"{flag} must be a single line of printable text" in line


@pytest.mark.parametrize("text", ["2026-8-1T1:1:1Z", "1000-1-1T0:0:0Z", "2026-08-11T23:59:61Z",
                                  "0001-01-01T00:00:00Z", "2026-08-11T17:11:17"])
def test_timestamp_flag_must_be_exactly_the_row_format(tmp_path, text):
    """Regression (fuzzer): strptime took non-padded fields and leap seconds verbatim."""
    run = good_run(tmp_path / "run")
    result = run_cli(run, "--config", "c", "--timestamp", text)
    line = error_line(result)
    assert (f"invalid value for '--timestamp': must look like 2026-08-11T17:11:17Z, "
            f"got {text!r}") in line
    assert result.exit_code == 2
    ok = one_row(run_cli(run, "--config", "c", "--timestamp", "2019-12-31T23:59:59Z"))
    assert ok["timestamp"] == "2019-12-31T23:59:59Z"
