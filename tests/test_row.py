"""Stage 5, the row (row.py and the column rules of export.py): status, error and wall
time resolved, numbers formatted, a failed run's row, cells as CSV."""

from __future__ import annotations

import math
import statistics

import pytest
from helpers import (
    LAUNCH,
    RUNS,
    error_line,
    expected_row,
    launch,
    launch_records,
    one_row,
    run_cli,
    set_metric,
    step,
    write_jsonl,
    write_run,
    write_run_info,
)

from ezpz_amsc.row import fmt

GOOD = RUNS / "fsdp_tp-2rank"
LAUNCH_ROW = expected_row(LAUNCH)


# -------------------------------------------------------------------- status and error


def test_status_and_error_columns(sunspot):
    row = one_row(run_cli(sunspot, "--config", "c", "--status", "fail", "--error", "NCCL timeout"))
    assert (row["status"], row["error"]) == ("fail", "NCCL timeout")
    assert row["throughput_tokens_per_sec"] == "34686.400"


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


# --------------------------------------------------------------------------- wall time


def test_wall_time_flag_wins_and_is_noted(sunspot):
    r = run_cli(sunspot, "--config", "c", "--wall-time-sec", "812.5")
    assert one_row(r)["wall_time_sec"] == "812.500"
    assert "summed step time is" in r.stderr


def test_logging_gap_does_not_touch_the_number(tmp_path):
    run = write_run(tmp_path / "run", [step(i, dt=0.5, tps=1000.0, loss=1.0)
                                        for i in range(10, 301, 10)])
    row = one_row(run_cli(run, "--config", "c"))
    assert row["wall_time_sec"] == "15.000"  # 30 logged steps x 0.5 s, not scaled to ~300
    assert row["steps"] == "30"


# ----------------------------------------------------------------------------- numbers


def test_tiny_positive_value_is_not_published_as_zero(tmp_path):
    run = launch(tmp_path)
    set_metric(run, "train/tflops", lambda i, v: v * 1e-4)
    tflops = [r["metrics"]["train/tflops"] * 1e-4 for r in launch_records()[1:]]
    want = statistics.median(tflops)
    row = one_row(run_cli(run, "--config", "c"))
    assert row["tflops"] == f"{want:.{2 - math.floor(math.log10(want))}f}"
    assert float(row["tflops"]) > 0 and abs(float(row["tflops"]) / want - 1) < 0.01


@pytest.mark.parametrize(("value", "decimals", "cell"), [
    (0.0004999, 3, "0.000500"), (1.234e-5, 3, "0.0000123"), (-1.234e-5, 3, "-0.0000123"),
    (1e-300, 3, "1.00e-300"), (0.0, 3, "0.000"), (-0.0, 3, "0.000"), (0.0005, 3, "0.001"),
    (1.5e-7, 6, "0.000000150"), (7.871283531, 6, "7.871284"),
])
def test_fmt_keeps_non_zero_values_non_zero(value, decimals, cell):
    assert fmt(value, decimals) == cell


# ------------------------------------------------------------------------------- cells


def test_row_cells_survive_commas_and_quotes(tmp_path):
    r = run_cli(GOOD, "--config", 'a,b "c"', "--status", "fail", "--error", "x, y")
    row = one_row(r)
    assert (row["config"], row["error"]) == ('a,b "c"', "x, y")
