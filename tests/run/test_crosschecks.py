"""Cross-checks before a row is published (run/crosschecks.py): one section per rule.

Every case starts from a real fixture run (copied into tmp_path) and reshapes
it the way real runs go wrong: retried and resumed jobs, odd clocks, files
named by local rank, diverged losses. Each asserts the exact outcome: the
cells (csv-parsed), the note, or the one ``error:`` line and the exit code.

Nodes from ranks per node are placement (test_placement.py); coverage
arithmetic is reduce.py's (test_reduce.py).
"""

from __future__ import annotations

import json
import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import (
    EXPECTED,
    FIXTURE_NAMES,
    LAUNCH,
    MFU_NOTE,
    NO_THROUGHPUT_NOTE,
    PPN_6,
    RUNS,
    aurora_run,
    copy_run,
    edit_dist,
    error_line,
    expected_row,
    gap_estimate,
    is_step,
    launch,
    launch_records,
    notes_of,
    on_h100,
    one_row,
    read_records,
    retried_launch,
    rewrite,
    run_cli,
    set_metric,
    step,
    write_jsonl,
    write_run,
    write_run_info,
)

from ezpz_amsc.results.schema import HEADER, format_timestamp
from ezpz_amsc.run.crosschecks import clock_problem, duration

LAUNCH_ROW = expected_row(LAUNCH)


# ---------------------------------------------------------------- the words of the notes


@pytest.mark.parametrize(("sec", "text"), [
    (0.25, "0.25 s"), (119.4, "119 s"), (120.0, "2 min"), (7199.0, "120 min"),
    (7200.0, "2.0 h"), (3 * 86400.0 - 360, "71.9 h"), (3 * 86400.0, "3 days"),
    # the unit edges, and values whose rounding moves if a divisor is off by one
    (3 * 86400.0 - 1, "72.0 h"), (259000.0, "71.9 h"), (259056.0, "72.0 h"),
    (3.5 * 86400, "4 days"), (4.5 * 86400, "4 days"),  # format rounds half to even
])
def test_duration(sec, text):
    assert duration(sec) == text


NOW = 1_800_000_000.0  # 2027-01-15


@pytest.mark.parametrize(("ts", "why"), [
    (NOW * 1e3, f"{NOW * 1e3!r} looks like milliseconds since 1970, not Unix seconds"),
    (NOW * 1e6, f"{NOW * 1e6!r} looks like microseconds since 1970, not Unix seconds"),
    (NOW * 1e9, f"{NOW * 1e9!r} looks like nanoseconds since 1970, not Unix seconds"),
    (12.5, "12.5 (1970-01-01T00:00:12Z) is before 2015 (a clock counting from boot, like "
           "time.monotonic?)"),
    (-1.0, "-1.0 is before 2015 (a clock counting from boot, like time.monotonic?)"),
    (NOW + 601, "1800000601.0 (2027-01-15T08:10:01Z) is later than now (a skewed clock?)"),
    (253402300799.0, "253402300799.0 (9999-12-31T23:59:59Z) is later than now (a skewed "
                     "clock?)"),
    (253402300800.0, "253402300800.0 is later than now (a skewed clock?)"),
    (0.0, "0.0 (1970-01-01T00:00:00Z) is before 2015 (a clock counting from boot, like "
          "time.monotonic?)"),
    # each scale's range edges: 2015 and now + 600 s, in ms, us and ns
    *[(edge * scale, f"{edge * scale!r} looks like {unit} since 1970, not Unix seconds")
      for scale, unit in ((1e3, "milliseconds"), (1e6, "microseconds"), (1e9, "nanoseconds"))
      for edge in (1420070400.0, NOW + 600.0)],  # written out: ids must not move with them
])
def test_clock_problem(ts, why):
    assert clock_problem(ts, NOW) == why


# ---------------------------------------------------------------- the shipped runs: no false alarm


def test_shipped_fixture_ratios_are_inside_the_thresholds():
    """The thresholds are chosen from these runs: sum(dt) over steps 2..n / time span."""
    from ezpz_amsc.run import crosschecks as checks
    from ezpz_amsc.run.reduce import GAP_FACTOR, STEP_TIME_UNDER_SPAN_MIN

    for name in FIXTURE_NAMES:
        folder = RUNS / name
        path = folder / ("metrics.jsonl" if (folder / "metrics.jsonl").exists()
                         else "metrics-0.jsonl")
        recs = [r for r in read_records(path) if is_step(r) and r.get("rank", 0) == 0]
        dt = [r["metrics"].get("train/dt", r["metrics"].get("dt")) for r in recs]
        ts = [r["timestamp"] for r in recs]
        ratio = sum(dt[1:]) / (ts[-1] - ts[0])
        assert 0.75 <= ratio <= 0.85, (name, ratio)
        assert STEP_TIME_UNDER_SPAN_MIN < ratio < checks.STEP_TIME_OVER_SPAN_MAX
        gaps = np.diff(ts)
        assert gaps.max() <= 2.5 * np.median(gaps) < GAP_FACTOR * np.median(gaps)


# ---------------------------------------------------------------- gpus vs throughput


def test_allocation_ngpus_disagreeing_with_logged_ratio_is_refused(tmp_path):
    run = aurora_run(tmp_path, None, WORLD_SIZE_IN_USE=None, world_size=None)
    # Logged tps / tps_per_gpu says 24 ranks ran; NGPUS 48 is the allocation.
    r = run_cli(run, "--config", "c")
    assert error_line(r) == (
        "error: gpus 48 = NGPUS (the allocation; no world size recorded) disagrees with the "
        "logged throughput: train/tps / train/tps_per_gpu = 24; pass --gpus 24 (or --gpus 48 "
        "if the per-GPU figure is what is wrong)")
    assert r.exit_code == 1
    row = one_row(run_cli(run, "--config", "c", "--gpus", "24"))
    assert (row["gpus"], row["nodes"]) == ("24", "2")


def test_world_size_disagreeing_with_logged_ratio_is_refused(tmp_path):
    run = aurora_run(tmp_path, PPN_6, WORLD_SIZE_IN_USE="12", world_size="12")
    line = error_line(run_cli(run, "--config", "c"))
    assert line.startswith("error: gpus 12 = max(WORLD_SIZE_IN_USE 12, world_size 12) disagrees")
    assert line.endswith("train/tps / train/tps_per_gpu = 24; pass --gpus 24 (or --gpus 12 if "
                         "the per-GPU figure is what is wrong)")


def test_explicit_gpus_stands_with_a_note(tmp_path):
    run = aurora_run(tmp_path, PPN_6, WORLD_SIZE_IN_USE=None, world_size=None)
    r = run_cli(run, "--config", "c", "--gpus", "48", "--nodes", "4")
    row = one_row(r)
    assert (row["gpus"], row["nodes"]) == ("48", "4")
    assert ("--gpus 48 differs from the 24 ranks the logged throughput implies "
            "(train/tps / train/tps_per_gpu = 24); kept --gpus 48") in notes_of(r)


def test_allocation_ngpus_confirmed_by_logged_ratio_is_silent(tmp_path):
    run = copy_run("fsdp_tp-2rank", tmp_path)
    edit_dist(run, WORLD_SIZE_IN_USE=None, world_size=None, NGPUS="2")
    r = run_cli(run, "--config", "test/cfg")
    assert list(one_row(r).values()) == EXPECTED["fsdp_tp-2rank"].split(",")
    assert notes_of(r) == [MFU_NOTE]


def test_allocation_ngpus_that_nothing_checks_is_noted(tmp_path):
    run = copy_run("diffusion-1rank", tmp_path)  # logs no throughput at all
    edit_dist(run, WORLD_SIZE_IN_USE=None, world_size=None, NGPUS="1")
    r = run_cli(run, "--config", "test/cfg")
    assert list(one_row(r).values()) == EXPECTED["diffusion-1rank"].split(",")
    assert notes_of(r) == [
        "gpus 1 is the allocation's NGPUS: no world size was recorded and no per-GPU "
        "throughput was logged to check it; pass --gpus N if fewer ranks ran",
        NO_THROUGHPUT_NOTE, MFU_NOTE]


def test_ratio_that_is_not_a_whole_rank_count_is_noted(tmp_path):
    run = launch(tmp_path)

    def odd(rec):
        if "train/tps" in rec["metrics"]:
            rec["metrics"]["train/tps"] = rec["metrics"]["train/tps_per_gpu"] * 1.5
        return rec

    rewrite(run / "metrics-0.jsonl", odd)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["gpus"] == "1"
    assert ("logged train/tps / train/tps_per_gpu is 1.5, not a whole number of ranks; "
            "gpus 1 not checked against it") in notes_of(r)


def _throughput_run(folder: Path, key: str, tps: float, tpg: float) -> Path:
    return write_run(folder, [step(i, dt=0.5, loss=2.0, **{key: tps, "tps_per_gpu": tpg})
                              for i in range(1, 5)])


@pytest.mark.parametrize(("tps", "tpg", "ratio"), [
    (100.0, 0.0, "inf"), (0.5, 0.0, "inf"),  # a per-GPU 0 beside a global rate
    (0.0, 0.5, "0"),  # a global 0 beside a per-GPU rate
])
def test_a_zero_beside_a_rate_is_noted(tmp_path, tps, tpg, ratio):
    r = run_cli(_throughput_run(tmp_path, "tps", tps, tpg), "--config", "c")
    row = one_row(r)
    assert (row["gpus"], row["throughput_tokens_per_sec"],
            row["throughput_tokens_per_sec_per_gpu"]) == ("1", f"{tps:.3f}", f"{tpg:.3f}")
    assert notes_of(r) == [f"logged train/tps / train/tps_per_gpu is {ratio}, not a whole "
                           "number of ranks; gpus 1 not checked against it"]


def test_zero_over_zero_throughput_checks_nothing(tmp_path):
    r = run_cli(_throughput_run(tmp_path, "tps", 0.0, 0.0), "--config", "c")
    row = one_row(r)
    assert (row["gpus"], row["throughput_tokens_per_sec"],
            row["throughput_tokens_per_sec_per_gpu"]) == ("1", "0.000", "0.000")
    assert notes_of(r) == []


@pytest.mark.parametrize(("key", "tps", "tpg"), [
    ("tps", 1.0, 0.25),  # rates below 1 are still rates
    ("tokens_per_sec", 400.0, 100.0),  # the other global key, named in the error
])
def test_ratio_check_names_the_keys_it_read(tmp_path, key, tps, tpg):
    r = run_cli(_throughput_run(tmp_path, key, tps, tpg), "--config", "c")
    assert error_line(r) == (
        f"error: gpus 1 = max(WORLD_SIZE_IN_USE 1, world_size 1) disagrees with the logged "
        f"throughput: train/{key} / train/tps_per_gpu = 4; pass --gpus 4 (or --gpus 1 if the "
        "per-GPU figure is what is wrong)")
    assert r.exit_code == 1


# ---------------------------------------------------------------- step time vs the clock


def _over_span(summed: str, ratio: str, span: str) -> str:
    return (f"error: step times add up to {summed} s, {ratio}x the {span} s between the first "
            "and last record: dt is not in seconds, or the records are not one process's; pass "
            "--wall-time-sec SECONDS")

def test_dt_in_milliseconds_is_refused(tmp_path):
    run = launch(tmp_path)
    recs = launch_records()
    rewrite(run / "metrics-0.jsonl", lambda r: {**r, "metrics": {
        **r["metrics"], "train/dt": r["metrics"]["train/dt"] * 1000}} if is_step(r) else r)
    summed = sum(r["metrics"]["train/dt"] * 1000 for r in recs[1:])
    span = recs[-1]["timestamp"] - recs[0]["timestamp"]
    r = run_cli(run, "--config", "c")
    assert error_line(r) == _over_span(f"{summed:.4g}", f"{summed / span:.3g}", f"{span:.4g}")
    assert r.exit_code == 1
    ok = run_cli(run, "--config", "c", "--wall-time-sec", "1.2")
    row = one_row(ok)
    assert row["wall_time_sec"] == "1.200"
    assert row["throughput_tokens_per_sec"] == LAUNCH_ROW["throughput_tokens_per_sec"]
    assert any(n.endswith("one process's; wall_time_sec from --wall-time-sec")
               for n in notes_of(ok))


def _even_run(tmp_path: Path, dt: float, interval: float, n: int = 11) -> Path:
    run = launch(tmp_path)
    write_jsonl(run / "metrics-0.jsonl",
                [{**step(i, dt=dt, tps=1000.0, tps_per_gpu=1000.0, loss=1.0),
                  "timestamp": 1795990000.0 + i * interval} for i in range(1, n + 1)])
    return run


@pytest.mark.parametrize(("dt", "refused"), [(1.24, False), (1.26, True)])
def test_step_time_over_span_threshold(tmp_path, dt, refused):
    r = run_cli(_even_run(tmp_path, dt, 1.0), "--config", "c")
    if refused:
        assert "1.26x the 10 s between the first and last record" in error_line(r)
    else:
        assert one_row(r)["wall_time_sec"] == f"{11 * dt:.3f}"


def test_step_time_far_below_span_is_noted(tmp_path):
    """hf's timer sees only the last micro-batch under gradient accumulation (here 8)."""
    run = launch(tmp_path)
    recs = launch_records()
    t0 = recs[0]["timestamp"]

    def stretch(rec):  # 100x longer steps, a timer that sees 1/8 of each
        if is_step(rec):
            rec["timestamp"] = t0 + (rec["timestamp"] - t0) * 100
            rec["metrics"]["train/dt"] *= 100 / 8
            for key in ("train/tps", "train/tps_per_gpu", "train/tokens"):  # step time alone
                del rec["metrics"][key]
        return rec

    new = [r for r in rewrite(run / "metrics-0.jsonl", stretch) if is_step(r)]
    covered = sum(r["metrics"]["train/dt"] for r in new[1:])
    span = new[-1]["timestamp"] - new[0]["timestamp"]
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert row["wall_time_sec"] == f"{sum(x['metrics']['train/dt'] for x in new):.3f}"
    assert row["throughput_tokens_per_sec"] == ""
    assert notes_of(r) == [
        f"step times cover {covered:.4g} s of the {span:.4g} s between the first and last "
        f"record ({covered / span:.0%}): dt may miss part of each step (gradient accumulation "
        "timing only the last micro-batch), or the run paused (eval, checkpoints); "
        "wall_time_sec is the summed step time; pass --wall-time-sec SECONDS for the job's "
        "real time", NO_THROUGHPUT_NOTE, MFU_NOTE]
    assert notes_of(run_cli(run, "--config", "c", "--wall-time-sec", "130")) == [
        f"wall_time_sec from --wall-time-sec; summed step time is {row['wall_time_sec']}",
        NO_THROUGHPUT_NOTE, MFU_NOTE]


@pytest.mark.parametrize(("dt", "interval", "noted"), [
    (2.6, 10.0, False),  # 0.26 of the span
    (2.4, 10.0, True),  # 0.24
    (0.001, 0.01, False),  # 0.1, but only 0.09 s not covered: a sub-second run is all logging
    (0.01, 0.15, True),  # 0.07, and 1.4 s of the 1.5 s not covered: over the 1 s minimum
])
def test_step_time_under_span_threshold(tmp_path, dt, interval, noted):
    r = run_cli(_even_run(tmp_path, dt, interval), "--config", "c")
    one_row(r)
    assert any(n.startswith("step times cover") for n in notes_of(r)) == noted


def _clocked(folder: Path, gaps: list[float], steps: list[float], dts: list[float]) -> Path:
    """Records whose timestamps are ``gaps`` apart, with these step numbers and dt."""
    ts = [1795990000.0]
    for g in gaps:
        ts.append(ts[-1] + g)
    return write_run(folder, [{"timestamp": t, "rank": 0, "metrics": {
        "train/iter": s, "train/dt": d, "train/loss": 2.0}}
        for t, s, d in zip(ts, steps, dts, strict=True)])


def test_intervals_without_elapsed_time_say_nothing_of_step_time(tmp_path):
    """A clock that moves every other record: 5 intervals of 2 s, 5 of 0 s, 1.5 s steps."""
    run = _clocked(tmp_path / "run", [2.0, 0.0] * 5, list(range(1, 12)), [1.5] * 11)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["steps"], row["wall_time_sec"]) == ("11", "16.500")
    # 7.5 s of step time in the 2 s intervals: 0.75 of 10 s
    assert notes_of(r) == [NO_THROUGHPUT_NOTE]


@pytest.mark.parametrize(("steps", "summed", "ratio", "span"), [
    ([1, 2], "900", "900", "1"),  # two records are one interval: enough to check
    ([i / 2 for i in range(1, 12)], "9000", "900", "10"),  # a counter in halves all the same
])
def test_step_time_is_checked_on_any_interval(tmp_path, steps, summed, ratio, span):
    run = _clocked(tmp_path / "run", [1.0] * (len(steps) - 1), steps, [900.0] * len(steps))
    r = run_cli(run, "--config", "c")
    assert error_line(r) == _over_span(summed, ratio, span)
    assert r.exit_code == 1


_UNDER = ("({pct}): dt may miss part of each step (gradient accumulation timing only the "
          "last micro-batch), or the run paused (eval, checkpoints); wall_time_sec is the "
          "summed step time; pass --wall-time-sec SECONDS for the job's real time")
_EVERY_2ND = ("wall_time_sec is estimated for all the steps: the 10 logged steps' {summed} s "
              "plus 10 steps not logged, each gap at the mean of the logged step times that "
              "bound it (1 before the first logged step at {median} s), ~20 steps (logged "
              "every 2 steps, steps 2..20); pass --wall-time-sec for the job's real time")
_PAUSE = ("1 pause between records far above the typical {typical} per step: the longest "
          "{longest} between {where} (eval, checkpointing, a restart?); wall_time_sec, the "
          "summed step time, leaves it out")
_ONE_TO_TEN, _EVEN = list(range(1, 11)), list(range(2, 21, 2))


@pytest.mark.parametrize(("gaps", "steps", "dts", "extra", "wall", "notes"), [
    # summed dt exactly 1.25x the span plus 1 ms per interval: still accepted
    ([4.0, 4.0], [1, 2, 3], [1.0, 6.0, 1.25 * 8.0 + 1e-3 * 2 - 6.0], (), "11.002", []),
    # a counter in halves: the clock check runs, coverage (which needs whole steps) does not
    ([1.0] * 10, [i / 2 for i in range(1, 12)], [0.1] * 11, (), "1.100", []),
    # a pause must be over 10x the typical step (100 s at 10 s is not) ...
    ([10.0] * 8 + [100.0], _ONE_TO_TEN, [10.0] * 10, (), "100.000", []),
    # ... and over 60 s more than it (61 s at 1 s is not: only coverage is noted)
    ([1.0] * 8 + [61.0], _ONE_TO_TEN, [1.0] * 10, (), "10.000",
     ["step times cover 9 s of the 69 s between the first and last record "
      + _UNDER.format(pct="13%")]),
    # logged every 2nd step: the typical step is the interval / 2, both thresholds x2
    # (wall time: the 10 logged steps plus 10 unlogged ones at their neighbours', never the half)
    ([2.0] * 8 + [61.5], _EVEN, [1.0] * 10, (), "20.000",
     ["step times (scaled for the steps not logged) cover 18 s of the 77.5 s between the "
      "first and last record " + _UNDER.format(pct="23%"),
      _EVERY_2ND.format(summed="10.000", median="1")]),
    ([20.0] * 8 + [150.0], _EVEN, [10.0] * 10, (), "200.000",
     [_EVERY_2ND.format(summed="100.000", median="10")]),
    ([2.0] * 8 + [200.0], _EVEN, [1.0] * 10, (), "20.000",
     [_PAUSE.format(typical="1 s", longest="3 min", where="step 18 and step 20")
      + "; pass --wall-time-sec SECONDS to count it",
      _EVERY_2ND.format(summed="10.000", median="1")]),
    ([2.0] * 8 + [200.0], _EVEN, [1.0] * 10, ("--wall-time-sec", "300"), "300.000",
     [_PAUSE.format(typical="1 s", longest="3 min", where="step 18 and step 20"),
      "wall_time_sec from --wall-time-sec; summed step time is 10.000 and covers 10 of ~20 "
      "steps (logged every 2 steps, steps 2..20)"]),
    ([2.0] * 9, _EVEN, [0.1] * 10, (), "2.000",
     ["step times (scaled for the steps not logged) cover 1.8 s of the 18 s between the first "
      "and last record " + _UNDER.format(pct="10%"),
      _EVERY_2ND.format(summed="1.000", median="0.1")]),
    # coverage is measured outside the pauses
    ([2.0] * 8 + [200.0], _ONE_TO_TEN, [0.1] * 10, (), "1.000",
     [_PAUSE.format(typical="2 s", longest="3 min", where="step 9 and step 10")
      + "; pass --wall-time-sec SECONDS to count it",
      "step times cover 0.8 s of the 16 s between the first and last record outside the "
      "pauses " + _UNDER.format(pct="5%")]),
    # exactly 1 s not covered is enough for the note; 0.7 s is not
    ([1.25], [1, 2], [0.25, 0.25], (), "0.500",
     ["step times cover 0.25 s of the 1.25 s between the first and last record "
      + _UNDER.format(pct="20%")]),
    ([0.09] * 10, list(range(1, 12)), [0.02] * 11, (), "0.220", []),
    # a clock that moves every other record: only the 2 s intervals are measured
    ([2.0, 0.0] * 5, list(range(1, 12)), [0.1] * 11, (), "1.100",
     ["step times cover 0.5 s of the 10 s between the first and last record "
      + _UNDER.format(pct="5%")]),
])
def test_step_time_rules_at_their_edges(tmp_path, gaps, steps, dts, extra, wall, notes):
    r = run_cli(_clocked(tmp_path / "run", gaps, steps, dts), "--config", "c", *extra)
    row = one_row(r)
    assert (row["steps"], row["wall_time_sec"]) == (str(len(steps)), wall)
    assert notes_of(r) == [*notes, NO_THROUGHPUT_NOTE]


@pytest.mark.parametrize(("pause", "noted"), [(30.0, False), (30.5, True)])
def test_pauses_are_judged_by_their_total(tmp_path, pause, noted):
    """Two checkpoints of 30 s (under a minute each): 60 s in all is not over a minute,
    61 s is; a logged checkpoint time is named."""
    run = _even_run(tmp_path, 0.5, 1.0)

    def paused(x):
        i = x["metrics"]["train/iter"]
        x["timestamp"] += pause * ((i > 4) + (i > 8))
        if i in (5, 9):
            x["metrics"]["train/ckpt_stage_seconds"] = 29.5
        return x

    rewrite(run / "metrics-0.jsonl", paused)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["wall_time_sec"] == "5.500"
    pauses = [n for n in notes_of(r) if "pauses between records" in n]
    assert pauses == ([] if not noted else [
        "2 pauses between records far above the typical 1 s per step, 61 s in all: the "
        "longest 31.5 s between step 4 and step 5 (eval, checkpointing, a restart?); "
        "train/ckpt_stage_seconds logged 59 s of checkpointing; wall_time_sec, the summed step "
        "time, leaves them out; pass --wall-time-sec SECONDS to count it"])


# ---------------------------------------------------------------- attempts and resumes


def test_retried_attempts_in_one_file_are_refused_with_a_list(tmp_path):
    run, first, second = retried_launch(tmp_path)
    r = run_cli(run, "--config", "c")
    t1, t2 = (format_timestamp(x[0]["timestamp"]) for x in (first, second))
    assert error_line(r) == (
        "error: the records hold 2 attempts (a retried or resumed job): #1 steps 1..20 from "
        f"{t1} (20 records, 1 rank); #2 steps 1..30 from {t2} (30 records, 1 rank): step "
        "numbers start again (step 1 after step 20); pass --attempt last, or --attempt N for "
        "one of them")
    assert r.exit_code == 1


def test_attempt_last_exports_the_last_attempt_only(tmp_path):
    run, _, second = retried_launch(tmp_path)
    r = run_cli(run, "--config", "test/cfg", "--attempt", "last")
    row = one_row(r)
    want = {**LAUNCH_ROW, "config": "test/cfg",
            "timestamp": format_timestamp(second[0]["timestamp"])}
    assert row == want  # the fixture's numbers exactly: nothing of attempt 1 leaked in
    assert notes_of(r) == [
        f"exported attempt #2 steps 1..30 from {want['timestamp']} (30 records, 1 rank) of 2; "
        "left out 20 records of the others", MFU_NOTE]


def test_attempts_in_explain_and_json(tmp_path):
    run, first, second = retried_launch(tmp_path)
    r = run_cli(run, "--config", "c", "--attempt", "last", "--format", "json", "--explain")
    d = json.loads(r.stdout)["details"]
    assert d["attempt"] == 2
    assert [(a["first_step"], a["last_step"], a["stop"] - a["start"], a["ranks"])
            for a in d["attempts"]] == [(1.0, 20.0, 20, 1), (1.0, 30.0, 30, 1)]
    assert d["attempts"][1]["first_timestamp"] == second[0]["timestamp"]
    assert "2 attempts in the records; exported #2" in r.stderr


def test_attempt_by_number(tmp_path):
    run, first, _ = retried_launch(tmp_path)
    row = one_row(run_cli(run, "--config", "c", "--attempt", "1"))
    assert row["steps"] == "20"
    assert row["timestamp"] == format_timestamp(first[0]["timestamp"])
    assert row["wall_time_sec"] == f"{sum(r['metrics']['train/dt'] for r in first):.3f}"
    assert row["final_loss"] == f"{first[-1]['metrics']['train/loss']:.6f}"
    assert error_line(run_cli(run, "--config", "c", "--attempt", "3")) == (
        "error: --attempt 3: the records hold 2 attempts; pass --attempt last or a number "
        "from 1 to 2")


@pytest.mark.parametrize("value", ["0", "first", "-1", "1.5", ""])
def test_attempt_value_is_validated(tmp_path, value):
    r = run_cli(launch(tmp_path), "--config", "c", "--attempt", value)
    assert error_line(r) == ("error: invalid value for '--attempt': must be 'last' or a number "
                             f"from 1, got {value!r}")
    assert r.exit_code == 2


def test_attempt_on_a_single_attempt_is_noted(tmp_path):
    r = run_cli(launch(tmp_path), "--config", "test/cfg", "--attempt", "last")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}
    assert notes_of(r) == ["--attempt last: the records hold one attempt; used all of it", MFU_NOTE]


def _attempts_line(k: int, t0: float) -> str:
    why = ": step numbers start again (step 1 after step 3)" if k > 1 else ""
    return f"#{k} steps 1..3 from {format_timestamp(t0 + 100 * (k - 1) + 1)} (3 records){why}"


@pytest.mark.parametrize(("n", "shown"), [
    (6, [1, 2, 3, 4, 5, 6]),
    (7, [1, 2, 3, 4, 5, "... 1 more", 7]),
    (8, [1, 2, 3, 4, 5, "... 2 more", 8]),
])
def test_many_attempts_list_the_first_five_and_the_last(tmp_path, n, shown):
    t0 = 1795990000.0
    run = tmp_path / "run"
    write_jsonl(run / "metrics-0.jsonl",
                [step(i, dt=1.0, ts=t0 + 100 * k) for k in range(n) for i in range(1, 4)])
    write_run_info(run)
    r = run_cli(run, "--config", "c")
    listed = "; ".join(x if isinstance(x, str) else _attempts_line(x, t0) for x in shown)
    assert error_line(r) == (
        f"error: the records hold {n} attempts (a retried or resumed job): {listed}; pass "
        "--attempt last, or --attempt N for one of them")
    assert r.exit_code == 1


def test_attempt_without_timestamps_or_step_numbers_says_so(tmp_path):
    t0 = 1795990000.0
    run = tmp_path / "run"
    first = [step(i, dt=1.0) for i in range(1, 4)]
    for x in first:
        del x["timestamp"]
    write_jsonl(run / "metrics-0.jsonl", first + [step(i, dt=1.0, ts=t0 + 100) for i in (1, 2)])
    write_run_info(run)
    assert error_line(run_cli(run, "--config", "c")) == (
        "error: the records hold 2 attempts (a retried or resumed job): #1 steps 1..3 from no "
        f"timestamp (3 records); #2 steps 1..2 from {format_timestamp(t0 + 101)} (2 records): "
        "step numbers start again (step 1 after step 3); pass --attempt last, or --attempt N "
        "for one of them")
    # a world size change to a record without a step number: an attempt without step numbers
    recs = [step(i, dt=1.0, tps=100.0, tps_per_gpu=100.0) for i in (1, 2, 3)]
    recs.append({**step(0, dt=1.0, tps=200.0, tps_per_gpu=100.0), "timestamp": t0 + 100})
    recs[-1]["metrics"]["train/iter"] = float("nan")
    write_jsonl(run / "metrics-0.jsonl", recs)
    assert error_line(run_cli(run, "--config", "c")) == (
        "error: the records hold 2 attempts (a retried or resumed job): #1 steps 1..3 from "
        f"{format_timestamp(t0 + 1)} (3 records, 1 rank); #2 no step numbers from "
        f"{format_timestamp(t0 + 100)} (1 record, 2 ranks): the logged world size changes (1 "
        "to 2 ranks); pass --attempt last, or --attempt N for one of them")


def _resumed_on_more_ranks(tmp_path: Path) -> Path:
    """100 steps on 2 ranks, then resumed from the checkpoint on 4 ranks, 2 h later."""
    run = copy_run("fsdp_tp-2rank", tmp_path)
    recs = [r for r in read_records(run / "metrics-0.jsonl") if is_step(r)]
    later = []
    for r in recs:
        m = {**r["metrics"], "train/iter": r["metrics"]["train/iter"] + 30}
        m["train/tps"] = m["train/tps_per_gpu"] * 4
        m["train/tokens"] = m["train/tokens"] * 2  # twice the ranks, twice the tokens a step
        later.append({**r, "timestamp": r["timestamp"] + 7200, "metrics": m})
    write_jsonl(run / "metrics-0.jsonl", recs + later)
    return run


def test_resume_on_more_ranks_is_refused(tmp_path):
    run = _resumed_on_more_ranks(tmp_path)
    line = error_line(run_cli(run, "--config", "c"))
    assert "the records hold 2 attempts" in line
    assert "#1 steps 1..30 from 2026-11-29T22:18:43Z (30 records, 2 ranks)" in line
    assert "#2 steps 31..60 from 2026-11-29T24" not in line  # sanity: a real date follows
    assert "#2 steps 31..60 from 2026-11-30T00:18:43Z (30 records, 4 ranks)" in line


def test_resume_on_more_ranks_last_attempt_needs_its_gpus(tmp_path):
    run = _resumed_on_more_ranks(tmp_path)
    line = error_line(run_cli(run, "--config", "c", "--attempt", "last"))
    assert line.endswith("train/tps / train/tps_per_gpu = 4; pass --gpus 4 (or --gpus 2 if "
                         "the per-GPU figure is what is wrong)")
    r = run_cli(run, "--config", "test/cfg", "--attempt", "last", "--gpus", "4")
    row = one_row(r)
    fixture = dict(zip(HEADER, EXPECTED["fsdp_tp-2rank"].split(","), strict=True))
    assert row["gpus"] == "4"
    assert row["throughput_tokens_per_sec_per_gpu"] == fixture["throughput_tokens_per_sec_per_gpu"]
    tpg = float(fixture["throughput_tokens_per_sec_per_gpu"])
    assert abs(float(row["throughput_tokens_per_sec"]) - 4 * tpg) < 0.01  # not the 2-rank rate
    assert row["steps"] == "30"
    assert ("first logged step is 31 (logged every step): the run was resumed, or did not log "
            "its first steps; the row covers steps 31..60 only") in notes_of(r)


def test_resumed_run_first_step_far_above_stride_is_noted(tmp_path):
    run = launch(tmp_path)
    rewrite(run / "metrics-0.jsonl", lambda r: {**r, "metrics": {
        **r["metrics"], "train/iter": r["metrics"]["train/iter"] + 100}} if is_step(r) else r)
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}
    assert notes_of(r) == [
        "first logged step is 101 (logged every step): the run was resumed, or did not log "
        "its first steps; the row covers steps 101..130 only", MFU_NOTE]


@pytest.mark.parametrize(("first", "noted"), [(10, False), (11, False), (12, True)])
def test_resume_threshold_is_ten_strides(tmp_path, first, noted):
    """Ten strides, plus the step that ends an unlogged warmup of ten (minimal's default
    WARMUP_ITERS=10 logs from step 11: no resume)."""
    run = _even_run(tmp_path, 0.5, 1.0)
    rewrite(run / "metrics-0.jsonl", lambda x: {**x, "metrics": {
        **x["metrics"], "train/iter": x["metrics"]["train/iter"] + first - 1}})
    assert any("resumed" in n for n in notes_of(run_cli(run, "--config", "c"))) == noted


def test_minimal_default_warmup_is_no_resume(tmp_path, json_paths):
    """A real minimal run with its default WARMUP_ITERS=10: logged from step 11 to 39. No
    resume note, the row is every logged step's."""
    run = copy_run("minimal-default-warmup-1rank", tmp_path)
    recs = [x for x in read_records(run / "metrics.jsonl") if "dt" in x["metrics"]]
    assert (recs[0]["metrics"]["iter"], recs[-1]["metrics"]["iter"]) == (11, 39)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["steps"], row["wall_time_sec"]) == (
        "29", f"{sum(x['metrics']['dt'] for x in recs):.3f}")
    assert notes_of(r) == [NO_THROUGHPUT_NOTE, MFU_NOTE]


@pytest.mark.parametrize("restart", [True, False])
def test_a_restart_logged_in_the_first_record_is_a_resume(tmp_path, json_paths, restart):
    """A real fsdp_tp run relaunched on fewer ranks, resumed from its step-10 checkpoint:
    logged from step 11 (within ten strides plus one) with train/restart_seconds in that
    record: a resume, said with its evidence. Without the key it reads as a late start."""
    from helpers import rewrite

    run = copy_run("fsdp_tp-relaunch-fewer-ranks", tmp_path)
    if not restart:
        rewrite(run / "metrics-0.jsonl", lambda x: {**x, "metrics": {
            k: v for k, v in x["metrics"].items() if "restart" not in k}})
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == "20"
    said = [n for n in notes_of(r) if n.startswith("first logged step")]
    assert said == ["first logged step is 11 (logged every step) and its record logs "
                    "train/restart_seconds: the run was resumed; the row covers steps 11..30 "
                    "only"] * restart


@pytest.mark.parametrize(("pause", "noted"), [(30.0, False), (75.0, True)])
def test_pause_must_be_ten_times_typical_and_a_minute_longer(tmp_path, pause, noted):
    run = _even_run(tmp_path, 0.5, 1.0)
    rewrite(run / "metrics-0.jsonl", lambda x: {**x, "timestamp": x["timestamp"] + pause}
            if x["metrics"]["train/iter"] > 6 else x)
    r = run_cli(run, "--config", "c")
    assert any(n.startswith("1 pause between records") for n in notes_of(r)) == noted


@pytest.mark.parametrize(("dt", "interval", "pause", "noted"), [
    (0.5, 1.0, 59.5, False), (0.5, 1.0, 60.5, True),  # 1 s steps: the minute decides
    (5.0, 10.0, 85.0, False), (5.0, 10.0, 95.0, True),  # 10 s steps: ten times (100 s) decides
])
def test_pause_edges(tmp_path, dt, interval, pause, noted):
    run = _even_run(tmp_path, dt, interval)
    rewrite(run / "metrics-0.jsonl", lambda x: {**x, "timestamp": x["timestamp"] + pause}
            if x["metrics"]["train/iter"] > 6 else x)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["wall_time_sec"] == f"{11 * dt:.3f}"
    assert any(n.startswith("1 pause between records") for n in notes_of(r)) == noted


def test_pause_between_records_is_noted_once(tmp_path):
    """A 2 h checkpoint pause after step 15: one note, not also a coverage note."""
    run = launch(tmp_path)
    rewrite(run / "metrics-0.jsonl", lambda r: {**r, "timestamp": r["timestamp"] + 7200}
            if is_step(r) and r["metrics"]["train/iter"] > 15 else r)
    recs = launch_records()
    per_step = statistics.median(np.diff([x["timestamp"] for x in recs]).tolist())
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}
    assert notes_of(r) == [
        f"1 pause between records far above the typical {per_step:.3g} s per step: the longest "
        "2.0 h between step 15 and step 16 (eval, checkpointing, a restart?); wall_time_sec, "
        "the summed step time, leaves it out; pass --wall-time-sec SECONDS to count it",
        MFU_NOTE]


# ---------------------------------------------------------------- attempts told apart by cause


_SERIES_KEYS = ("train/dt, train/loss, train/mfu, train/tflops, train/tps, "
                "train/tps_per_gpu")
_EVAL_LEFT_OUT = ("left out {n} record{s} with train/iter but none of the training series "
                  f"the others log ({_SERIES_KEYS}): eval or summary records, not training "
                  "steps")


def _with_evals(tmp_path: Path, at: set[int], before: bool) -> Path:
    """The launch run with an eval record (train/iter and eval/* only) numbered like the
    training step it follows, or (``before``) an eval at train/iter 0 ahead of training."""
    run = launch(tmp_path)

    def add(rec):
        i = rec["metrics"].get("train/iter")
        ev = {"timestamp": rec["timestamp"] + 0.001, "rank": 0,
              "metrics": {"train/iter": 0 if before else i, "eval/loss": 7.5, "eval/acc": 0.1}}
        if is_step(rec) and i in at:
            return [ev, rec] if before else [rec, ev]
        return rec

    rewrite(run / "metrics-0.jsonl", add)
    return run


@pytest.mark.parametrize(("at", "before"), [
    ({1}, True),  # an evaluation before training, numbered 0: not the warmup step
    ({10, 20, 30}, False),  # eval records reusing the step number: not a retried job
])
def test_records_with_the_counter_but_no_training_series_are_not_steps(tmp_path, at, before):
    r = run_cli(_with_evals(tmp_path, at, before), "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}  # 30 steps, warmup the first
    n = len(at)
    assert notes_of(r) == [_EVAL_LEFT_OUT.format(n=n, s="" if n == 1 else "s"), MFU_NOTE]


def test_records_all_without_series_are_all_steps(tmp_path):
    """When no record carries a training series, none can be told apart by content."""
    recs = [{"timestamp": 1795990000.0 + i, "rank": 0,
             "metrics": {"train/iter": i, "custom/x": 1.0}} for i in range(1, 4)]
    r = run_cli(write_run(tmp_path / "run", recs), "--config", "c", "--wall-time-sec", "3")
    assert one_row(r)["steps"] == "3"


def test_a_counter_that_restarts_each_epoch_is_one_attempt(tmp_path):
    """train/iter 1..10 in epochs 0, 1, 2 on one clock: 30 steps in (epoch, iter) order."""
    run = launch(tmp_path)
    set_metric(run, "train/epoch", lambda i, v: (i - 1) // 10)
    set_metric(run, "train/iter", lambda i, v: (i - 1) % 10 + 1)
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}
    assert notes_of(r) == [
        "train/iter starts again each epoch (the epoch number advances): one attempt, its "
        "records ordered by epoch, then train/iter", MFU_NOTE]


def test_a_retry_of_a_per_epoch_counter_is_still_an_attempt(tmp_path):
    """Epochs 0..2, then the job again from epoch 0 ten minutes later."""
    run = launch(tmp_path)
    set_metric(run, "train/epoch", lambda i, v: (i - 1) // 10)
    set_metric(run, "train/iter", lambda i, v: (i - 1) % 10 + 1)
    recs = read_records(run / "metrics-0.jsonl")
    again = [{**x, "timestamp": x["timestamp"] + 600} for x in recs[:12]]
    write_jsonl(run / "metrics-0.jsonl", recs + again)
    line = error_line(run_cli(run, "--config", "c"))
    assert line.startswith("error: the records hold 2 attempts (a retried or resumed job): #1 "
                           "steps 1..10 from 2026-11-29T22:19:13Z (30 records, 1 rank); #2 "
                           "steps 1..1 from 2026-11-29T22:29:13Z (11 records, 1 rank): step "
                           "numbers start again (step 1 after step 10);")
    row = one_row(run_cli(run, "--config", "c", "--attempt", "last"))
    assert row["steps"] == "11"


@pytest.mark.parametrize(("nudge", "attempts"), [(0.0, 1), (1e-3, 2)])
def test_a_line_written_twice_is_one_record(tmp_path, nudge, attempts):
    """Step 10's line twice: one record, noted. The same step a millisecond later is a
    second record of step 10: a repeated step number, two attempts."""
    run = launch(tmp_path)
    recs = read_records(run / "metrics-0.jsonl")
    k = next(j for j, x in enumerate(recs) if x["metrics"].get("train/iter") == 10)
    twice = {**recs[k], "timestamp": recs[k]["timestamp"] + nudge}
    write_jsonl(run / "metrics-0.jsonl", [*recs[:k + 1], twice, *recs[k + 1:]])
    r = run_cli(run, "--config", "test/cfg")
    if attempts == 2:
        assert "the records hold 2 attempts" in error_line(r)
        return
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}
    assert notes_of(r) == ["dropped 1 record identical to an earlier one (same step, timestamp "
                           "and values: a line written twice)", MFU_NOTE]


def _resumed_on_fewer_ranks(tmp_path: Path, factor: float) -> Path:
    """Steps 1..15 on a job ``factor`` times larger, a 2 h pause (a node failed), then
    steps 16..30 on this one: the step numbers go on, only the throughput level drops.
    Only train/tps is logged (no per-GPU figure whose ratio would show the change)."""
    run = launch(tmp_path)

    def resume(rec):
        if not is_step(rec):
            return rec
        m = {k: v for k, v in rec["metrics"].items() if k != "train/tps_per_gpu"}
        if m["train/iter"] <= 15:
            m["train/tps"] *= factor
            m["train/tokens"] *= factor
            return {**rec, "metrics": m}
        return {**rec, "timestamp": rec["timestamp"] + 7200, "metrics": m}

    rewrite(run / "metrics-0.jsonl", resume)
    return run


def test_a_throughput_level_shift_after_a_long_pause_is_another_attempt(tmp_path):
    run = _resumed_on_fewer_ranks(tmp_path, 2.0)
    recs = launch_records()
    before = [2 * x["metrics"]["train/tps"] for x in recs[1:15]]
    after = [x["metrics"]["train/tps"] for x in recs[16:]]
    shift = statistics.median(before) / statistics.median(after)
    r = run_cli(run, "--config", "c")
    t1 = format_timestamp(recs[0]["timestamp"])
    t2 = format_timestamp(recs[15]["timestamp"] + 7200)
    assert error_line(r) == (
        "error: the records hold 2 attempts (a retried or resumed job): #1 steps 1..15 from "
        f"{t1} (15 records); #2 steps 16..30 from {t2} (15 records): throughput "
        f"{shift:.3g}x lower after a 2.0 h pause; pass --attempt last, or --attempt N for one "
        "of them")
    assert r.exit_code == 1
    row = one_row(run_cli(run, "--config", "c", "--attempt", "last"))
    assert row["steps"] == "15"
    assert row["throughput_tokens_per_sec"] == f"{statistics.median(after):.3f}"
    assert row["throughput_tokens_per_sec_per_gpu"] == f"{statistics.median(after):.3f}"


@pytest.mark.parametrize(("factor", "split"), [(1.2, False), (1.3, True)])
def test_a_level_shift_must_be_over_a_quarter(tmp_path, factor, split):
    """The medians before and after differ by a little more than the factor (1.24, 1.32)."""
    r = run_cli(_resumed_on_fewer_ranks(tmp_path, factor), "--config", "c")
    if split:
        assert "throughput 1.32x lower after a 2.0 h pause" in error_line(r)
    else:
        assert one_row(r)["steps"] == "30"
        assert any(n.startswith("1 pause between records") for n in notes_of(r))


def test_a_world_size_change_names_both_sizes(tmp_path):
    run = _resumed_on_more_ranks(tmp_path)
    assert ("#2 steps 31..60 from 2026-11-30T00:18:43Z (30 records, 4 ranks): the logged world "
            "size changes (2 to 4 ranks) and throughput 2x higher after a 120 min pause; pass"
            ) in error_line(run_cli(run, "--config", "c"))


# ---------------------------------------------------------------- only training steps


def test_eval_records_are_not_steps(tmp_path):
    """vit logs eval/* records per eval batch, without the training step key."""
    run = launch(tmp_path)

    def with_eval(rec):
        if is_step(rec) and rec["metrics"]["train/iter"] % 10 == 0:
            evals = [{"timestamp": rec["timestamp"] + 0.001 * k, "rank": 0,
                      "metrics": {"eval/loss": 7.0 + k, "eval/acc": 0.1, "eval/dt": 0.01}}
                     for k in range(1, 5)]
            return [rec, *evals]
        return rec

    rewrite(run / "metrics-0.jsonl", with_eval)
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}  # steps 30, not 42
    assert notes_of(r) == ["left out 12 records without train/iter (eval batches, summaries): "
                        "not training steps", MFU_NOTE]


def test_epoch_level_history_counts_epochs(tmp_path):
    """fsdp logs one record per epoch, with no step key: epoch, dt, train_loss."""
    run = launch(tmp_path)
    recs = [{"timestamp": 1795990000.0 + 10 * e, "rank": 0,
             "metrics": {"epoch": e, "dt": 8.0 + e / 10, "train_loss": 3.0 - e / 10,
                         "test_loss": 3.5, "test_acc": 0.2 * e}} for e in range(1, 6)]
    write_jsonl(run / "metrics-0.jsonl", recs)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert row["steps"] == "5"
    assert row["wall_time_sec"] == f"{sum(8.0 + e / 10 for e in range(1, 6)):.3f}"
    assert row["final_loss"] == f"{3.0 - 0.5:.6f}"
    assert row["throughput_tokens_per_sec"] == "" and row["mfu"] == ""
    assert notes_of(r) == ["records are epochs (epoch is the only counter): steps counts epochs, "
                        "and restarts are detected on the epoch number", NO_THROUGHPUT_NOTE]
    write_jsonl(run / "metrics-0.jsonl", recs[:3] + [
        {**x, "timestamp": x["timestamp"] + 600} for x in recs])
    line = error_line(run_cli(run, "--config", "c"))
    assert "#1 epochs 1..3 from" in line and "#2 epochs 1..5 from" in line


# ---------------------------------------------------------------- per-rank files, one rank


def test_file_named_by_local_rank_holding_two_ranks(tmp_path):
    """A wrapper naming files by LOCAL_RANK puts ranks 0 and 2 in metrics-0.jsonl."""
    run = copy_run("fsdp_tp-2rank", tmp_path)
    rank0 = read_records(run / "metrics-0.jsonl")
    rank2 = [{**r, "rank": 2, "metrics": {**r["metrics"], "train/tps": 1.0, "train/dt": 0.001}}
             if is_step(r) else {**r, "rank": 2} for r in read_records(run / "metrics-1.jsonl")]
    mixed = [x for pair in zip(rank0, rank2, strict=True) for x in pair]
    write_jsonl(run / "metrics-0.jsonl", mixed)
    r = run_cli(run, "--config", "test/cfg")
    assert list(one_row(r).values()) == EXPECTED["fsdp_tp-2rank"].split(",")
    assert notes_of(r) == ["metrics-0.jsonl also holds 30 records of rank 2 (files named by local "
                        "rank?); used rank 0's only", MFU_NOTE]


@pytest.mark.parametrize(("others", "listed"), [
    ((3, 5, 7, 9), "4 records of rank 3, 5, 7, 9"),
    ((3, 5, 7, 9, 11), "5 records of rank 3, 5, 7, 9, ..."),
])
def test_other_ranks_in_the_file_used_are_named(tmp_path, others, listed):
    """Rank 0's file holds only rank 8's steps; rank 1's file holds other ranks' too."""
    run = tmp_path / "run"
    write_run_info(run, WORLD_SIZE_IN_USE="2", world_size="2")
    write_jsonl(run / "metrics-0.jsonl", [step(i, rank=8, dt=0.5, loss=2.0) for i in (1, 2, 3)])
    write_jsonl(run / "metrics-1.jsonl", [step(i, rank=1, dt=0.5, loss=2.0) for i in range(1, 6)]
                + [step(1, rank=k, dt=0.5, loss=2.0) for k in others])
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["gpus"], row["steps"], row["wall_time_sec"]) == ("2", "5", "2.500")
    assert notes_of(r) == [
        "rank 0 logged no step; used rank 1",
        f"metrics-1.jsonl also holds {listed} (files named by local rank?); used rank 1's only",
        NO_THROUGHPUT_NOTE]


# ---------------------------------------------------------------- throughput keys


def test_bare_tokens_per_sec_is_not_training_throughput(tmp_path):
    run = launch(tmp_path)

    def inference(rec):
        m = rec["metrics"]
        if "train/tps" in m:
            m["tokens_per_sec"] = m.pop("train/tps")
            del m["train/tps_per_gpu"]
        return rec

    rewrite(run / "metrics-0.jsonl", inference)
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg", "throughput_tokens_per_sec": "",
                          "throughput_tokens_per_sec_per_gpu": ""}
    assert notes_of(r) == [
        "ignored bare tokens_per_sec: not training throughput (bare tokens_per_sec is ezpz's "
        "inference rate, per rank); only train/tps, train/tps_per_gpu and train/tokens_per_sec "
        "are", NO_THROUGHPUT_NOTE, MFU_NOTE]


def test_every_bare_throughput_key_is_named(tmp_path):
    run = write_run(tmp_path / "run", [{"timestamp": 1795990000.0 + i, "rank": 0, "metrics": {
        "train/iter": i, "train/dt": 0.5, "tps": 5.0, "tokens_per_sec": 4.0}} for i in (1, 2)])
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["throughput_tokens_per_sec"], row["steps"]) == ("", "2")
    assert notes_of(r) == [
        "ignored bare tokens_per_sec, tps: not training throughput (bare tokens_per_sec is "
        "ezpz's inference rate, per rank); only train/tps, train/tps_per_gpu and "
        "train/tokens_per_sec are", NO_THROUGHPUT_NOTE]


# ---------------------------------------------------------------- impossible values


def test_mfu_above_100_on_every_step_leaves_the_cell_empty(tmp_path):
    run = launch(tmp_path)
    set_metric(run, "train/mfu", lambda i, v: 212.5)
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}  # mfu empty, not 212.5
    assert notes_of(r) == [
        "dropped 30 mfu values above 100 % (FP8 measured against a BF16 peak, or fsdp_tp's "
        "tensor-parallel over-count): not a utilisation; mfu left empty"]


def test_mfu_above_100_on_some_steps_is_dropped_per_step(tmp_path):
    run = launch(tmp_path)
    set_metric(run, "train/mfu",
                lambda i, v: 100.5 if i in (5, 6, 7) else 100.0 if i == 8 else 40.0 + i / 10)
    on_h100(run)  # tflops / (mfu / 100) is the device's peak
    r = run_cli(run, "--config", "c")
    kept = [100.0 if i == 8 else 40.0 + i / 10 for i in range(2, 31) if i not in (5, 6, 7)]
    assert one_row(r)["mfu"] == f"{statistics.median(kept):.3f}"
    assert notes_of(r)[0].startswith("dropped 3 mfu values above 100 %")


# ------------------------------------------------------- provenance older than the metrics


_ANOTHER_LAUNCH = ("before the first exported record: another launch's; the row may be a "
                   "relaunch into this folder that was killed before finalize")


@pytest.mark.parametrize(("after_first_sec", "stale"), [
    (-61.0, f"61 s {_ANOTHER_LAUNCH}"),  # more than the 60 s of clock slack before the first
    (-59.0, "8 min before the last metrics record: an earlier attempt's"),  # 459 s before last
    (99.0, "5 min before the last metrics record: an earlier attempt's"),  # 301 s before last
    (101.0, None),  # 299 s before the last record
    (410.0, None),  # after the last record, as finalize writes it
])
def test_provenance_older_than_the_metrics_is_stale(tmp_path, after_first_sec, stale):
    """Records over 400 s; run_info.json and the report written at ``after_first_sec``.

    Older than the first record: another launch's (a killed relaunch into the folder);
    more than 300 s older than the last: an earlier attempt's (a retry overwrote them)."""
    run = _even_run(tmp_path, 30.0, 40.0)  # records at 40 s intervals, 1795990040..440
    first = 1795990040.0
    for p in (run / "run_info.json", run / "train" / "report-train.md"):
        os.utime(p, (first + after_first_sec, first + after_first_sec))
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r)["steps"] == "11"
    if stale:
        ago, _, why = stale.partition(" before ")
        assert notes_of(r) == [
            f"run looks unfinished (run_info.json was written {ago} and train/report-train.md "
            f"{ago} before {why}); status stays 'pass'; pass --status fail if the job failed"]
    else:
        assert notes_of(r) == []


# ---------------------------------------------------------------- rank 0 stopped early


def _rank0_until(tmp_path: Path, last: int) -> Path:
    """The launch run as 2 ranks: rank 1 logged all 30 steps, rank 0 stopped after ``last``.

    Rank 0's records are larger (it alone writes the aggregated keys): its file is the
    larger one even so, which is why file sizes cannot tell who stopped early."""
    run = launch(tmp_path)
    recs = read_records(run / "metrics-0.jsonl")
    write_jsonl(run / "metrics-1.jsonl", [{**x, "rank": 1} for x in recs])
    kept = [{**x, "aggregated": {"train/tps/mean": 1.0, "pad": "x" * 2000}} if is_step(x) else x
            for x in recs if not is_step(x) or x["metrics"]["train/iter"] <= last]
    write_jsonl(run / "metrics-0.jsonl", kept)
    return run


@pytest.mark.parametrize(("last", "noted"), [
    (10, True),
    (28, True),  # two steps short: more than one logging stride
    (29, False),  # one step short: ranks stopped together, a step apart
])
def test_rank0_that_stopped_early_is_noted_by_its_last_step(tmp_path, last, noted):
    run = _rank0_until(tmp_path, last)
    assert os.path.getsize(run / "metrics-0.jsonl") > os.path.getsize(run / "metrics-1.jsonl")
    r = run_cli(run, "--config", "c", "--gpus", "2")
    assert one_row(r)["steps"] == str(last)
    stopped = [n for n in notes_of(r) if "stopped early" in n]
    assert stopped == ([f"rank 1's last record is step 30, rank 0's step {last}: rank 0 may "
                        f"have stopped early; the row covers its {last} steps only"]
                       if noted else [])


def test_rank0_of_an_interleaved_file_logged_far_fewer_records(tmp_path):
    run = copy_run("minimal-1rank", tmp_path)
    recs = read_records(run / "metrics.jsonl")
    mine = [x for x in recs if x["metrics"]["iter"] <= 15]
    write_jsonl(run / "metrics.jsonl", mine + [{**x, "rank": 1} for x in recs])
    r = run_cli(run, "--config", "c", "--gpus", "2")
    assert one_row(r)["steps"] == "10"
    assert ("rank 1 logged 34 records, rank 0 only 10: rank 0 may have stopped early; the row "
            "covers its 10 steps only") in notes_of(r)


class _CountingFile:
    """A file that adds up the bytes read from it."""

    def __init__(self, f, counts: dict[str, int], name: str) -> None:
        self._f, self._counts, self._name = f, counts, name

    def read(self, *args):
        data = self._f.read(*args)
        self._counts[self._name] = self._counts.get(self._name, 0) + len(data)
        return data

    def __getattr__(self, name):
        return getattr(self._f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._f.close()


def test_other_rank_files_are_read_only_at_their_end(tmp_path, monkeypatch):
    """39 other ranks, each with a 1 MB file: three are opened, and each is read from
    the end, a few KiB, never whole (steps.TAIL_BYTES)."""
    from ezpz_amsc.run import steps as steps_mod
    from ezpz_amsc.run.steps import TAIL_BYTES

    run = copy_run("fsdp_tp-2rank", tmp_path)
    recs = read_records(run / "metrics-1.jsonl")
    padded = [{**x, "pad": "x" * 40_000} for x in recs]
    for k in range(1, 40):
        write_jsonl(run / f"metrics-{k}.jsonl", [{**x, "rank": k} for x in padded[:25]]
                    + [{**x, "rank": k} for x in recs[25:]])
    counts: dict[str, int] = {}
    real = steps_mod.open_regular  # the one opener of files that are read (fs/read.py)

    def counting_open(path):
        return _CountingFile(real(path), counts, str(path))

    monkeypatch.setattr(steps_mod, "open_regular", counting_open)
    one_row(run_cli(run, "--config", "c", "--gpus", "2"))
    others = {p: n for p, n in counts.items() if not p.endswith("metrics-0.jsonl")}
    assert sorted(Path(p).name for p in others) == [
        "metrics-1.jsonl", "metrics-20.jsonl", "metrics-39.jsonl"]  # first, middle, last
    assert all(n <= TAIL_BYTES for n in others.values()), others
    assert os.path.getsize(run / "metrics-1.jsonl") > 1_000_000


def test_the_last_of_three_other_rank_files_is_read(tmp_path):
    """Ranks 1, 2 and 3 are the first, middle and last others: all three are compared."""
    run = launch(tmp_path)
    recs = read_records(run / "metrics-0.jsonl")
    write_jsonl(run / "metrics-0.jsonl",
                [x for x in recs if not is_step(x) or x["metrics"]["train/iter"] <= 20])
    for k in (1, 2):
        write_jsonl(run / f"metrics-{k}.jsonl", [{**x, "rank": k} for x in recs[:22]])
    write_jsonl(run / "metrics-3.jsonl", [{**x, "rank": 3} for x in recs])
    r = run_cli(run, "--config", "c", "--gpus", "4")
    assert one_row(r)["steps"] == "20"
    assert ("rank 3's last record is step 30, rank 0's step 20: rank 0 may have stopped early; "
            "the row covers its 20 steps only") in notes_of(r)


# ---------------------------------------------------------------- final loss, diverged


def test_diverged_run_leaves_final_loss_empty(tmp_path):
    run = launch(tmp_path)
    set_metric(run, "train/loss", lambda i, v: float("nan") if i > 27 else v)
    stale = launch_records()[26]["metrics"]["train/loss"]
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg", "final_loss": ""}
    assert notes_of(r) == [
        "dropped 3 non-finite values (loss 3)",
        f"loss is NaN or infinite on the last 3 steps that logged it (the run diverged?); "
        f"final_loss left empty, not the stale {stale:.6g} of step 27; pass --status fail if "
        "the run failed", MFU_NOTE]


def test_one_nan_loss_mid_run_keeps_the_final_loss(tmp_path):
    run = launch(tmp_path)
    set_metric(run, "train/loss", lambda i, v: float("inf") if i == 10 else v)
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}
    assert notes_of(r) == ["dropped 1 non-finite value (loss 1)", MFU_NOTE]


# ---------------------------------------------------------------- clock sanity


def _clock(run: Path, fn: Callable[[int, float], Any]) -> None:
    rewrite(run / "metrics-0.jsonl", lambda r: {**r, "timestamp": fn(
        r["metrics"]["train/iter"], r["timestamp"])} if is_step(r) else r)


def test_monotonic_clock_is_refused(tmp_path):
    run = launch(tmp_path)
    _clock(run, lambda i, t: t - 1795985000.0)  # seconds since boot
    first = launch_records()[0]["timestamp"] - 1795985000.0
    r = run_cli(run, "--config", "c")
    assert error_line(r) == (
        f"error: step timestamps cannot be the run's time: {first!r} "
        f"({format_timestamp(first)}) is before 2015 (a clock counting from boot, like "
        "time.monotonic?) (30 of 30 steps); pass --timestamp YYYY-MM-DDTHH:MM:SSZ")
    assert r.exit_code == 1
    ok = run_cli(run, "--config", "c", "--timestamp", "2026-11-29T22:19:13Z")
    assert one_row(ok)["timestamp"] == "2026-11-29T22:19:13Z"
    assert notes_of(ok)[0].startswith("ignored 30 of 30 step timestamps (")


def test_millisecond_timestamps_are_refused_as_such(tmp_path):
    run = launch(tmp_path)
    _clock(run, lambda i, t: t * 1000)
    line = error_line(run_cli(run, "--config", "c"))
    assert "looks like milliseconds since 1970, not Unix seconds (30 of 30 steps)" in line
    assert line.endswith("pass --timestamp YYYY-MM-DDTHH:MM:SSZ")


def test_future_timestamps_are_refused(tmp_path):
    run = launch(tmp_path)
    _clock(run, lambda i, t: t + 5 * 365 * 86400)
    line = error_line(run_cli(run, "--config", "c"))
    assert "is later than now (a skewed clock?) (30 of 30 steps)" in line


@pytest.mark.parametrize("skewed", [4102444800.0, 12.5])  # year 2100; seconds since boot
def test_one_skewed_first_record_is_not_the_row_timestamp(tmp_path, skewed):
    run = launch(tmp_path)
    _clock(run, lambda i, t: skewed if i == 1 else t)
    second = launch_records()[1]["timestamp"]
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg",
                          "timestamp": format_timestamp(second)}
    (note,) = [n for n in notes_of(r) if "timestamp" in n]
    assert note.startswith(f"step 1's timestamp {skewed!r} (")
    assert note.endswith(f"the row's timestamp is step 2's ({format_timestamp(second)}); "
                         "pass --timestamp to set it")


@pytest.mark.parametrize(("days", "skewed"), [(3, True), (1, False)])
def test_first_record_days_before_the_next_is_skewed(tmp_path, days, skewed):
    run = launch(tmp_path)
    _clock(run, lambda i, t: t - days * 86400 if i == 1 else t)
    recs = launch_records()
    used = recs[1 if skewed else 0]["timestamp"] - (0 if skewed else days * 86400)
    r = run_cli(run, "--config", "c", "--wall-time-sec", "2")
    assert one_row(r)["timestamp"] == format_timestamp(used)
    assert any(f"is {days} days before step 2's" in n for n in notes_of(r)) == skewed


def test_first_record_later_than_the_next_is_skewed(tmp_path):
    run = launch(tmp_path)
    _clock(run, lambda i, t: t + 3600 if i == 1 else t)
    recs = launch_records()
    r = run_cli(run, "--config", "c")
    assert one_row(r)["timestamp"] == format_timestamp(recs[1]["timestamp"])
    assert notes_of(r)[0] == (
        f"step 1's timestamp {format_timestamp(recs[0]['timestamp'] + 3600)} is later than "
        f"step 2's; the row's timestamp is step 2's ({format_timestamp(recs[1]['timestamp'])}); "
        "pass --timestamp to set it")


def test_missing_first_timestamp_is_noted(tmp_path):
    run = launch(tmp_path)
    _clock(run, lambda i, t: "2026-11-29 22:19" if i == 1 else t)
    second = launch_records()[1]["timestamp"]
    r = run_cli(run, "--config", "c")
    assert one_row(r)["timestamp"] == format_timestamp(second)
    assert notes_of(r)[0] == ("step 1's timestamp is missing or not a number; the row's timestamp "
                           f"is step 2's ({format_timestamp(second)}); pass --timestamp to set it")


@pytest.mark.parametrize(("skewed", "count"), [((10, 20), "2 step timestamps"),
                                               ((10,), "1 step timestamp")])
def test_a_few_skewed_later_records_are_ignored_with_a_note(tmp_path, skewed, count):
    run = launch(tmp_path)
    _clock(run, lambda i, t: 4102444800.0 if i in skewed else t)
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}
    assert notes_of(r)[0] == (f"ignored {count} before 2015 or later than now (e.g. "
                              "4102444800.0 (2100-01-01T00:00:00Z) is later than now (a skewed "
                              "clock?))")


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
    assert note.startswith(f"step 0's timestamp {why}")
    assert note.endswith("the row's timestamp is step 1's (2026-11-29T22:06:41Z); "
                         "pass --timestamp to set it")


def test_only_out_of_range_timestamps_ask_for_the_flag(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "metrics-0.jsonl",
                [{**step(i, dt=1.0), "timestamp": 1e17} for i in range(3)])
    write_run_info(run)
    assert "pass --timestamp" in error_line(run_cli(run, "--config", "c"))


@pytest.mark.parametrize("bad", [15, 16])  # of 30: refused when more than half
def test_timestamps_refused_only_when_more_than_half_are_implausible(tmp_path, bad):
    run = launch(tmp_path)
    skewed = set(range(2, 31, 2)) | ({29} if bad == 16 else set())
    _clock(run, lambda i, t: 4102444800.0 if i in skewed else t)
    why = "4102444800.0 (2100-01-01T00:00:00Z) is later than now (a skewed clock?)"
    r = run_cli(run, "--config", "test/cfg")
    if bad == 16:
        assert error_line(r) == (f"error: step timestamps cannot be the run's time: {why} "
                                 "(16 of 30 steps); pass --timestamp YYYY-MM-DDTHH:MM:SSZ")
        assert r.exit_code == 1
        return
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}
    assert notes_of(r)[0] == (f"ignored 15 step timestamps before 2015 or later than now (e.g. "
                              f"{why})")


def test_skewed_first_step_with_timestamp_flag_is_silent(tmp_path):
    run = launch(tmp_path)
    _clock(run, lambda i, t: t + 3600 if i == 1 else t)
    r = run_cli(run, "--config", "test/cfg", "--timestamp", "2026-11-29T22:19:13Z")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg", "timestamp": "2026-11-29T22:19:13Z"}
    assert notes_of(r) == [MFU_NOTE]


def test_implausible_first_step_is_not_counted_twice(tmp_path):
    run = launch(tmp_path)
    _clock(run, lambda i, t: 12.5 if i == 1 else 4102444800.0 if i in (10, 20) else t)
    second = launch_records()[1]["timestamp"]
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg",
                          "timestamp": format_timestamp(second)}
    assert notes_of(r)[:2] == [
        "step 1's timestamp 12.5 (1970-01-01T00:00:12Z) is before 2015 (a clock counting from "
        f"boot, like time.monotonic?); the row's timestamp is step 2's "
        f"({format_timestamp(second)}); pass --timestamp to set it",
        # 2: steps 10 and 20, step 1 is in the note above (the example is the first bad one)
        "ignored 2 step timestamps before 2015 or later than now (e.g. 12.5 "
        "(1970-01-01T00:00:12Z) is before 2015 (a clock counting from boot, like "
        "time.monotonic?))"]


def test_skewed_step_after_a_missing_first_timestamp_is_named(tmp_path):
    """Regression: the note named step 1 and printed '?' for step 2's skewed timestamp."""
    t0 = 1795990000.0
    run = tmp_path / "run"
    recs = [step(i, dt=1.0, ts=t0) for i in range(1, 6)]
    del recs[0]["timestamp"]
    recs[1]["timestamp"] += 3600
    write_jsonl(run / "metrics-0.jsonl", recs)
    write_run_info(run)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["timestamp"] == format_timestamp(t0 + 3)
    assert notes_of(r) == [
        f"step 2's timestamp {format_timestamp(t0 + 3602)} is later than step 3's; the row's "
        f"timestamp is step 3's ({format_timestamp(t0 + 3)}); pass --timestamp to set it",
        NO_THROUGHPUT_NOTE]


def test_row_timestamp_from_a_step_without_number(tmp_path):
    t0 = 1795990000.0
    run = tmp_path / "run"
    nameless = {**step(0, dt=1.0), "timestamp": t0 + 2}
    nameless["metrics"]["train/iter"] = float("nan")
    write_jsonl(run / "metrics-0.jsonl", [step(1, dt=1.0, ts=t0 + 3600), nameless])
    write_run_info(run)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["timestamp"] == format_timestamp(t0 + 2)
    assert (f"step 1's timestamp {format_timestamp(t0 + 3601)} is later than the next step's; "
            "the row's timestamp is a step without number's "
            f"({format_timestamp(t0 + 2)}); pass --timestamp to set it") in notes_of(r)


# ---------------------------------------------------------------- coverage


def test_every_10_steps_plus_the_last_one(tmp_path):
    """diffusion logging steps 0, 10, 20, 30 and its last step 39: ~40 steps, not ~48."""
    run = copy_run("diffusion-1rank", tmp_path)
    kept = rewrite(run / "metrics-0.jsonl", lambda r: r if r["metrics"]["train/step"] in
                   (0, 10, 20, 30, 39) else None)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    dts = [x["metrics"]["train/dt"] for x in kept]
    wall, head = gap_estimate([0, 10, 20, 30, 39], dts, 40)
    assert (row["wall_time_sec"], head) == (f"{wall:.3f}", 0)  # 9 + 9 + 9 + 8 in the gaps
    assert notes_of(r) == [  # and no step-time note
        f"wall_time_sec is estimated for all the steps: the 5 logged steps' {sum(dts):.3f} s "
        "plus 35 steps not logged, each gap at the mean of the logged step times that bound "
        "it, ~40 steps (logged every 10 steps, steps 0..39); pass --wall-time-sec for the "
        "job's real time", NO_THROUGHPUT_NOTE, MFU_NOTE]
