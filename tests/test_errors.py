"""SPEC §2.7: every user-caused failure is one ``error:`` line, non-zero, no traceback."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest
from conftest import RUNS, error_line, fail_for, one_row, run_cli, step, write_jsonl, write_run_info

GOOD = RUNS / "fsdp_tp-2rank"


@pytest.mark.parametrize("args,fragment", [
    ([GOOD], "missing option '--config'. Pass the benchmark label"),
    ([GOOD, "--config", ""], "invalid value for '--config': must not be empty"),
    ([GOOD, "--config", "   "], "invalid value for '--config': must not be empty"),
    ([GOOD, "--config", "c", "--reducer", "p99"],
     "invalid value for '--reducer': 'p99' is not one of 'median', 'mean',"),
    ([GOOD, "--config", "c", "--warmup", "-1"], "invalid value for '--warmup': must be 0 or more"),
    ([GOOD, "--config", "c", "--warmup", "x"], "'x' is not a valid integer"),
    ([GOOD, "--config", "c", "--status", "ok"], "'ok' is not one of 'pass', 'fail'"),
    ([GOOD, "--config", "c", "--nodes", "0"],
     "invalid value for '--nodes': must be 1 or more, got 0"),
    ([GOOD, "--config", "c", "--gpus", "-3"],
     "invalid value for '--gpus': must be 1 or more, got -3"),
    ([GOOD, "--config", "c", "--wall-time-sec", "-5"],
     "invalid value for '--wall-time-sec': must be a positive"),
    ([GOOD, "--config", "c", "--wall-time-sec", "nan"],
     "invalid value for '--wall-time-sec': must be a positive"),
    ([GOOD, "--config", "c", "--timestamp", "yesterday"],
     "invalid value for '--timestamp': must look like"),
    ([GOOD, "--config", "a\nb"], "--config must be a single line"),
    ([GOOD, "--config", "c", "--bogus"], "no such option"),
    ([RUNS / "does-not-exist", "--config", "c"], "no such directory"),
    ([GOOD / "run_info.json", "--config", "c"], "not a directory"),
])
def test_usage_and_path_errors(args, fragment):
    line = error_line(run_cli(*args))
    assert fragment in line


def test_no_metrics_says_what_was_looked_for(tmp_path):
    run = tmp_path / "r"
    write_run_info(run)
    line = error_line(run_cli(run, "--config", "c"))
    assert "no metrics found (looked for metrics-<rank>.jsonl, metrics.jsonl" in line
    assert "pass --status fail" in line


def test_metrics_without_steps_is_an_error_when_pass(tmp_path):
    run = tmp_path / "r"
    write_run_info(run)
    write_jsonl(run / "metrics-0.jsonl", [{"timestamp": 1.0, "rank": 0,
                                          "metrics": {"precision/x": "bf16"}}])
    line = error_line(run_cli(run, "--config", "c"))
    assert "no step records" in line


def test_failed_run_without_steps_still_gives_a_row(tmp_path):
    run = tmp_path / "r"
    write_run_info(run, MACHINE="Aurora", NUM_NODES="8", GPUS_PER_NODE="12",
                   WORLD_SIZE_IN_USE="96", world_size="96")
    write_jsonl(run / "metrics-0.jsonl", [])
    r = run_cli(run, "--config", "c", "--status", "fail", "--error", "OOM in init",
                "--wall-time-sec", "61", "--timestamp", "2026-08-11T17:11:17Z")
    row = one_row(r)
    assert row == {
        "timestamp": "2026-08-11T17:11:17Z", "system": "Aurora", "config": "c", "nodes": "8",
        "gpus": "96", "status": "fail", "wall_time_sec": "61.000",
        "throughput_tokens_per_sec": "", "throughput_tokens_per_sec_per_gpu": "", "mfu": "",
        "tflops": "", "final_loss": "", "steps": "", "error": "OOM in init",
    }


def test_failed_run_without_steps_names_the_flags_it_needs(tmp_path):
    run = tmp_path / "r"
    write_run_info(run)
    line = error_line(run_cli(run, "--config", "c", "--status", "fail"))
    assert "no step was logged" in line
    assert line.endswith("pass --timestamp YYYY-MM-DDTHH:MM:SSZ --wall-time-sec SECONDS")


def test_unreadable_metrics_file(tmp_path, monkeypatch):
    run = tmp_path / "r"
    write_run_info(run)
    write_jsonl(run / "metrics-0.jsonl", [step(1, dt=1.0)])
    fail_for(monkeypatch, run / "metrics-0.jsonl", errno.EACCES)
    line = error_line(run_cli(run, "--config", "c"))
    assert "metrics-0.jsonl: cannot read metrics file: Permission denied" in line


def test_metrics_in_two_folders_is_refused(tmp_path):
    for sub in ("a", "b"):
        write_run_info(tmp_path / sub)
        write_jsonl(tmp_path / sub / "metrics-0.jsonl", [step(1, dt=1.0)])
    line = error_line(run_cli(tmp_path, "--config", "c"))
    # each in a subfolder of its own: a folder of runs, exported as a batch
    assert line == (f"error: {tmp_path}: a folder of 2 runs (a, b); pass one of them, or "
                    f"{tmp_path}/*/ to export each (one row per run)")


@pytest.mark.parametrize("layout", [("", "b"), ("a/x", "a/y")])
def test_metrics_in_two_folders_of_one_run_is_refused(tmp_path, layout):
    # Not one run per subfolder (metrics at the top too, or two in one subfolder): DIR/*/
    # would not export them, so the only advice is to pass a single run.
    for sub in layout:
        write_run_info(tmp_path / sub)
        write_jsonl(tmp_path / sub / "metrics-0.jsonl", [step(1, dt=1.0)])
    line = error_line(run_cli(tmp_path, "--config", "c"))
    assert "metrics files in 2 folders" in line
    assert line.endswith("; pass the directory of a single run")


def test_module_entry_and_console_script_print_one_error_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(RUNS.parents[1])}
    for cmd in ([sys.executable, "-m", "ezpz_amsc"],):
        p = subprocess.run([*cmd, str(tmp_path), "--config", "c"], capture_output=True,
                           text=True, env=env)
        assert p.returncode == 1
        assert p.stdout == ""
        assert p.stderr.splitlines() == [p.stderr.strip()]
        assert p.stderr.startswith("error: ") and "no metrics found" in p.stderr
        ok = subprocess.run([*cmd, str(GOOD), "--config", "c"], capture_output=True,
                            text=True, env=env)
        assert ok.returncode == 0 and ok.stdout.count("\n") == 2


def test_row_cells_survive_commas_and_quotes(tmp_path):
    r = run_cli(GOOD, "--config", 'a,b "c"', "--status", "fail", "--error", "x, y")
    row = one_row(r)
    assert (row["config"], row["error"]) == ('a,b "c"', "x, y")


def test_cli_reducer_help_lists_the_pipeline_reducers():
    from ezpz_amsc.cli import REDUCER_NAMES
    from ezpz_amsc.reduce import REDUCERS

    assert REDUCER_NAMES == REDUCERS
