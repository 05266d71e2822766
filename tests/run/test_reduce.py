"""Reducing the steps (run/reduce.py): order and attempts, warmup, the reducers,
impossible values, step coverage and the trend."""

from __future__ import annotations

import math

import numpy as np
import pytest
from helpers import (
    SUNSPOT_DT,
    SUNSPOT_TPS,
    error_line,
    notes_of,
    one_row,
    run_cli,
    step,
    write_run,
)
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ezpz_amsc.errors import AmscError
from ezpz_amsc.results.schema import CLOCK_SLACK_SEC, TIMESTAMP_MIN, dashboard_problems
from ezpz_amsc.run.reduce import (
    Timestamps,
    _first_timestamp,
    _pauses,
    median_of,
    median_sorted,
    percentile_sorted,
    ranks_per_step,
    reduce_steps,
    step_coverage,
    trend,
)
from ezpz_amsc.run.steps import SERIES, Steps

# ------------------------------------------------------------- the reducers and warmup


def test_sunspot_default_row_drops_warmup_and_takes_median(sunspot):
    row = one_row(run_cli(sunspot, "--config", "agpt-2b/bs1/seq2048/tp1"))
    assert float(row["throughput_tokens_per_sec"]) > 34_000
    assert row["throughput_tokens_per_sec"] == "34686.400"
    # No train/tps_per_gpu logged: derived as global / gpus.
    assert row["throughput_tokens_per_sec_per_gpu"] == f"{34686.4 / 12:.3f}"
    assert (row["system"], row["nodes"], row["gpus"]) == ("SunSpot", "1", "12")


def test_sunspot_mean_without_warmup_is_dragged_down(sunspot):
    row = one_row(run_cli(sunspot, "--config", "c", "--reducer", "mean", "--warmup", "0"))
    assert float(row["throughput_tokens_per_sec"]) < 30_000
    assert row["throughput_tokens_per_sec"] == f"{sum(SUNSPOT_TPS) / 6:.3f}"


def test_wall_time_is_sum_of_all_dt_including_warmup(sunspot):
    row = one_row(run_cli(sunspot, "--config", "c", "--warmup", "3"))
    assert row["wall_time_sec"] == f"{math.fsum(SUNSPOT_DT):.3f}"
    assert row["steps"] == "6"


@pytest.mark.parametrize("reducer,expected", [
    ("median", 34686.4), ("mean", sum(SUNSPOT_TPS[1:]) / 5), ("max", 34832.8),
    ("min", 34600.8), ("last", 34650.0),
])
def test_reducers(sunspot, reducer, expected):
    row = one_row(run_cli(sunspot, "--config", "c", "--reducer", reducer))
    assert row["throughput_tokens_per_sec"] == f"{expected:.3f}"


_finite = hnp.arrays(np.float64, st.integers(1, 40),
                     elements=st.floats(allow_nan=False, allow_infinity=False, width=64))


@pytest.mark.slow
@given(x=_finite)
def test_median_is_numpy_median(x):
    with np.errstate(over="ignore", invalid="ignore"):
        want = float(np.median(x))
    got = median_sorted(np.sort(x))
    assert got == want or (np.isnan(got) and np.isnan(want))
    with np.errstate(over="ignore", invalid="ignore"):
        fast = median_of(x)  # the linear-time one, for the intervals of every run
    assert fast == want or (np.isnan(fast) and np.isnan(want))


@pytest.mark.slow
@given(x=_finite, q=st.sampled_from([0, 10, 33.3, 50, 90, 100]))
def test_percentile_is_numpy_percentile(x, q):
    with np.errstate(over="ignore", invalid="ignore"):
        want = float(np.percentile(x, q))
    got = percentile_sorted(np.sort(x), q)
    assert got == want or (np.isnan(got) and np.isnan(want))


@pytest.mark.parametrize(("x", "q", "want"), [
    ([1.2, 3.0], 90, 2.82),  # a + (b - a) * t would give 2.8200000000000003
    ([1.2, 3.0], 10, 1.38),
    ([2.6, 8.3], 50, 5.45),  # t = 0.5 takes numpy's b - (b - a) * 0.5, not 5.450000000000001
    ([1.0, 2.0, 4.0], 100, 4.0), ([1.0, 2.0, 4.0], 50, 2.0), ([7.0], 10, 7.0),
])
def test_percentile_takes_numpys_formula_on_each_side(x, q, want):
    assert percentile_sorted(np.array(x), q) == want == float(np.percentile(x, q))


# ------------------------------------------------------------------ order and attempts


def test_records_sorted_by_step_then_timestamp(tmp_path):
    recs = [step(i, dt=1.0, tps=100.0 * i, loss=float(i)) for i in (3, 1, 2, 4)]
    run = write_run(tmp_path / "run", recs)
    r = run_cli(run, "--config", "c", "--reducer", "last")
    row = one_row(r)
    assert row["final_loss"] == "4.000000"
    assert row["throughput_tokens_per_sec"] == "400.000"
    assert row["timestamp"] == "2026-11-29T22:06:41Z"  # step 1's timestamp
    assert "out of order" in r.stderr


def _steps(step_values: list[float], ts: list[float]) -> Steps:
    s = Steps()
    for i, (k, t) in enumerate(zip(step_values, ts, strict=True)):
        s.step.append(k)
        s.counter.append(0)
        s.tokens.append(float("nan"))
        s.timestamp.append(1795990000.0 + t)
        for name in SERIES:
            s.series[name].append(float(i + 1))
    s.step_key = "train/iter"
    return s


@pytest.mark.parametrize("step_values,ts,order_note,attempts", [
    ([1, 2, 3, 4], [4, 3, 2, 1], False, 1),  # in order by step; timestamps do not matter
    ([1, 2, 2, 3], [1, 2, 3, 4], False, 2),  # a repeated step starts a second attempt
    ([1, 2, 2, 3], [1, 3, 2, 4], True, 2),  # tie broken by timestamp: swapped
    ([3, 1, 2], [1, 2, 3], True, 1),  # out of order, no repeat: one attempt, sorted
    ([1, float("nan"), 2], [1, 2, 3], True, 1),  # missing step sorts last
    ([1, 2, float("nan")], [1, 2, 3], False, 1),
])
def test_order_notes_and_attempts(step_values, ts, order_note, attempts):
    red = reduce_steps(_steps(step_values, ts), 0, "last")
    assert any("out of order" in n for n in red.notes) == order_note
    assert len(red.segments) == attempts
    finite = [k for k in step_values if k == k]
    assert [v for v in red.step_values if v == v] == sorted(finite)


# ------------------------------------------------------------------- impossible values


def test_all_step_times_nonpositive_is_an_error_naming_the_flag(tmp_path):
    run = write_run(tmp_path / "run", [step(i, dt=d) for i, d in enumerate([0, -2, 0], 1)])
    line = error_line(run_cli(run, "--config", "c"))
    assert "all 3 step times logged are zero or negative" in line
    assert "pass --wall-time-sec SECONDS" in line
    row = one_row(run_cli(run, "--config", "c", "--wall-time-sec", "9"))
    assert row["wall_time_sec"] == "9.000"


def test_only_negative_throughput_leaves_the_cell_empty_not_zero(tmp_path):
    run = write_run(tmp_path / "run", [step(i, dt=0.5, tps=-3.0) for i in range(1, 4)])
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert row["throughput_tokens_per_sec"] == row["throughput_tokens_per_sec_per_gpu"] == ""


def test_step_times_near_float_max_do_not_warn_or_print_inf(tmp_path, recwarn):
    run = write_run(tmp_path / "run", [step(i, dt=1.7e308, tps=1.7e308) for i in range(1, 4)])
    line = error_line(run_cli(run, "--config", "c", "--reducer", "mean"))
    assert "pass --wall-time-sec SECONDS" in line
    r = run_cli(run, "--config", "c", "--reducer", "mean", "--wall-time-sec", "5")
    row = one_row(r)
    assert row["throughput_tokens_per_sec"] == "" and dashboard_problems(row) == []
    assert "tps reduces to a value too large for a float; left empty" in notes_of(r)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


# --------------------------------------------------------- step coverage and the trend


@pytest.mark.parametrize(("steps", "want"), [
    (range(10, 301, 10), (30, 10, 300, 10, 300)),
    (range(0, 300, 10), (30, 0, 290, 10, 300)),
    ([*range(0, 100, 10), 99], (11, 0, 99, 10, 100)),  # the stride survives a final
    ([*range(10, 100, 10), 95], (10, 10, 95, 10, 95)),  # off-stride step (the last one)
    ([1, 2, 3, 4, 8, 9, 10], (7, 1, 10, 1, 10)),
    ([5, 15, 10, 15, 20], (4, 5, 20, 5, 20)),  # order and a repeated step do not matter
    (range(6, 40), None),  # contiguous from a late start
    ([1, 2, 3, 1, 2, 3], None),  # a restart, no gap
    ([0.5, 1.0, 5.0], None),  # not step numbers
    ([7], None),
    ([7, 7, 7], None),  # all records one step: no distance to judge
    ([2, 4, 6, 8], (4, 2, 8, 2, 8)),  # logged every 2nd step
    # plus a last one off the stride: the steps before the first count, up to a stride
    ([*range(5, 100, 10), 99], (11, 5, 99, 10, 99)),  # 4 before step 5
    ([*range(25, 100, 10), 99], (9, 25, 99, 10, 84)),  # 9 before step 25 (one stride)
    ([10, 20, 30, 40, 45], (5, 10, 45, 10, 45)),  # stride 10 (3 of 4), not the last 5
    ([1, 3], (2, 1, 3, 2, 4)),
    ([1, 2, 3, 5, 7, 9, 19], (7, 1, 19, 2, 20)),  # stride 2 (3 of 6), not the 1 of two
    ([1, 2], None),
    ([], None),
])
def test_step_coverage(steps, want):
    got = step_coverage(np.array(list(steps), dtype=float))
    if want is None:
        assert got is None
    else:
        assert (got.logged, got.first, got.last, got.stride, got.estimated_total) == want


@pytest.mark.parametrize(("second_after_sec", "used", "why"), [
    (2 * 86400.0, 0, None),  # two days between the first two steps: a long pause, kept
    (2 * 86400.0 + 1, 1, "is 2 days before step 2's"),  # more: the first step's clock is off
    (-1.0, 0, None),  # a second within the slack of the first
    (-1.5, 1, "is later than step 2's"),
    (2.5 * 86400.0, 1, "is 2 days before step 2's"),  # days rounded half to even
    (3.5 * 86400.0, 1, "is 4 days before step 2's"),
])
def test_first_timestamp_passes_over_a_skewed_first_step(second_after_sec, used, why):
    t0 = 1795990000.0
    s = _steps([1, 2, 3], [0.0, 0.0, 0.0])
    s.timestamp[0] = t0
    s.timestamp[1] = t0 + second_after_sec
    s.timestamp[2] = t0 + max(second_after_sec, 0.0) + 10.0
    red = reduce_steps(s, 0, "median", now=t0 + 5 * 86400.0)
    assert red.first_timestamp == s.timestamp[used]
    assert (red.timestamps.used_index, red.timestamps.skewed_first) == (used, why)


def test_trend_buckets_warmup_apart():
    x = np.array([100.0] + [10.0] * 4 + [float("nan")] * 2 + [20.0] * 3)
    short = trend(x, 1, width=60)
    assert short["warmup"] == [100.0] and len(short["used"]) == 9
    assert short["used"][4:6] == [None, None]
    long = trend(x, 1, width=4)  # 1 warmup glyph + 3 used glyphs of 3 steps
    assert long["warmup"] == [100.0]
    assert long["used"] == [10.0, 10.0, 20.0]  # nan-only steps left out of the mean
    assert long["steps_per_point"] == 3
    assert trend(x, 0, width=60)["warmup"] == []
    assert trend(x[:0], 1)["used"] == []


def test_trend_of_a_long_warmup_keeps_a_glyph_for_the_steps_used():
    t = trend(np.arange(1.0, 121.0), 118, width=60)  # 59 warmup glyphs, 1 for steps 119, 120
    assert (len(t["warmup"]), t["used"], t["steps_per_point"]) == (59, [119.5], 2)


def test_trend_draws_the_steps_used_after_any_warmup():
    # 199 of 200 steps warmup would round to all 60 glyphs: the step used got none.
    t = trend(np.arange(1.0, 201.0), 199, width=60)
    assert (len(t["warmup"]), t["used"], t["steps_per_point"]) == (59, [200.0], 1)


def test_ranks_per_step_is_unknown_for_zero_global_throughput():
    got = ranks_per_step(np.array([0.0, 200.0, 150.0]), np.array([100.0, 100.0, 100.0]))
    assert np.isnan(got[0]) and got[1] == 2.0 and np.isnan(got[2])


def test_trend_points_near_float_max_stay_finite():
    # A bucket's plain mean overflows to inf, which --format json cannot write.
    big = np.full(9, 1.7e308)
    assert trend(big, 0, width=3)["used"] == [1.7e308] * 3
    assert trend(np.array([1.7e308, 1.5e308]), 0, width=1)["used"] == [1.6e308]


@pytest.mark.parametrize(("step_values", "offsets", "why"), [
    ([1, 2], [0.0, -1.5], "is later than step 2's"),  # two timestamps are enough to compare
    ([1, 2.5, 3], [0.0, -1.5, 10.0], "is later than the next step's"),  # no whole step number
])
def test_first_timestamp_names_the_step_it_takes_instead(step_values, offsets, why):
    red = reduce_steps(_steps(step_values, offsets), 0, "median", now=1795990000.0 + 86400.0)
    assert red.first_timestamp == 1795990000.0 + offsets[1]
    assert (red.timestamps.used_index, red.timestamps.skewed_first) == (1, why)


NOW = 1795990000.0


# 2015-01-01T00:00:00Z and now + 10 min, written out: the test ids must not move with them
@pytest.mark.parametrize(("stamp", "implausible"), [
    (1420070400.0, 0), (1420070399.0, 3),
    (NOW + 600.0, 0), (NOW + 601.0, 3), (NOW + 1.0, 0),
])
def test_plausible_timestamps_at_the_window_edges(stamp, implausible):
    s = _steps([1, 2, 3], [0.0, 0.0, 0.0])
    for i in range(3):
        s.timestamp[i] = stamp
    red = reduce_steps(s, 0, "median", now=NOW)
    assert red.timestamps.implausible == implausible
    assert (TIMESTAMP_MIN, CLOCK_SLACK_SEC) == (1420070400.0, 600.0)
    assert red.first_timestamp == (None if implausible else stamp)


@pytest.mark.parametrize(("n_steps", "attempt", "chosen", "error"), [
    (2, "2", 2, None),
    (2, "3", None, "--attempt 3: the records hold 2 attempts; pass --attempt last or a number "
                   "from 1 to 2"),
    (1, "2", None, "--attempt 2: the records hold 1 attempt; pass --attempt last or a number "
                   "from 1 to 1"),
    (1, "0", None, "--attempt 0: the records hold 1 attempt; pass --attempt last or a number "
                   "from 1 to 1"),
    (1, "1", 1, None),
])
def test_attempt_numbers_at_their_range_edges(n_steps, attempt, chosen, error):
    s = _steps([1, 2, 3] * n_steps, [float(i) for i in range(3 * n_steps)])
    if error is not None:
        with pytest.raises(AmscError) as e:
            reduce_steps(s, 0, "last", attempt=attempt, now=NOW)
        assert str(e.value) == error
    else:
        red = reduce_steps(s, 0, "last", attempt=attempt, now=NOW)
        assert red.attempt == chosen and red.steps == 3
        assert red.stats["tps"].value == 3.0 * chosen  # the attempt's own last step


@pytest.mark.parametrize(("step_values", "step_key", "notes"), [
    ([1, 2, math.nan], "train/iter",
     ["1 of 3 steps has a non-finite train/iter; ordered by timestamp, last"]),
    ([1, 2, math.nan, math.nan], "train/iter",
     ["2 of 4 steps have a non-finite train/iter; ordered by timestamp, last"]),
    ([1, 2, math.nan], None, []),  # no counter at all: nothing to call missing
])
def test_missing_step_numbers_note_in_full(step_values, step_key, notes):
    s = _steps(step_values, [float(i) for i in range(len(step_values))])
    s.step_key = step_key
    red = reduce_steps(s, 0, "last", now=NOW)
    assert red.notes == notes
    assert (red.steps, red.not_steps) == (len(step_values), 0)


def test_impossible_values_note_names_each_series():
    s = _steps([1, 2, 3], [0.0, 1.0, 2.0])
    s.series["dt"][1] = -1.0
    s.series["tps"][2] = -5.0
    red = reduce_steps(s, 0, "median", now=NOW)
    assert red.notes == ["dropped 2 impossible values (step time <= 0 or negative "
                         "throughput/mfu/tflops: dt 1, tps 1)"]
    assert red.invalid == {"dt": 1, "tps": 1} and red.wall_time_sec == 4.0


def test_overflowing_step_time_sum_is_unknown_with_a_note():
    s = _steps([1, 2, 3], [0.0, 1.0, 2.0])
    for i in range(3):
        s.series["dt"][i] = 1.7e308
    red = reduce_steps(s, 0, "median", now=NOW)
    assert red.wall_time_sec is None
    assert "summed step time overflows a float; left unknown" in red.notes


def test_unknown_reducer_is_a_programming_error():
    with pytest.raises(ValueError) as e:
        reduce_steps(_steps([1], [0.0]), 0, "mode")
    assert str(e.value) == "unknown reducer 'mode'"


def test_records_none_of_which_carry_the_counter_reduce_to_no_steps():
    # Unreachable from the reader (step_key is a counter some record carried): the guard
    # still returns an empty result, not an index error on the first step.
    s = _steps([1, 2, 3], [0.0, 1.0, 2.0])
    for i in range(3):
        s.counter[i] = -1
    red = reduce_steps(s, 0, "median", now=NOW)
    assert (red.steps, red.not_steps, red.counter, red.first_timestamp) == (
        0, 3, "train/iter", None)


def test_every_loss_non_finite_leaves_no_stale_loss():
    s = _steps([1, 2, 3], [0.0, 1.0, 2.0])
    for i in range(3):
        s.series["loss"][i] = math.nan
    s.loss_nonfinite = [0, 1, 2]
    red = reduce_steps(s, 0, "median", now=NOW)
    assert (red.final_loss, red.loss_nonfinite_tail, red.stale_loss) == (None, 3, None)


def test_ranks_per_step_at_its_tolerance_and_range_edges():
    got = ranks_per_step(np.array([50.5, 10.2, 1e6, 1e6 + 1]), np.ones(4))
    # 50.5 is within 1% of 50 (0.5 <= 0.01 * 50); 10.2 is not within 1% of 10.
    assert got[0] == 50.0 and np.isnan(got[1]) and got[2] == 1e6 and np.isnan(got[3])


# ------------------------------------------------------------- exact values of the helpers


@pytest.mark.parametrize("n", [8, 10, 50, 10_000, 10_001, 4_096, 4_097])
def test_median_of_a_shuffled_array(n):
    """A partition puts only the positions asked for in place (8, 10 and 50 shuffled so
    that position mid - 1 is not, unless asked for; the long ones are partitioned, not
    sorted). The caller's array is left as it was unless ``overwrite`` is passed."""
    x = np.random.default_rng(n).permutation(n).astype(float)
    kept = x.copy()
    want = (n - 1) / 2
    assert median_of(x) == want
    assert np.array_equal(x, kept)
    assert median_of(x, overwrite=True) == want
    assert not np.array_equal(x, kept)  # partitioned in place


def test_step_coverage_of_in_order_steps_with_a_repeat():
    """0, 10, 10, 20 is not strictly increasing: the repeat is counted once."""
    got = step_coverage(np.array([0.0, 10.0, 10.0, 20.0]))
    assert (got.logged, got.first, got.last, got.stride, got.estimated_total) == (
        3, 0, 20, 10, 30)


@pytest.mark.parametrize(("gap_sec", "gap_steps", "found"), [
    (61.0, 1, False),  # 60 s longer than the typical 1 s: not over a minute
    (61.5, 1, True),
    (62.0, 2, False),  # two steps: 2 s typical, 60 s longer
    (62.5, 2, True),
])
def test_a_pause_is_over_a_minute_longer_than_its_steps_take(gap_sec, gap_steps, found):
    step = np.arange(1.0, 21.0)
    step[10:] += gap_steps - 1
    ts = np.arange(20.0)
    ts[10:] += gap_sec - 1
    assert _pauses(step, ts) == ([(10, gap_sec)] if found else [])


def test_the_second_stamped_step_is_found_past_unstamped_ones():
    """The first step 3 days before the next stamped one (two records on, the one between
    has no timestamp): the first step's clock is off, the third's is used."""
    t = 1795990000.0
    ts = np.array([np.nan, t, np.nan, t + 3 * 86400.0, t + 3 * 86400.0 + 1])
    stamps = Timestamps()
    got = _first_timestamp(ts, np.array([1.0, 2.0, 3.0, 4.0, 5.0]), stamps)
    assert got == t + 3 * 86400.0
    assert (stamps.skewed_first, stamps.skewed_step, stamps.skewed_ts, stamps.used_index,
            stamps.used_step) == ("is 3 days before step 4's", 2.0, t, 3, 4.0)


# ------------------------------------------ attempts by evidence of a new process (issue 33)


def _real(name: str, tmp_path):
    from helpers import copy_run

    return copy_run(name, tmp_path)


def _steps_in(path) -> list[dict]:
    from helpers import read_records

    return [x for x in read_records(path) if x.get("rank", 0) == 0
            and any(type(v) in (int, float) for v in x["metrics"].values())]


def test_a_step_logged_in_two_records_is_one_step(tmp_path, json_paths):
    """A real History loop logging each step twice under one train/iter: the loss, then
    dt/tps/tokens. 60 records, 30 steps, merged with a note, never 31 attempts."""
    import statistics

    run = _real("history-split-records-1rank", tmp_path)
    recs = _steps_in(run / "20261202-075249.jsonl")
    assert len(recs) == 60
    timed = [x["metrics"] for x in recs if "train/dt" in x["metrics"]]
    losses = [x["metrics"]["train/loss"] for x in recs if "train/loss" in x["metrics"]]
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["steps"], row["wall_time_sec"], row["final_loss"]) == (
        "30", f"{sum(m['train/dt'] for m in timed):.3f}", f"{losses[-1]:.6f}")
    assert row["throughput_tokens_per_sec"] == (
        f"{statistics.median(m['train/tps'] for m in timed[1:]):.3f}")
    assert notes_of(r)[0] == ("merged 30 records into the record before each: the same "
                              "train/iter with other keys (one step logged in two records), "
                              "one step, not a retry")


def test_a_step_number_repeated_with_the_same_keys_is_still_a_retry(tmp_path):
    """Records of step 3 twice with the same keys (a retry from step 3): never merged."""
    recs = [step(i, dt=0.5, loss=1.0, tps=100.0) for i in (1, 2, 3, 4)]
    recs += [step(i, ts=1795990100.0, dt=0.5, loss=1.0, tps=100.0) for i in (3, 4, 5)]
    r = run_cli(write_run(tmp_path / "run", recs), "--config", "c")
    assert r.exit_code == 1
    assert "the records hold 2 attempts" in error_line(r)


def test_split_records_merge_value_by_value():
    """The joined record has the first record's timestamp and each series from the record
    holding it; a step logged once stays as it is."""
    from ezpz_amsc.run.reduce import split_records

    step_no = np.array([1.0, 1.0, 2.0, 3.0, 3.0])
    nan = np.nan
    cols = {k: np.full(5, nan) for k in SERIES}
    cols["loss"] = np.array([2.0, nan, 1.5, 1.0, nan])
    cols["dt"] = np.array([nan, 0.5, 0.4, nan, 0.3])
    assert split_records(step_no, cols).tolist() == [False, True, False, False, True]
    cols["dt"][3] = 0.2  # both records of step 3 hold dt: a retry, not a split
    assert split_records(step_no, cols).tolist() == [False, True, False, False, False]
    steps = Steps(rank=0)
    for i, (s, loss, dt) in enumerate([(1, 2.0, None), (1, None, 0.5), (2, 1.5, 0.4)]):
        steps.step.append(float(s))
        steps.counter.append(0)
        steps.timestamp.append(1795990000.0 + i)
        for k in SERIES:
            v = {"loss": loss, "dt": dt}.get(k)
            steps.series[k].append(nan if v is None else v)
    steps.step_key, steps.tokens_run = "train/iter", 3
    red = reduce_steps(steps, 0, "median", now=1795990100.0)
    assert red.steps == 2
    assert red.stats["dt"].values.tolist() == [0.5, 0.4]
    assert red.stats["loss"].values.tolist() == [2.0, 1.5]
    assert red.ts_values.tolist() == [1795990000.0, 1795990002.0]
    assert red.wall_time_sec == 0.9
    assert red.notes == ["merged 1 record into the record before it: the same train/iter with "
                         "other keys (one step logged in two records), one step, not a retry"]


def test_a_run_without_steps_counts_nothing_it_did_not_see():
    """No record: no evaluation, no boundary of one process, no record left out."""
    red = reduce_steps(Steps(rank=0), 0, "median")
    assert (red.steps, red.evaluations, red.in_process, red.not_steps, red.not_training,
            red.duplicates, red.mfu_over_100) == (0, 0, 0, 0, 0, 0, 0)


def test_nanogpt_style_evaluation_records_are_left_out(tmp_path, json_paths):
    """A real nanoGPT-style loop: every 20 iterations, before the step, an evaluation record
    {iter, train/loss, val/loss, lr, mfu}. Evaluations, not steps nor retries."""
    run = _real("nanogpt-style-1rank", tmp_path)
    recs = _steps_in(run / "metrics.jsonl")
    train = [x["metrics"] for x in recs if "val/loss" not in x["metrics"]]
    assert len(recs) - len(train) == 4 and len(train) == 61
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["steps"], row["wall_time_sec"], row["final_loss"]) == (
        "61", f"{sum(m['dt'] for m in train):.3f}", f"{train[-1]['loss']:.6f}")
    assert notes_of(r)[0] == ("left out 4 records with iter and val/loss beside training "
                              "keys, under the step number of the record beside each: "
                              "evaluation records, not training steps")


def test_an_evaluation_key_on_a_record_of_its_own_step_is_a_step(tmp_path):
    """val/loss logged in the training record itself (no repeated step): a step."""
    recs = [step(i, dt=0.5, loss=1.0, tps=100.0) for i in range(1, 6)]
    for x in recs:
        x["metrics"]["val/loss"] = 1.2
    r = run_cli(write_run(tmp_path / "run", recs), "--config", "c")
    assert one_row(r)["steps"] == "5"
    assert not [n for n in notes_of(r) if "evaluation" in n]


def test_a_checkpoint_pause_with_a_batch_ramp_is_one_attempt(tmp_path, json_paths):
    """A real 2-rank History loop: a 65 s save after step 14 logged as train/ckpt_save_seconds
    in step 15's record, the batch doubling after it (the rate 1.56x): one attempt."""
    import statistics

    run = _real("history-ckpt-pause-ramp-2rank", tmp_path)
    recs = [x["metrics"] for x in _steps_in(run / "metrics-0.jsonl")]
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["steps"], row["gpus"], row["wall_time_sec"]) == (
        "40", "2", f"{sum(m['train/dt'] for m in recs):.3f}")
    assert row["throughput_tokens_per_sec"] == (
        f"{statistics.median(m['train/tps'] for m in recs[1:]):.3f}")
    assert [n for n in notes_of(r) if "pause" in n] == [
        "1 pause between records far above the typical 0.0729 s per step: the longest 65.1 s "
        "between step 14 and step 15 (eval, checkpointing, a restart?); "
        "train/ckpt_save_seconds logged 65 s of checkpointing; wall_time_sec, the summed step "
        "time, leaves it out; pass --wall-time-sec SECONDS to count it"]


@pytest.mark.parametrize(("saved", "split"), [(65.0, False), (33.0, False), (32.0, True)])
def test_a_save_time_explains_a_pause_of_up_to_twice_its_length(tmp_path, saved, split):
    """The same run with the save logged as ``saved`` s: half the 65.1 s pause (32.6 s) or
    more explains it; less leaves a throughput change across an unexplained pause."""
    from helpers import rewrite

    run = _real("history-ckpt-pause-ramp-2rank", tmp_path)
    for rank in (0, 1):
        rewrite(run / f"metrics-{rank}.jsonl", lambda x: {**x, "metrics": {
            **x["metrics"], "train/ckpt_save_seconds": saved}}
            if "train/ckpt_save_seconds" in x["metrics"] else x)
    r = run_cli(run, "--config", "c")
    assert (r.exit_code == 1) == split
    if split:
        assert "throughput 1.56x higher after a 65.1 s pause" in error_line(r)


def test_a_pause_is_a_checkpoint_by_the_save_time_logged_beside_it(tmp_path):
    """Records at 10, 11, 40, 41, 42 s: the pause before the third record (29 s) is judged
    on the save times stamped from the record before it to the one after it (11..41 s):
    6 + 9 = 15 s, half of 30 s (the bound included) and not of 31 s. A save time outside
    that window (at 10 or 42 s) or of another rank does not count."""
    from helpers import write_jsonl

    from ezpz_amsc.run.reduce import _checkpointed

    p = tmp_path / "metrics.jsonl"
    write_jsonl(p, [
        {"timestamp": 10.0, "rank": 0, "metrics": {"train/iter": 1, "train/ckpt_seconds": 50.0}},
        {"timestamp": 11.0, "rank": 0, "metrics": {"train/iter": 2, "train/ckpt_seconds": 6.0}},
        {"timestamp": 40.0, "rank": 1, "metrics": {"train/iter": 3, "train/ckpt_seconds": 90.0}},
        {"timestamp": 40.0, "rank": 0, "metrics": {"train/iter": 3}},
        {"timestamp": 41.0, "rank": 0, "metrics": {"train/iter": 4, "train/ckpt_seconds": 9.0}},
        {"timestamp": 42.0, "rank": 0, "metrics": {"train/iter": 5, "train/ckpt_seconds": 70.0}},
    ])
    ts = np.array([10.0, 11.0, 40.0, 41.0, 42.0])
    explained = _checkpointed(Steps(rank=0, files_read=[p]), ts)
    assert explained(2, 30.0) is True
    assert explained(2, 30.000001) is False
    # the last record: the window ends at it
    assert _checkpointed(Steps(rank=0, files_read=[p]), ts[:4])(3, 18.0) is True  # 9 of 18
    # a record without a timestamp beside the pause: nothing to look in, even for 0 s
    ts_gap = np.array([10.0, np.nan, 40.0, 41.0, 42.0])
    assert _checkpointed(Steps(rank=0, files_read=[p]), ts_gap)(2, 0.0) is False
    ts_end = np.array([10.0, 11.0, 40.0, np.nan, 42.0])
    assert _checkpointed(Steps(rank=0, files_read=[p]), ts_end)(2, 0.0) is False
    # no save time in the window (rank 0's record at 40 s logs none): 0 s saved
    assert _checkpointed(Steps(rank=0, files_read=[p]), np.array([40.0, 40.0]))(1, 0.5) is False
    # the pause before the second record: 10..40 s, 50 + 6 s of the first two records
    assert _checkpointed(Steps(rank=0, files_read=[p]), ts)(1, 112.0) is True
    assert _checkpointed(Steps(rank=0, files_read=[p]), ts)(1, 112.1) is False


def _attempts(step, ts, since):
    from ezpz_amsc.run.reduce import find_segments

    segs, bounds, dropped = find_segments(np.array(step, float), np.array(ts, float),
                                          np.full(len(step), 2.0), since=since)
    return [(s.start, s.stop) for s in segs], bounds, dropped


def test_the_hook_s_own_records_are_one_attempt_and_the_ones_before_another():
    """``since``: the hook's process started then (records from 1 s before it count as its
    own). A restart inside its records is dropped; one at their start is kept; records
    of its own after another launch's start a new attempt, with no other evidence."""
    from ezpz_amsc.run.reduce import Boundary

    restart = Boundary(restart=(3.0, 1.0))
    # every record its own: the restart at the fourth is dropped, one attempt
    assert _attempts([1, 2, 3, 1, 2, 3, 4], [0, 1, 2, 3, 4, 5, 6], 0.0) == (
        [(0, 7)], [], 1)
    # its records start at the restart (9.5 s, 1 s before it began): the restart stands
    assert _attempts([1, 2, 3, 1, 2, 3, 4], [0, 1, 2, 9.5, 11, 12, 13], 10.5) == (
        [(0, 3), (3, 7)], [restart], 0)
    # its records start at the fourth, the restart at the fifth is inside them: dropped,
    # and the fourth starts an attempt of its own
    assert _attempts([1, 2, 3, 4, 1, 2, 3], [0, 1, 2, 10, 11, 12, 13], 10.0) == (
        [(0, 3), (3, 7)], [Boundary()], 1)
