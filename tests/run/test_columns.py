"""The cells (run/columns.py): each decided in one place, with the note that says why a
cell is derived, estimated or left empty.

Series that are mostly impossible values, rates from too few steps, ``--gpus`` over a
logged ratio that disagrees, the wall time of a run that logged every k-th step, one
timestamp on every record. The identities between cells are tests/run/test_identities.py.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest
from helpers import (
    EXPECTED,
    LAUNCH,
    MFU_NOTE,
    NO_THROUGHPUT_NOTE,
    RUNS,
    SUNSPOT_TPS,
    aurora_run,
    copy_run,
    error_line,
    expected_row,
    gap_estimate,
    launch,
    launch_records,
    notes_of,
    on_h100,
    one_row,
    read_records,
    rewrite,
    run_cli,
    set_metric,
    step,
    write_jsonl,
    write_run,
)

from ezpz_amsc.results.schema import HEADER
from ezpz_amsc.run.columns import INVALID_SHARE_MAX, MIN_RATE_STEPS

LAUNCH_ROW = expected_row(LAUNCH)
MFU_100 = ("dropped {n} mfu values above 100 % (FP8 measured against a BF16 peak, or "
           "fsdp_tp's tensor-parallel over-count): not a utilisation")


# ---------------------------------------------------------------- a partly invalid series


def test_the_share_is_ten_percent():
    assert (INVALID_SHARE_MAX, MIN_RATE_STEPS) == (0.10, 2)


@pytest.mark.parametrize(("over", "kept"), [
    ({5, 6, 7}, True),  # 3 of 30 steps: 10 %, a glitch
    ({5, 6, 7, 8}, False),  # 4 of 30: over 10 %
])
def test_mfu_above_100_on_more_than_a_tenth_of_the_steps_leaves_it_empty(tmp_path, over, kept):
    run = launch(tmp_path)
    set_metric(run, "train/mfu", lambda i, v: 130.0 if i in over else 40.0 + i / 10)
    on_h100(run)
    r = run_cli(run, "--config", "c")
    rest = [40.0 + i / 10 for i in range(2, 31) if i not in over]
    assert one_row(r)["mfu"] == (f"{statistics.median(rest):.3f}" if kept else "")
    note = MFU_100.format(n=len(over)) + ("" if kept else (
        "; mfu left empty: 4 of 30 steps dropped, over 10%, and the rest is not a "
        "measurement of the run"))
    assert notes_of(r) == [note]


def test_fp8_against_a_bf16_peak_on_17_of_29_steps_is_not_published(tmp_path):
    """The issue's case: the 12 steps left would give a median of 95.9, no utilisation."""
    run = launch(tmp_path)
    recs = launch_records()
    write_jsonl(run / "metrics-0.jsonl", [
        {**x, "metrics": {**x["metrics"], "train/mfu": 101.0 + k if k < 17 else 95.0 + k / 10}}
        for k, x in enumerate(recs[:29])])
    on_h100(run)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["mfu"], row["steps"]) == ("", "29")
    assert row["tflops"] != ""  # tflops is a measurement: ezpz's FP8 steps are real work
    assert notes_of(r)[0] == MFU_100.format(n=17) + (
        "; mfu left empty: 17 of 29 steps dropped, over 10%, and the rest is not a "
        "measurement of the run")


@pytest.mark.parametrize(("name", "column"), [
    ("tps", "throughput_tokens_per_sec"), ("tps_per_gpu", "throughput_tokens_per_sec_per_gpu"),
    ("mfu", "mfu"), ("tflops", "tflops"),
])
@pytest.mark.parametrize("negative", [1, 2])  # of 10 values: 10 % kept, 20 % empty
def test_negative_rates_beyond_a_tenth_leave_the_cell_empty(tmp_path, name, column, negative):
    vals = [-5.0] * negative + [40.0, 44.0, 42.0, 41.0, 43.0, 45.0, 39.0, 46.0, 38.0][negative - 1:]
    assert len(vals) == 10
    run = write_run(tmp_path / "run",
                    [step(i, dt=0.5, **{name: v}) for i, v in enumerate(vals, 1)])
    r = run_cli(run, "--config", "c", "--warmup", "0")
    rest = [v for v in vals if v > 0]
    assert one_row(r)[column] == (f"{statistics.median(rest):.3f}" if negative == 1 else "")
    notes = notes_of(r)
    assert (f"dropped {negative} impossible value{'s' if negative > 1 else ''} (step time <= 0 "
            f"or negative throughput/mfu/tflops: {name} {negative})") in notes
    empty = (f"{negative} of 10 {name} values are negative; {column} left empty: {negative} of "
             "10 steps dropped, over 10%, and the rest is not a measurement of the run")
    assert (empty in notes) == (negative == 2)


def test_every_rate_negative_leaves_the_cell_empty_with_a_short_note(tmp_path):
    run = write_run(tmp_path / "run", [step(i, dt=0.5, tflops=-3.0) for i in range(1, 4)])
    r = run_cli(run, "--config", "c")
    assert one_row(r)["tflops"] == ""
    assert "3 of 3 tflops values are negative; tflops left empty" in notes_of(r)


@pytest.mark.parametrize(("bad", "refused"), [(1, False), (2, True)])  # of 10 step times
def test_step_times_mostly_impossible_leave_the_wall_time_unknown(tmp_path, bad, refused):
    dts = [0.0] * bad + [0.5] * (10 - bad)
    run = write_run(tmp_path / "run", [step(i, dt=d) for i, d in enumerate(dts, 1)])
    r = run_cli(run, "--config", "c")
    if not refused:
        assert one_row(r)["wall_time_sec"] == f"{0.5 * 9:.3f}"
        return
    assert error_line(r) == (
        "error: cannot tell wall_time_sec (2 of 10 step times logged are zero or negative: the "
        "rest does not measure the run); pass --wall-time-sec SECONDS")
    assert r.exit_code == 1
    row = one_row(run_cli(run, "--config", "c", "--wall-time-sec", "7"))
    assert row["wall_time_sec"] == "7.000"


# ---------------------------------------------------------------- too few steps


def _first_steps(tmp_path: Path, n: int) -> Path:
    run = launch(tmp_path)
    write_jsonl(run / "metrics-0.jsonl", launch_records()[:n])
    return run


def test_one_step_left_by_a_race_is_refused(tmp_path):
    """An ezpz finalize race left 1 of 25 steps on disk: its rate is the warmup step's."""
    run = _first_steps(tmp_path, 1)
    r = run_cli(run, "--config", "c")
    assert error_line(r) == (
        "error: throughput_tokens_per_sec, throughput_tokens_per_sec_per_gpu and tflops would "
        "come from 0 steps after --warmup 1 (1 step logged): one step is not a measurement of "
        "the run's rate; if the run failed, pass --status fail (the rate cells are then left "
        "empty)")
    assert r.exit_code == 1
    assert "one step is not a measurement" in error_line(
        run_cli(run, "--config", "c", "--warmup", "0"))


def test_one_step_of_a_failed_run_leaves_the_rates_empty(tmp_path):
    r = run_cli(_first_steps(tmp_path, 1), "--config", "c", "--status", "fail")
    one = launch_records()[0]["metrics"]
    assert one_row(r) == {**LAUNCH_ROW, "config": "c", "status": "fail",
                          "wall_time_sec": f"{one['train/dt']:.3f}",
                          "throughput_tokens_per_sec": "",
                          "throughput_tokens_per_sec_per_gpu": "", "tflops": "",
                          "final_loss": f"{one['train/loss']:.6f}", "steps": "1"}
    assert notes_of(r) == [
        "throughput_tokens_per_sec, throughput_tokens_per_sec_per_gpu and tflops left empty: "
        "0 steps after --warmup 1 (1 step logged) is not a measurement of the run's rate",
        MFU_NOTE]


@pytest.mark.parametrize(("n", "warmup", "ok"), [
    (2, 1, False),  # 1 step after warmup
    (3, 1, True),  # 2 steps after warmup
    (2, 0, True),  # 2 steps: the user says the run had no warmup step
])
def test_two_steps_after_warmup_are_the_least(tmp_path, n, warmup, ok):
    run = _first_steps(tmp_path, n)
    r = run_cli(run, "--config", "c", "--warmup", str(warmup))
    if ok:
        tps = [x["metrics"]["train/tps"] for x in launch_records()[warmup:n]]
        assert one_row(r)["throughput_tokens_per_sec"] == f"{statistics.median(tps):.3f}"
        return
    assert error_line(r) == (
        "error: throughput_tokens_per_sec, throughput_tokens_per_sec_per_gpu and tflops would "
        "come from 1 step after --warmup 1 (2 steps logged): too few to measure the run's rate "
        "(the first step is usually a slow warmup); pass --warmup 0 if the run had no warmup "
        "step")


def test_a_warmup_longer_than_the_run_names_the_largest_that_works(sunspot):
    line = error_line(run_cli(sunspot, "--config", "c", "--warmup", "50"))
    assert line == (
        "error: throughput_tokens_per_sec would come from 0 steps after --warmup 50 (6 steps "
        "logged): too few to measure the run's rate (the first step is usually a slow "
        "warmup); pass --warmup 4 or less (--warmup 0 if the run had no warmup step)")
    row = one_row(run_cli(sunspot, "--config", "c", "--warmup", "4"))
    assert row["throughput_tokens_per_sec"] == f"{statistics.median(SUNSPOT_TPS[4:]):.3f}"


def test_the_largest_warmup_counts_the_steps_each_series_logged(tmp_path):
    """tps on steps 1, 2, 4 and 6 only: --warmup 3 leaves 2 of them, --warmup 4 one."""
    recs = [step(i, dt=0.5, **({"tps": 100.0 * i} if i in (1, 2, 4, 6) else {}))
            for i in range(1, 7)]
    run = write_run(tmp_path / "run", recs)
    assert error_line(run_cli(run, "--config", "c", "--warmup", "9")).endswith(
        "pass --warmup 3 or less (--warmup 0 if the run had no warmup step)")
    assert one_row(run_cli(run, "--config", "c", "--warmup", "3"))[
        "throughput_tokens_per_sec"] == "500.000"


def test_a_series_on_one_step_of_a_long_run_is_left_empty(tmp_path):
    """tflops logged once in 30 steps: not the run's rate, but the row stands."""
    run = launch(tmp_path)
    set_metric(run, "train/tflops", lambda i, v: v if i == 20 else "n/a")
    r = run_cli(run, "--config", "c")
    assert one_row(r) == {**LAUNCH_ROW, "config": "c", "tflops": ""}
    assert notes_of(r) == ["tflops left empty: 1 step after --warmup 1 (30 steps logged) is "
                           "not a measurement of the run's rate", MFU_NOTE]


# ---------------------------------------------------------------- --gpus over a logged ratio


def test_gpus_flag_over_a_disagreeing_ratio_makes_per_gpu_global_over_gpus(tmp_path):
    """An old tensor-parallel run logged the per-GPU figure of one tp group: the user
    passes --gpus 48, and per-GPU x gpus is the global rate again."""
    run = aurora_run(tmp_path, None, WORLD_SIZE_IN_USE=None, world_size=None)
    r = run_cli(run, "--config", "c", "--gpus", "48", "--nodes", "4")
    row = one_row(r)
    tpg = [x["metrics"]["train/tps_per_gpu"] for x in launch_records()[1:]]
    tps = statistics.median(t * 24 for t in tpg)
    assert (row["gpus"], row["throughput_tokens_per_sec"]) == ("48", f"{tps:.3f}")
    assert row["throughput_tokens_per_sec_per_gpu"] == f"{tps / 48:.3f}"
    assert notes_of(r) == [
        "--gpus 48 differs from the 24 ranks the logged throughput implies (train/tps / "
        "train/tps_per_gpu = 24); kept --gpus 48",
        f"throughput_tokens_per_sec_per_gpu is global / --gpus 48; the logged train/tps_per_gpu "
        f"({statistics.median(tpg):.3f}, for 24 ranks) was not used", MFU_NOTE]


def test_gpus_flag_that_agrees_with_the_ratio_keeps_the_logged_per_gpu(tmp_path):
    run = aurora_run(tmp_path, None)
    r = run_cli(run, "--config", "c", "--gpus", "24")
    tpg = [x["metrics"]["train/tps_per_gpu"] for x in launch_records()[1:]]
    assert one_row(r)["throughput_tokens_per_sec_per_gpu"] == f"{statistics.median(tpg):.3f}"
    assert not [n for n in notes_of(r) if "per_gpu" in n]


# ---------------------------------------------------------------- wall time of every k-th step


def test_a_slow_first_step_logged_counts_once_not_k_times(tmp_path):
    """Steps 1, 11, .., 91 logged (every 10th): step 1 took 4 s, the others 0.1 s. The 90
    steps not logged are estimated at their neighbours' step time, the warmup step standing
    for the first step after it, 0.1 s: 4 + 0.9 + 9.0, not 10 x 4.9."""
    recs = [step(i, dt=4.0 if i == 1 else 0.1, loss=2.0) for i in range(1, 101, 10)]
    for k, x in enumerate(recs):
        x["timestamp"] = 1795990000.0 + (4.0 if k else 0.0) + k * 1.0
    run = write_run(tmp_path / "run", recs)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["wall_time_sec"] == "13.900"
    assert ("wall_time_sec is estimated for all the steps: the 10 logged steps' 4.900 s plus "
            "90 steps not logged, each gap at the mean of the logged step times that bound it "
            "(9 before the first logged step at 0.1 s), ~100 steps (logged every 10 steps, "
            "steps 1..91); pass --wall-time-sec for the job's real time") in notes_of(r)


def test_wall_time_flag_wins_over_the_estimate(tmp_path):
    recs = [step(i, dt=0.5, loss=2.0) for i in range(10, 101, 10)]
    run = write_run(tmp_path / "run", recs)
    r = run_cli(run, "--config", "c", "--wall-time-sec", "61")
    assert one_row(r)["wall_time_sec"] == "61.000"
    assert notes_of(r) == [
        "wall_time_sec from --wall-time-sec; summed step time is 5.000 and covers 10 of ~100 "
        "steps (logged every 10 steps, steps 10..100)", NO_THROUGHPUT_NOTE]


# ---------------------------------------------------------------- one timestamp on every record


@pytest.mark.parametrize("same", [True, False])
def test_one_timestamp_on_every_record_is_noted(tmp_path, same):
    run = launch(tmp_path)
    recs = read_records(run / "metrics-0.jsonl")
    t0 = recs[0]["timestamp"]
    write_jsonl(run / "metrics-0.jsonl",
                [{**x, "timestamp": t0 if same or k < 2 else x["timestamp"]}
                 for k, x in enumerate(recs)])
    r = run_cli(run, "--config", "test/cfg", "--wall-time-sec", "2")
    assert one_row(r)["timestamp"] == LAUNCH_ROW["timestamp"]
    note = ("every step has the same timestamp (2026-11-29T22:19:13Z): the clock did not move "
            "between records, so it may be when the job started or the file was written, not "
            "the first step's time; it is the row's timestamp; pass --timestamp to set it")
    assert (note in notes_of(r)) == same
    flagged = run_cli(run, "--config", "c", "--wall-time-sec", "2", "--timestamp",
                      "2026-11-29T22:00:00Z")
    assert note not in notes_of(flagged)


def test_every_shipped_run_keeps_its_row_with_these_rules():
    for name, want in EXPECTED.items():
        r = run_cli(RUNS / name, "--config", "test/cfg")
        assert list(one_row(r).values()) == want.split(",")
        no_rate = want.split(",")[HEADER.index("throughput_tokens_per_sec")] == ""
        assert notes_of(r) == [NO_THROUGHPUT_NOTE] * no_rate + [MFU_NOTE], name


def test_a_counter_restarting_each_epoch_counts_every_epoch_s_steps(tmp_path):
    """Epochs 0..2, each logging steps 5, 10, 15, 20 of 20: ~60 steps, not ~20."""
    recs = [{"timestamp": 1795990000.0 + 2.5 * k, "rank": 0,
             "metrics": {"train/iter": s, "train/epoch": e, "train/dt": 0.5, "train/loss": 1.0}}
            for k, (e, s) in enumerate((e, s) for e in range(3) for s in (5, 10, 15, 20))]
    r = run_cli(write_run(tmp_path / "run", recs), "--config", "c")
    assert one_row(r)["wall_time_sec"] == "30.000"  # 12 x 0.5 + 48 x 0.5
    assert notes_of(r)[1:] == [(
        "wall_time_sec is estimated for all the steps: the 12 logged steps' 6.000 s plus 48 "
        "steps not logged, each gap at the mean of the logged step times that bound it (12 "
        "before the first logged step at 0.5 s), ~60 steps (logged every 5 steps, steps "
        "5..20); pass --wall-time-sec for the job's real time"), NO_THROUGHPUT_NOTE]


def test_no_estimate_for_step_numbers_beyond_a_float_leaves_the_wall_time_unknown(tmp_path):
    """Steps 10 and 1.7e308: more steps between them than a float holds. Never the sum of
    the two logged ones: the wall time is asked for."""
    recs = [step(10, dt=0.5, loss=1.0), step(11, dt=0.5, loss=1.0)]
    recs[1]["metrics"]["train/iter"] = 1.7e308
    r = run_cli(write_run(tmp_path / "run", recs), "--config", "c", "--warmup", "0")
    line = error_line(r)
    assert line.startswith("error: cannot tell wall_time_sec (the logged steps cover 2 of ~")
    assert line.endswith("and no estimate can be made for the others); pass --wall-time-sec "
                         "SECONDS")
    assert one_row(run_cli(write_run(tmp_path / "run", recs), "--config", "c", "--warmup", "0",
                           "--wall-time-sec", "8"))["wall_time_sec"] == "8.000"


def test_a_wall_time_and_a_timestamp_unknown_for_two_reasons(tmp_path):
    recs = [step(i, dt=0.0 if i <= 2 else 0.5) for i in range(1, 11)]
    for x in recs:
        del x["timestamp"]
    r = run_cli(write_run(tmp_path / "run", recs), "--config", "c")
    assert error_line(r) == (
        "error: cannot tell timestamp, wall_time_sec (the steps do not record it; 2 of 10 step "
        "times logged are zero or negative: the rest does not measure the run); pass "
        "--timestamp YYYY-MM-DDTHH:MM:SSZ --wall-time-sec SECONDS")


# ------------------------------------------- wall time under sparse logging (issue 33, item 1)


def _logged(run: Path, name: str) -> tuple[list[dict], list[float], list[float]]:
    """Rank 0's step records of a real run, their step numbers and their dt."""
    recs = [x for x in read_records(run / name)
            if x.get("rank", 0) == 0 and isinstance(x["metrics"].get("dt",
                                                                     x["metrics"].get("train/dt")),
                                                     float)]
    key = "iter" if "iter" in recs[0]["metrics"] else "train/iter"
    dts = [x["metrics"].get("dt", x["metrics"].get("train/dt")) for x in recs]
    return recs, [x["metrics"][key] for x in recs], dts


def test_a_drifting_step_time_is_estimated_gap_by_gap(tmp_path, json_paths):
    """A real minimal run, LOG_FREQ 3, its step time drifting 17 ms -> 0.42 s: each gap at
    the mean of the two logged step times beside it (the true step time is 7.508 s over
    steps 6..60), not the median (4.987 s, 34 % low)."""
    run = copy_run("minimal-logfreq3-drift-1rank", tmp_path)
    recs, steps, dts = _logged(run, "metrics.jsonl")
    assert steps[:2] == [6, 9] and steps[-1] == 60
    wall, head = gap_estimate(steps, dts, 57)
    span = recs[-1]["timestamp"] - recs[0]["timestamp"]
    assert wall - dts[0] - head * dts[1] <= span  # within the records' clock
    r = run_cli(run, "--config", "c")
    assert (one_row(r)["wall_time_sec"], head) == (f"{wall:.3f}", 2) == ("7.418", 2)
    assert notes_of(r)[0] == (
        f"wall_time_sec is estimated for all the steps: the 19 logged steps' {sum(dts):.3f} s "
        "plus 38 steps not logged, each gap at the mean of the logged step times that bound "
        f"it (2 before the first logged step at {dts[1]:.4g} s), ~57 steps (logged every 3 "
        "steps, steps 6..60); pass --wall-time-sec for the job's real time")
    median = (60 - 6 + 3) * statistics.median(dts)
    assert median < 0.7 * wall  # what the median made of it


@pytest.mark.parametrize(("name", "file", "skips", "sums"), [
    # train/iter counts micro-batches (7, 15, .., 239), every optimizer step logged
    ("history-microbatch-counter-1rank", "20261202-075212.jsonl", 7, "2.185 s of the 2.201 s"),
    # train/dt times the whole 5-step logging interval (5, 10, .., 60)
    ("history-dt-interval-1rank", "20261202-075235.jsonl", 4, "1.853 s of the 1.853 s"),
])
def test_gaps_the_logged_step_times_already_fill_are_no_steps(tmp_path, json_paths, name, file,
                                                              skips, sums):
    """Scaled for the numbers the counter skips, the wall time would be the stride times
    the records' clock: the gaps are no steps, the summed dt stands, and a note says so."""
    run = copy_run(name, tmp_path)
    recs, steps, dts = _logged(run, file)
    stride = steps[1] - steps[0]
    scaled, _ = gap_estimate(steps, dts, steps[-1] - steps[0] + stride)
    span = recs[-1]["timestamp"] - recs[0]["timestamp"]
    assert scaled > 4 * span
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert row["wall_time_sec"] == f"{sum(dts):.3f}"
    assert row["steps"] == str(len(recs))
    assert notes_of(r)[0] == (
        f"the step counter train/iter skips {skips} numbers between records, but the "
        f"{len(recs)} logged step times already fill the records' clock ({sums} between "
        "the first and last record): the counter counts micro-batches, or dt times the "
        "whole logging interval, not one step; wall_time_sec is the summed step time, not "
        f"{scaled:.4g} s scaled for the numbers skipped; pass --wall-time-sec for the job's "
        "real time")


def test_the_estimate_is_bounded_by_the_records_clock(tmp_path, json_paths):
    """Every 10th step logged at 1 s, 7 s between records: the 9 steps of a gap would take
    9 s at their neighbours' time, but the clock leaves them 6 s, more than half of it:
    sparse logging of faster steps, so the estimate is the clock's (the 63 s span, plus
    the first logged step and the 9 before it)."""
    recs = [step(i, ts=1795990000.0 + 7.0 * k - i, dt=1.0, loss=1.0)
            for k, i in enumerate(range(10, 101, 10))]
    r = run_cli(write_run(tmp_path / "run", recs), "--config", "c")
    assert one_row(r)["wall_time_sec"] == "73.000"
    assert notes_of(r)[0] == (
        "wall_time_sec is estimated for all the steps: the 10 logged steps' 10.000 s plus 90 "
        "steps not logged, each gap at the mean of the logged step times that bound it, "
        "would be 100 s, more than the records' clock allows; bounded by it: the 63 s "
        "between the first and last record plus 10 s for the first logged step and the 9 "
        "before it, ~100 steps (logged every 10 steps, steps 10..100); pass --wall-time-sec "
        "for the job's real time")


def test_gaps_the_clock_leaves_under_half_their_time_are_no_steps(tmp_path):
    """The same, but 5.4 s between records: the clock leaves each gap 4.4 s, under half of
    the 9 s its steps would take, so the counter does not count steps."""
    recs = [step(i, ts=1795990000.0 + 5.4 * k - i, dt=1.0, loss=1.0)
            for k, i in enumerate(range(10, 101, 10))]
    r = run_cli(write_run(tmp_path / "run", recs), "--config", "c")
    assert one_row(r)["wall_time_sec"] == "10.000"
    assert notes_of(r)[0].startswith("the step counter train/iter skips 9 numbers between "
                                     "records, but the 10 logged step times already fill")


# ------------------------------------------------ gradient accumulation on the launch line


@pytest.mark.parametrize(("command", "noted"), [
    ("accum.py --grad-accum 8", "--grad-accum 8"),
    ("hf.py --gradient_accumulation_steps=8", "--gradient_accumulation_steps 8"),
    ("GRAD_ACC=8 python3 accum.py", "GRAD_ACC 8"),
    ("['python3', 'hf.py', '--gradient_accumulation_steps', '4']",
     "--gradient_accumulation_steps 4"),
    ("accum.py --grad-accum 2", "--grad-accum 2"),  # the least accumulation
    ("accum.py --grad-accum 1", None),  # no accumulation
    ("accum.py --no-grad-accum 8", None),  # not the flag
    ("accum.py --accumulate 8", None),  # no "grad": too loose to read
])
def test_accumulation_asked_while_dt_covers_little_of_the_clock(tmp_path, json_paths, command,
                                                                noted):
    """The real accumulation run: dt times the last of 8 micro-batches, 11 % of the clock."""
    run = _accum_run(tmp_path, command=command)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["wall_time_sec"] == "4.188"
    said = _asked(r)
    want = [] if noted is None else [
        f"the launch command asks for gradient accumulation ({noted}) and the step times "
        f"cover {_cover(run):.0%} of the time between records: dt likely times one micro-batch "
        f"of the {noted.split()[-1]}, not the whole optimizer step; wall_time_sec is the summed "
        "step time; pass --wall-time-sec SECONDS for the job's real time"]
    assert said == want


def _accum_run(tmp_path, fn=None, command="accum.py --grad-accum 8"):
    """The real accumulation run (8 micro-batches), ``command`` its launch line, its
    records passed through ``fn``."""
    import json

    run = copy_run("history-accum8-1rank", tmp_path)
    info = json.loads((run / "run_info.json").read_text())
    info["Distributed"]["EZPZ_RUN_COMMAND"] = command
    (run / "run_info.json").write_text(json.dumps(info))
    if fn is not None:
        rewrite(run / "20261201-210557.jsonl", fn)
    return run


def _cover(run) -> float:
    """The share of the time between its first and last timed record the step times
    after the first cover."""
    recs = [x for x in read_records(run / "20261201-210557.jsonl") if "train/dt" in x["metrics"]]
    return sum(x["metrics"]["train/dt"] for x in recs[1:]) / (
        recs[-1]["timestamp"] - recs[0]["timestamp"])


def _asked(r) -> list[str]:
    return [n for n in notes_of(r) if n.startswith("the launch command asks")]


def test_no_accumulation_note_when_the_wall_time_is_given(tmp_path, json_paths):
    r = run_cli(_accum_run(tmp_path), "--config", "c", "--wall-time-sec", "30")
    assert one_row(r)["wall_time_sec"] == "30.000" and _asked(r) == []


def test_no_accumulation_note_when_dt_covers_most_of_the_clock(tmp_path, json_paths):
    """Each dt x 6 (the whole optimizer step): about 0.7 of the clock, over the half."""
    def whole(rec):
        if "train/dt" in rec["metrics"]:
            rec["metrics"]["train/dt"] *= 6
        return rec

    run = _accum_run(tmp_path, whole)
    assert 0.5 < _cover(run) < 1.0
    assert _asked(run_cli(run, "--config", "c")) == []


def test_no_accumulation_note_on_sparse_logging(tmp_path, json_paths):
    """Every other step logged: the gaps are estimated, dt's cover is not measured."""
    run = _accum_run(tmp_path, lambda rec: rec if rec["metrics"].get("train/iter", 1) % 2
                     else None)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] != "" and _asked(r) == []


def test_exact_counts_end_where_a_float_stops_telling_one_from_the_next():
    from ezpz_amsc.run.columns import EXACT_COUNT_MAX

    assert float(EXACT_COUNT_MAX) + 1 == float(EXACT_COUNT_MAX)
    assert float(EXACT_COUNT_MAX - 1) + 1 == EXACT_COUNT_MAX
    assert float(EXACT_COUNT_MAX - 1) != float(EXACT_COUNT_MAX)  # every count below: exact


# ------------------------------------------------ wall_time_estimate, value by value


def _sparse(step: list[float], dt: list[float], total: int, stride: int,
            ts: list[float] | None = None):
    """A Reduced of logged steps ``step`` (of ``total``, every ``stride``-th) by hand."""
    import numpy as np

    from ezpz_amsc.run.details import StepCoverage
    from ezpz_amsc.run.reduce import Reduced, SeriesStats

    d = np.asarray(dt, float)
    stats = {"dt": SeriesStats(None, int(np.isfinite(d).sum()), 0, 0, False, values=d)}
    return Reduced(len(step), None, float(np.nansum(d)), None, stats,
                   step_values=np.asarray(step, float),
                   coverage=StepCoverage(len(step), int(step[0]), int(step[-1]), stride, total),
                   ts_values=np.asarray(ts if ts is not None else [], float),
                   counter="train/iter")


def _estimate(red, warmup=0):
    from ezpz_amsc.run.columns import wall_time_estimate

    return wall_time_estimate(red, warmup)


_PLAIN = ("the {n} logged steps' {summed:.3f} s plus {missing} steps not logged, each gap at "
          "the mean of the logged step times that bound it{head}, ~{total} steps (logged "
          "{every}, steps {first}..{last})")


def test_each_gap_at_the_mean_of_its_neighbours_and_the_head_at_the_first():
    """Steps 3, 5, 7 at 1, 2, 3 s: the gaps 1.5 + 2.5 s, steps 1 and 2 at step 3's 1 s."""
    got = _estimate(_sparse([3, 5, 7], [1.0, 2.0, 3.0], 7, 2))
    assert got == (12.0, _PLAIN.format(
        n=3, summed=6.0, missing=4, head=" (2 before the first logged step at 1 s)", total=7,
        every="every 2 steps", first=3, last=7), True)


def test_a_warmup_step_stands_for_itself_only():
    """Step 3's 10 s is warmup: its gap and the two steps before it count step 5's 2 s."""
    got = _estimate(_sparse([3, 5, 7], [10.0, 2.0, 3.0], 7, 2), warmup=1)
    assert got == (15.0 + 2.0 + 2.5 + 2 * 2.0, _PLAIN.format(
        n=3, summed=15.0, missing=4, head=" (2 before the first logged step at 2 s)", total=7,
        every="every 2 steps", first=3, last=7), True)
    # a warmup as long as the run: no step trained, each stands for its own gaps
    assert _estimate(_sparse([3, 5, 7], [10.0, 2.0, 3.0], 7, 2), warmup=5)[0] == (
        15.0 + 6.0 + 2.5 + 2 * 10.0)


def test_a_step_without_dt_is_no_bound_of_a_gap():
    """Step 5 has no dt: the one gap, 5 steps, lies between steps 3 and 9 at 1 and 3 s."""
    got = _estimate(_sparse([3, 5, 9], [1.0, float("nan"), 3.0], 9, 2))
    assert got[0] == 4.0 + 5 * 2.0 + 2 * 1.0


@pytest.mark.parametrize(("total", "some"), [(3, True), (2, False)])
def test_one_step_missing_is_estimated_none_is_not(total, some):
    assert (_estimate(_sparse([1, 3], [1.0, 1.0], total, 2)) is not None) is some


def test_the_last_exact_count_of_missing_steps_is_estimated():
    from ezpz_amsc.run.columns import EXACT_COUNT_MAX

    assert _estimate(_sparse([1, 2], [1.0, 1.0], EXACT_COUNT_MAX + 2, 1)) is not None
    assert _estimate(_sparse([1, 2], [1.0, 1.0], EXACT_COUNT_MAX + 3, 1)) is None


_SKIPS = ("the step counter train/iter skips {skips} between records, but the 3 logged step "
          "times already fill the records' clock (2 s of the {span:.4g} s between the first "
          "and last record): the counter counts micro-batches, or dt times the whole logging "
          "interval, not one step; wall_time_sec is the summed step time, not 21 s scaled for "
          "the numbers skipped")


@pytest.mark.parametrize(("span", "want"), [
    # the 20 s the steps after the first take fit the clock exactly: the plain estimate
    (20.0, 21.0),
    # 11.5 s: the gaps' 18 s in the 9.5 s the logged steps leave, under twice: the clock's
    (11.5, 12.5),
    # 11 s: 18 s in 9 s, twice exactly: still the clock's
    (11.0, 12.0),
    # 10 s: 18 s in 8 s, over twice: the gaps are no steps, the summed 3 s stands
    (10.0, 3.0),
])
def test_the_clock_bounds_the_estimate_or_says_the_gaps_are_no_steps(span, want):
    """Steps 1, 11, 21 at 1 s (every 10th): 21 s estimated, 20 of them after the first."""
    red = _sparse([1, 11, 21], [1.0, 1.0, 1.0], 21, 10, ts=[100.0, 100.0 + span / 2,
                                                            100.0 + span])
    value, how, scaled = _estimate(red)
    assert (value, scaled) == (want, want != 3.0)
    if want == 21.0:
        assert how == _PLAIN.format(n=3, summed=3.0, missing=18, head="", total=21,
                                    every="every 10 steps", first=1, last=21)
    elif want == 3.0:
        assert how == _SKIPS.format(skips="9 numbers", span=span)
    else:
        assert how.startswith("the 3 logged steps' 3.000 s plus 18 steps not logged, each gap "
                              "at the mean of the logged step times that bound it, would be "
                              f"21 s, more than the records' clock allows; bounded by it: the "
                              f"{span:.4g} s between")


def test_a_counter_with_irregular_gaps_skips_numbers():
    """Steps 1, 2, 3 and 13 (the usual stride 1): 9 s of gap in 1 s of clock."""
    red = _sparse([1, 2, 3, 13], [1.0, 1.0, 1.0, 1.0], 13, 1, ts=[0.0, 1.0, 2.0, 4.0])
    value, how, scaled = _estimate(red)
    assert (value, scaled) == (4.0, False)
    assert how.startswith("the step counter train/iter skips numbers between records")


@pytest.mark.parametrize(("ts", "bounded"), [
    ([100.0, 106.0], True),  # two records: a span
    ([100.0, 100.0], False),  # no time between them: no span
    ([float("nan"), 105.0], False),
    ([100.0, float("inf")], False),
])
def test_the_clock_span_needs_two_records_with_time_between(ts, bounded):
    """Steps 1 and 11 at 1 s: 11 s estimated, 10 after the first; 6 s of clock bound it
    (the 9 s of the gap in the 5 s the logged step leaves: under twice)."""
    value, _, _ = _estimate(_sparse([1, 11], [1.0, 1.0], 11, 10, ts=ts))
    assert value == (7.0 if bounded else 11.0)


# ------------------------------------------------ _accumulation_asked, value by value


def _asked_of(ts: list[float], dt: list[float], count: int = 8) -> str:
    from types import SimpleNamespace

    import numpy as np

    from ezpz_amsc.run.columns import _accumulation_asked
    from ezpz_amsc.run.reduce import Reduced, SeriesStats

    stats = {"dt": SeriesStats(None, len(dt), 0, 0, False, values=np.asarray(dt, float))}
    red = Reduced(len(dt), None, None, None, stats, ts_values=np.asarray(ts, float))
    launch = SimpleNamespace(accumulation=(count, "--grad-accum"))
    return _accumulation_asked(SimpleNamespace(placement=SimpleNamespace(launch=launch), red=red))


def _cover_note(pct: str, count: int = 8) -> str:
    return (f"the launch command asks for gradient accumulation (--grad-accum {count}) and the "
            f"step times cover {pct} of the time between records: dt likely times one "
            f"micro-batch of the {count}, not the whole optimizer step; wall_time_sec is the "
            "summed step time")


@pytest.mark.parametrize(("ts", "dt", "pct"), [
    ([0.0, 10.0, 20.0], [1.0, 1.0, 1.0], "10%"),
    ([0.0, 10.0], [1.0, 1.0], "10%"),  # two steps: one interval, the least
    # only the intervals with both timestamps and the later step's dt: 1 s of 10 s
    ([0.0, float("nan"), 20.0, 30.0], [1.0, 1.0, 1.0, 1.0], "10%"),
    ([0.0, 10.0, 20.0, 30.0], [1.0, 1.0, float("nan"), 1.0], "10%"),
    # under a second of clock: still a clock
    ([0.0, 0.3, 0.6], [0.01, 0.01, 0.01], "3%"),
    # half the clock exactly: not under it
    ([0.0, 2.0, 4.0], [1.0, 1.0, 1.0], None),
])
def test_the_accumulation_note_judges_the_clock_dt_covers(ts, dt, pct):
    assert _asked_of(ts, dt) == ("" if pct is None else _cover_note(pct))


def test_a_gap_of_under_one_step_is_no_unlogged_step():
    """Steps 1, 2.5 and 5 at 1, 2 and 3 s: 0.5 is no whole step missing; the 1.5 between
    2.5 and 5 are, at 2.5 s, and the 0.5 left of the 2 missing lead at step 1's 1 s."""
    got = _estimate(_sparse([1.0, 2.5, 5.0], [1.0, 2.0, 3.0], 5, 1))
    assert got is not None and got[0] == 6.0 + 1.5 * 2.5 + 0.5 * 1.0


def test_a_counter_skipping_one_number_says_one():
    """Steps 1, 3, 5 at 1 s (every 2nd) with 1 s between the first and last record."""
    red = _sparse([1, 3, 5], [1.0, 1.0, 1.0], 5, 2, ts=[0.0, 0.5, 1.0])
    value, how, scaled = _estimate(red)
    assert (value, scaled) == (3.0, False)
    assert how.startswith("the step counter train/iter skips 1 number between records, but")
