"""Results files shared by many jobs: locking, duplicates, batches, --check (issue 4)."""

from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time

import pytest
from conftest import REPO, RUNS, error_line, parse_csv, run_cli

from ezpz_amsc.row import HEADER

A = RUNS / "fsdp_tp-2rank"
B = RUNS / "fsdp_tp-1rank-launch"
C = RUNS / "minimal-1rank"
HEADER_LINE = ",".join(HEADER)


def _load_bench():
    spec = importlib.util.spec_from_file_location(
        "concurrent_append", REPO / "benchmarks" / "concurrent_append.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_32_processes_append_at_once(tmp_path):
    ok, report = _load_bench().run(32, tmp_path)
    assert ok, report


def _hold_lock(results, ready):
    """Another process holding the results file's lock (and creating the file if missing)."""
    code = (
        "import sys, time\n"
        "from ezpz_amsc.sink import locked\n"
        "with locked(sys.argv[1], 5):\n"
        "    open(sys.argv[2], 'w').close()\n"
        "    time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.Popen([sys.executable, "-c", code, str(results), str(ready)], env=env)
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    return p


def test_lock_timeout_names_the_results_file(tmp_path):
    out = tmp_path / "results" / "runs.csv"
    assert run_cli(B, "--config", "b", "--append", out).exit_code == 0
    before = out.read_bytes()
    holder = _hold_lock(out, tmp_path / "ready")
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
    holder = _hold_lock(out, tmp_path / "ready")
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert out.read_bytes() == b""
    r = run_cli(A, "--config", "c", "--append", out, "--lock-timeout", "5")
    assert r.exit_code == 0, r.stderr
    assert out.read_text().count("timestamp,system") == 1
    assert [x["config"] for x in parse_csv(out.read_text())] == ["c"]


def test_file_without_trailing_newline_gets_one(tmp_path):
    out = tmp_path / "runs.csv"
    run_cli(A, "--config", "a", "--append", out)
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


def test_duplicate_run_refused_with_its_line_number(tmp_path):
    out = tmp_path / "runs.csv"
    run_cli(A, "--config", "a", "--append", out)
    run_cli(B, "--config", "b", "--append", out)
    before = out.read_bytes()
    line = error_line(run_cli(B, "--config", "b", "--append", out))
    assert f"is already at line 3 of {out}" in line
    assert "--allow-duplicate" in line
    assert out.read_bytes() == before


def test_allow_duplicate(tmp_path):
    out = tmp_path / "runs.csv"
    run_cli(A, "--config", "a", "--append", out)
    r = run_cli(A, "--config", "a", "--append", out, "--allow-duplicate")
    assert r.exit_code == 0
    assert len(parse_csv(out.read_text())) == 2


def test_same_run_under_another_config_is_not_a_duplicate(tmp_path):
    out = tmp_path / "runs.csv"
    run_cli(A, "--config", "a", "--append", out)
    assert run_cli(A, "--config", "a2", "--append", out).exit_code == 0


def test_batch_rows_in_order_one_header(tmp_path):
    r = run_cli(C, A, B, "--config", "c")
    assert r.exit_code == 0, r.stderr
    rows = parse_csv(r.stdout)
    assert [x["steps"] for x in rows] == ["34", "30", "30"]
    assert [x["gpus"] for x in rows] == ["1", "2", "1"]
    assert r.stdout.count("timestamp,system") == 1


def test_batch_append_single_write(tmp_path):
    out = tmp_path / "runs.csv"
    assert run_cli(A, B, "--config", "c", "--append", out).exit_code == 0
    assert len(parse_csv(out.read_text())) == 2


def test_batch_with_a_failure_writes_nothing(tmp_path):
    out = tmp_path / "runs.csv"
    bad1, bad2 = tmp_path / "missing1", tmp_path / "missing2"
    r = run_cli(A, bad1, B, bad2, "--config", "c", "--append", out)
    assert r.exit_code == 1
    errs = r.stderr.splitlines()
    assert errs[0].startswith(f"error: {bad1}: ") and errs[1].startswith(f"error: {bad2}: ")
    assert "2 runs failed; nothing written" in errs[2]
    assert not out.exists()
    assert "Traceback" not in r.stderr


def test_batch_keep_going_writes_good_rows_and_fails(tmp_path):
    out = tmp_path / "runs.csv"
    bad = tmp_path / "missing"
    r = run_cli(A, bad, B, "--config", "c", "--append", out, "--keep-going")
    assert r.exit_code == 1
    assert f"error: {bad}: " in r.stderr
    assert [x["steps"] for x in parse_csv(out.read_text())] == ["30", "30"]


def test_batch_same_dir_twice_is_a_duplicate(tmp_path):
    out = tmp_path / "runs.csv"
    line = error_line(run_cli(A, A, "--config", "c", "--append", out))
    assert "rows 1 and 2 of this export are the same run" in line


# --check -----------------------------------------------------------------


def _write(tmp_path, *lines, name="runs.csv"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


GOOD_ROW = "2026-11-29T22:18:43Z,localhost,c,1,2,pass,4.034,3930.349,1965.174,,0.014,7.989204,30,"


def test_check_clean_file(tmp_path):
    p = _write(tmp_path, HEADER_LINE, GOOD_ROW)
    r = run_cli("--check", p)
    assert r.exit_code == 0
    assert "1 row, all readable" in r.stdout


def test_check_file_written_by_append_is_clean(tmp_path):
    out = tmp_path / "runs.csv"
    run_cli(A, B, C, "--config", "c", "--append", out)
    assert run_cli("--check", out).exit_code == 0


@pytest.mark.parametrize("bad_row,problem", [
    (GOOD_ROW.replace(",1,2,", ",one,2,"), "nodes 'one' is not an integer"),
    (GOOD_ROW.replace(",1,2,", ",1,2.5,"), "gpus '2.5' is not an integer"),
    (GOOD_ROW.replace(",4.034,", ",,"), "wall_time_sec is empty"),
    (GOOD_ROW.replace(",4.034,", ",fast,"), "wall_time_sec 'fast' is not a number"),
    (GOOD_ROW.replace("3930.349", "n/a"), "throughput_tokens_per_sec 'n/a' is not a number"),
    (GOOD_ROW.replace(",pass,", ",ok,"), "status 'ok' is not pass or fail"),
    (GOOD_ROW.replace("2026-11-29T22:18:43Z", "29/11/2026"), "timestamp '29/11/2026'"),
    (GOOD_ROW + ",extra", "15 cells, header has 14"),
    (GOOD_ROW.replace(",1,2,", ",0,2,"), "nodes '0' is below 1"),
    (GOOD_ROW.replace(",1,2,", ",1,0,"), "gpus '0' is below 1"),
    (GOOD_ROW.replace(",0.014,", ",inf,"), "tflops 'inf' is not finite"),
])
def test_check_reports_bad_lines_by_number(tmp_path, bad_row, problem):
    p = _write(tmp_path, HEADER_LINE, GOOD_ROW.replace(",c,", ",other,"), bad_row)
    r = run_cli("--check", p)
    assert r.exit_code == 1
    assert f"{p}:3: {problem}" in r.stderr
    assert f"{p}:2:" not in r.stderr
    assert r.stderr.splitlines()[-1].startswith("error: ")


def test_check_reads_a_header_without_the_optional_columns(tmp_path):
    # An older results file: no mfu, tflops or error column. Its rows are read
    # as they are; a column the header lacks is not a cell to complain about.
    header = ",".join(c for c in HEADER if c not in ("mfu", "tflops", "error"))
    p = _write(tmp_path, header, "2026-11-29T22:18:43Z,localhost,c,1,2,pass,4.034,3930.349,"
               "1965.174,7.989204,30")
    r = run_cli("--check", p, "-q")  # -q: no notes on who else may append
    assert r.stderr == (f"{p}:1: header differs from this tool's (order or columns)\n"
                        f"error: {p}: 1 problem in 1 row\n")
    assert r.exit_code == 1 and r.stdout == ""


def test_check_duplicate_rows(tmp_path):
    p = _write(tmp_path, HEADER_LINE, GOOD_ROW, GOOD_ROW)
    r = run_cli("--check", p)
    assert f"{p}:3: same run as line 2" in r.stderr and r.exit_code == 1


def test_check_missing_required_column(tmp_path):
    p = _write(tmp_path, "timestamp,system,config", "x,y,z")
    line = error_line(run_cli("--check", p))
    assert "lacks required columns nodes, gpus, status, wall_time_sec" in line


def test_check_takes_no_run_dir(tmp_path):
    line = error_line(run_cli(A, "--check", tmp_path / "x.csv"))
    assert "--check takes no RUN_DIR" in line
