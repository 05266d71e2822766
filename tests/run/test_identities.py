"""Identities between a row's numbers (run/identities.py, run/devices.py).

tflops / (mfu / 100) is the device's peak: mfu logged as a fraction, tflops logged for
the whole job, or neither. The logged tokens/s against the tokens a step processed, its
dt, and the records' own clock: samples/s, tokens per step, an inflated rate. Each case
is a run built from a shipped one; the cells, the note and the cell left empty are exact.
"""

from __future__ import annotations

import statistics
from pathlib import Path

import numpy as np
import pytest
from helpers import (
    LAUNCH,
    MFU_NOTE,
    copy_run,
    edit_dist,
    expected_row,
    is_step,
    launch,
    launch_records,
    notes_of,
    one_row,
    read_records,
    rewrite,
    run_cli,
    set_metric,
    step,
    write_jsonl,
    write_run,
)

from ezpz_amsc.run.devices import (
    PEAK_MATCH,
    PEAK_MAX_TFLOPS,
    PEAK_MIN_TFLOPS,
    PEAKS,
    nearest,
    plausible_peak,
)
from ezpz_amsc.run.identities import (
    RATE_OVER_CLOCK_MAX,
    RATE_TIMER_OVER_SPAN_MAX,
    THROUGHPUT_CELLS,
    TOKENS_RATE_BAND_MIN,
    TOKENS_RATE_SCATTER,
    Finding,
    _clearly_nearer,
    _cumulative,
    identities,
    identity_band,
    logged_world_size,
    peak_finding,
    throughput_finding,
)
from ezpz_amsc.run.reduce import Reduced, SeriesStats

RUNS_DIR = Path(__file__).resolve().parents[2] / "examples" / "runs"

LAUNCH_ROW = expected_row(LAUNCH)

# ---------------------------------------------------------------- the device table


def test_the_table_is_ezpz_s_and_the_bounds_follow_from_it():
    assert {d.peak_tflops for d in PEAKS} == {
        989.0, 835.0, 756.0, 2250.0, 312.0, 183.0, 5000.0, 1300.0, 191.5, 340.8, 298.2}
    assert (PEAK_MIN_TFLOPS, PEAK_MAX_TFLOPS, PEAK_MATCH) == (18.3, 10000.0, 0.05)
    # an mfu logged as a fraction multiplies the peak by 100: out of bounds on every device
    assert all(d.peak_tflops * 100 > PEAK_MAX_TFLOPS for d in PEAKS)


@pytest.mark.parametrize(("tflops", "plausible"), [
    (18.3, True), (18.29, False), (10000.0, True), (10000.1, False)])
def test_plausible_peak_edges(tflops, plausible):
    assert plausible_peak(tflops) == plausible


@pytest.mark.parametrize(("tflops", "name", "off"), [
    (340.8, "Intel Max 1550 tile, 512 CUs", 0.0),
    (989.0 * 1.05, "NVIDIA H100 SXM", 0.05),  # 5 % above
    (989.0 / 1.05, "NVIDIA H100 SXM", 0.05),  # 5 % below: the same distance
    (283.0, "Intel Max 1550 tile, 448 CUs", 298.2 / 283.0 - 1),  # nearer than the A100's 312
])
def test_nearest_device_and_how_far(tflops, name, off):
    device, got = nearest(tflops)
    assert (device.name, round(got, 9)) == (name, round(off, 9))


# ---------------------------------------------------------------- tflops against mfu


def _peak_run(tmp_path: Path, mfu: float, tflops: float, gpus: int = 1) -> Path:
    """The launch run logging this mfu (percent) and tflops, with a 3 % wobble over its 30
    steps; on ``gpus`` ranks (its per-GPU throughput dropped, so no ratio disagrees)."""
    run = launch(tmp_path)

    def logged(rec):
        m = rec["metrics"]
        if is_step(rec):
            i = m["train/iter"]
            m["train/mfu"], m["train/tflops"] = mfu * (1 + i / 1000), tflops * (1 + i / 1000)
            if gpus > 1:
                del m["train/tps_per_gpu"]
        return rec

    rewrite(run / "metrics-0.jsonl", logged)
    edit_dist(run, WORLD_SIZE_IN_USE=str(gpus), world_size=str(gpus), GPUS_PER_NODE="12",
              NUM_NODES=str(-(-gpus // 12)))
    return run


def _implied(mfu: float, tflops: float) -> str:
    return (f"tflops / (mfu / 100) implies a {100 * tflops / mfu:,.0f} TFLOPS device (median "
            "of 30 steps)")


def _cells(r) -> tuple[str, str]:
    row = one_row(r)
    return row["mfu"], row["tflops"]


def _med(x: float) -> str:
    return f"{statistics.median(x * (1 + i / 1000) for i in range(2, 31)):.3f}"


def test_a_real_peak_publishes_both(tmp_path):
    r = run_cli(_peak_run(tmp_path, 13.8, 0.138 * 340.8), "--config", "c")
    assert _cells(r) == (_med(13.8), _med(0.138 * 340.8))
    assert notes_of(r) == []


@pytest.mark.parametrize("gpus", [1, 96])
def test_mfu_logged_as_a_fraction_is_left_empty(tmp_path, gpus):
    """0.138 beside 47 TFLOPS per Aurora tile: 34,058 TFLOPS, no device's; x 100, a tile's.
    On 96 tiles the job-total reading gives 354.8, 4 % from a tile: the fraction is nearer."""
    r = run_cli(_peak_run(tmp_path, 0.138, 47.0, gpus), "--config", "c")
    assert _cells(r) == ("", _med(47.0))
    assert notes_of(r)[-1:] == [
        f"{_implied(0.138, 47.0)}, above any accelerator's; every mfu is at most 1, and x 100 "
        "the peak is 340.6 TFLOPS, near 340.8 (Intel Max 1550 tile, 512 CUs): mfu was logged "
        "as a fraction, not a percentage; mfu left empty"]


def test_tflops_logged_for_the_whole_job_is_left_empty(tmp_path):
    """4,528 TFLOPS beside a per-GPU mfu of 13.8 % on 96 tiles: 341.8 per tile."""
    r = run_cli(_peak_run(tmp_path, 13.8, 4528.0, 96), "--config", "c")
    assert _cells(r) == (_med(13.8), "")
    assert notes_of(r)[-1:] == [
        f"{_implied(13.8, 4528.0)}, above any accelerator's; per GPU (96) it is 341.8 TFLOPS, "
        "near 340.8 (Intel Max 1550 tile, 512 CUs): tflops was logged for the whole job, not "
        "per GPU; tflops left empty"]


_NEITHER = ("{implied}, {side} any accelerator's (18.3 to 10,000 TFLOPS): mfu is not a "
            "percentage of one device's peak or tflops not one device's; mfu and tflops left "
            "empty")


@pytest.mark.parametrize(("mfu", "tflops", "gpus", "side"), [
    (0.1, 34.08, 100, "above"),  # both readings give 340.8 exactly: nothing says which
    (5.0, 600.0, 1, "above"),  # 12,000: not a fraction (5 > 1), one GPU
    (0.5, 60.0, 1, "above"),  # a fraction, but x 100 is 120: no listed device within 5 %
    (50.0, 5.0, 1, "below"),  # 10 TFLOPS
])
def test_an_implied_peak_nothing_explains_leaves_both_empty(tmp_path, mfu, tflops, gpus, side):
    r = run_cli(_peak_run(tmp_path, mfu, tflops, gpus), "--config", "c")
    assert _cells(r) == ("", "")
    assert notes_of(r)[-1] == _NEITHER.format(implied=_implied(mfu, tflops), side=side)


@pytest.mark.parametrize(("tflops", "noted"), [(100.0, False), (100.2, True)])
def test_the_upper_bound_is_ten_thousand(tmp_path, tflops, noted):
    """1 % mfu: 100 TFLOPS imply 10,000 exactly (allowed); 100.2, 10,020 (no device's)."""
    run = launch(tmp_path)  # both wobble, so tflops is a rate (not the same every step)
    set_metric(run, "train/mfu", lambda i, v: 1.0 * (1 + i / 1000))
    set_metric(run, "train/tflops", lambda i, v: tflops * (1 + i / 1000))
    r = run_cli(run, "--config", "c")
    assert _cells(r) == (("", "") if noted else (_med(1.0), _med(tflops)))


def test_an_mfu_of_zero_is_no_peak(tmp_path):
    """ezpz's "peak unknown": the identity is not checked, whatever tflops says."""
    r = run_cli(_peak_run(tmp_path, 0.0, 5000.0), "--config", "c")
    assert _cells(r) == ("", _med(5000.0))
    assert notes_of(r) == [MFU_NOTE]


# ---------------------------------------------------------------- tokens/s against tokens and dt


def _launch_with(tmp_path: Path, fn) -> Path:
    """The launch run (256 tokens a step, train/tps = 256 / dt) with each step's metrics
    passed through ``fn``."""
    run = launch(tmp_path)
    write_jsonl(run / "metrics-0.jsonl", [
        {**x, "metrics": fn(dict(x["metrics"]))} if is_step(x) else x
        for x in read_records(run / "metrics-0.jsonl")])
    return run


def _scaled(factor: float):
    def fn(m):
        m["train/tps"] *= factor
        m["train/tps_per_gpu"] *= factor
        return m
    return fn


def _too_low(ratio: str, scatter: str, below: str, needed: str, between: str, x: str,
             n: int = 30) -> str:
    return (f"train/tps x dt / tokens is {ratio} (median of {n} steps, scatter {scatter}): "
            f"{below} below 1 (a global count); at that rate the tokens between records take "
            f"{needed} s of the {between} s between them ({x}x): the records' clock cannot "
            "sustain so low a rate, train/tps is not the run's tokens per second (samples/s?); "
            "throughput left empty")


def _span() -> tuple[float, float]:
    """The launch run's summed dt of steps 2..30 and its records' span."""
    recs = launch_records()
    return (sum(x["metrics"]["train/dt"] for x in recs[1:]),
            recs[-1]["timestamp"] - recs[0]["timestamp"])


@pytest.mark.parametrize(("fn", "ratio"), [
    (_scaled(1 / 128), "0.007812"),  # samples per second of 128-token sequences
    (lambda m: {**m, "train/tps": 256.0, "train/tps_per_gpu": 256.0}, None),  # tokens a step
])
def test_a_rate_that_is_not_tokens_per_second_is_left_empty(tmp_path, fn, ratio):
    """Far below tokens / dt: at the logged rate the tokens would take far longer than the
    records' clock gives them."""
    r = run_cli(_launch_with(tmp_path, fn), "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg", "throughput_tokens_per_sec": "",
                          "throughput_tokens_per_sec_per_gpu": ""}
    summed, span = _span()
    recs = launch_records()
    if ratio is None:  # tokens per step: rate x dt / tokens is dt, the median step time
        dts = sorted(x["metrics"]["train/dt"] for x in recs)
        med = statistics.median(dts)
        ratio = f"{med:.4g}"
        scatter = statistics.median(abs(d - med) for d in dts) / med
        needed = 29.0
    else:
        scatter, needed = 0.0, summed * 128
    notes = notes_of(r)
    assert notes == [_too_low(ratio, f"{scatter:.1%}", f"{1 - float(ratio):.0%}",
                              f"{needed:.4g}", f"{span:.4g}", f"{needed / span:.3g}"),
                     MFU_NOTE]


@pytest.mark.parametrize(("factor", "kept"), [
    (1.049, True), (1.051, False), (1 / 1.049, True),  # within 5 %: the identity holds
    (1 / 1.4, True),  # 29 % below tokens / dt, and the clock sustains it (1.19x the span)
    (1 / 1.5, False),  # 1.27x: more than the clock gives
])
def test_the_band_is_five_percent_and_the_clock_decides_below(tmp_path, factor, kept):
    r = run_cli(_launch_with(tmp_path, _scaled(factor)), "--config", "c")
    tps = one_row(r)["throughput_tokens_per_sec"]
    want = float(LAUNCH_ROW["throughput_tokens_per_sec"]) * factor
    assert (tps != "") == kept
    if kept:
        assert abs(float(tps) - want) < 0.01
    summed, span = _span()
    if factor == 1.051:
        assert notes_of(r)[0] == (
            "train/tps x dt / tokens is 1.051 (median of 30 steps, scatter 0.0%): 5% above 1 (a "
            "global count), beyond the run's own scatter (band 5%): train/tps is not the run's "
            "tokens per second (timed over part of each step, samples/s, tokens per step?); "
            "throughput left empty")
    if factor == 1 / 1.4:
        needed = summed * 1.4
        assert notes_of(r)[0] == (
            "train/tps x dt / tokens is 0.7143 (median of 30 steps, scatter 0.0%): 29% below 1 "
            "(a global count): the rate is timed over more than dt (data loading outside dt?); "
            f"at that rate the tokens between records take {needed:.4g} s of the {span:.4g} s "
            f"between them ({needed / span:.0%}): the records' clock sustains it, published")
    if factor == 1 / 1.5:
        assert notes_of(r)[0] == _too_low("0.6667", "0.0%", "33%", f"{summed * 1.5:.4g}",
                                          f"{span:.4g}", f"{summed * 1.5 / span:.3g}")


def test_tokens_counted_per_rank_are_the_world_size_times_fewer(tmp_path):
    """fsdp_tp-2rank with train/tokens per rank (256, not 512): rate x dt / tokens is 2."""
    run = copy_run("fsdp_tp-2rank", tmp_path)
    rows = read_records(run / "metrics-0.jsonl")
    write_jsonl(run / "metrics-0.jsonl", [
        {**x, "metrics": {**x["metrics"], "train/tokens": 256}} if is_step(x) else x
        for x in rows])
    r = run_cli(run, "--config", "c")
    assert one_row(r)["throughput_tokens_per_sec"] == "3930.349"
    assert notes_of(r) == [MFU_NOTE]


def test_a_running_total_of_tokens_is_not_a_step_s_count(tmp_path):
    """train/tokens that grows every step (a tokens_seen under another name): the rate is
    checked as computed from dt instead, and stands."""
    def cumulative(m):
        m["train/tokens"] = 256 * m["train/iter"]
        return m

    r = run_cli(_launch_with(tmp_path, cumulative), "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}
    assert notes_of(r) == [MFU_NOTE]


# ---------------------------------------------------------------- the rate against the clock


def _accumulating(tmp_path: Path, spread: float, accum: int | None = 8,
                  tokens: bool = True, jitter: float = 0.0) -> Path:
    """Gradient accumulation timing only the last micro-batch: each record is ``spread``
    times its dt after the one before, and train/tps = tokens / dt (as ezpz's hf and a
    History loop compute it)."""
    recs = launch_records()
    t = recs[0]["timestamp"]
    out = []
    for k, x in enumerate(recs):
        m = dict(x["metrics"])
        if k:
            t += m["train/dt"] * spread
        wobble = 1 + (jitter if k % 2 else -jitter)
        m["train/tps"] = m["train/tps_per_gpu"] = 256 / m["train/dt"] * wobble
        if accum is not None:
            m["train/accum"] = accum
        if not tokens:
            del m["train/tokens"]
        out.append({**x, "timestamp": t, "metrics": m})
    run = launch(tmp_path)
    write_jsonl(run / "metrics-0.jsonl", out)
    return run


def _inflated(spread: float, accum: str, source: str) -> str:
    recs = launch_records()
    dts = [x["metrics"]["train/dt"] for x in recs]
    tps = statistics.median(256 / d for d in dts[1:])
    clock = 256 * 29 / (spread * sum(dts[1:]))
    return (f"train/tps ({tps:,.0f} tokens/s, the median) is {spread:.3g}x what the records' "
            f"clock sustains: 256 tokens per step ({source}) over the time between records is "
            f"{clock:,.0f} tokens/s{accum}; dt times part of each step (the last micro-batch?), "
            "so the logged rate is inflated; throughput left empty")


def test_a_rate_the_clock_cannot_sustain_is_left_empty(tmp_path):
    """dt covers 1/8 of the time between records and the rate is tokens / dt: 8 x too high.
    The logged train/accum is named; the step-time check notes the coverage too."""
    run = _accumulating(tmp_path, 8.0)
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r)["throughput_tokens_per_sec"] == ""
    assert one_row(r)["throughput_tokens_per_sec_per_gpu"] == ""
    notes = notes_of(r)
    assert notes[0].startswith("step times cover ")
    assert notes[1] == _inflated(8.0, "; train/accum is 8 (gradient accumulation)",
                                 "the logged tokens")


@pytest.mark.parametrize(("accum", "named"), [(1, ""), (None, "")])
def test_an_accumulation_count_of_one_is_no_evidence(tmp_path, accum, named):
    r = run_cli(_accumulating(tmp_path, 8.0, accum), "--config", "c")
    assert _inflated(8.0, named, "the logged tokens") in notes_of(r)


@pytest.mark.parametrize(("spread", "noted"), [
    (RATE_OVER_CLOCK_MAX * 0.98, False), (RATE_OVER_CLOCK_MAX * 1.02, True)])
def test_the_clock_allows_up_to_four_times_the_rate(tmp_path, spread, noted):
    r = run_cli(_accumulating(tmp_path, spread), "--config", "c")
    assert (one_row(r)["throughput_tokens_per_sec"] == "") == noted


def test_a_second_of_uncovered_time_at_least(tmp_path):
    """8x inflated, but the whole run is 0.2 s of records: under 1 s not covered."""
    recs = [step(i, dt=0.001, tps=256 / 0.001, tokens=256, loss=2.0) for i in range(1, 31)]
    for k, x in enumerate(recs):
        x["timestamp"] = 1795990000.0 + 0.008 * k
    r = run_cli(write_run(tmp_path / "run", recs), "--config", "c")
    assert one_row(r)["throughput_tokens_per_sec"] == "256000.000"


@pytest.mark.parametrize(("jitter", "checked"), [(0.0004, True), (0.0006, False)])
def test_without_tokens_a_rate_computed_from_dt_gives_the_tokens(tmp_path, jitter, checked):
    """No token count: rate x dt the same on every step (to 1e-3) gives 256 tokens a step;
    a rate that wobbles more was not computed from dt, and the clock says nothing of it."""
    r = run_cli(_accumulating(tmp_path, 8.0, tokens=False, jitter=jitter), "--config", "c")
    assert (one_row(r)["throughput_tokens_per_sec"] == "") == checked
    inflated = [n for n in notes_of(r) if "inflated" in n]
    assert len(inflated) == checked
    if checked:
        assert "256 tokens per step (train/tps x dt)" in inflated[0]


def test_only_a_per_gpu_rate_is_checked_times_gpus(tmp_path):
    run = _accumulating(tmp_path, 8.0)
    write_jsonl(run / "metrics-0.jsonl", [
        {**x, "metrics": {k: v for k, v in x["metrics"].items() if k != "train/tps"}}
        for x in read_records(run / "metrics-0.jsonl")])
    r = run_cli(run, "--config", "c")
    assert one_row(r)["throughput_tokens_per_sec_per_gpu"] == ""
    assert any(n.startswith("train/tps_per_gpu x 1 gpus (") for n in notes_of(r))


# ---------------------------------------------------------------- the identities, value by value
# Each function on a Reduced built by hand: the masks, the bounds and the readings are
# checked on the exact Finding, cell by cell and word by word.


def _red(n: int | None = None, *, counter: str | None = "train/iter", **cols) -> Reduced:
    """A Reduced whose series are ``cols`` (NaN where not given), one step per second
    unless ``ts`` is given, numbered from 1 unless ``step`` is."""
    n = n or len(next(iter(cols.values())))
    nan = np.full(n, np.nan)
    stats = {k: SeriesStats(None, 0, 0, 0, False, values=np.asarray(cols.get(k, nan), float))
             for k in ("mfu", "tflops", "tps", "tps_per_gpu", "dt")}
    for k in ("tps", "tps_per_gpu"):
        vals = stats[k].values[np.isfinite(stats[k].values)]
        stats[k].value = float(np.median(vals)) if vals.size else None
    return Reduced(n, None, None, None, stats,
                   step_values=np.asarray(cols.get("step", np.arange(1.0, n + 1)), float),
                   ts_values=np.asarray(cols.get("ts", np.arange(float(n))), float),
                   tokens_values=np.asarray(cols.get("tokens", nan), float), counter=counter)


_BOTH_EMPTY = ("tflops / (mfu / 100) implies a {peak} TFLOPS device (median of {n} steps), "
               "{side} any accelerator's (18.3 to 10,000 TFLOPS): mfu is not a percentage of "
               "one device's peak or tflops not one device's; mfu and tflops left empty")


def test_only_steps_with_both_finite_and_positive_imply_a_peak():
    """Four steps imply 1 TFLOPS; each other step lacks one of the two (inf, NaN, 0):
    counted, it would change the count of steps or the median."""
    inf, nan = np.inf, np.nan
    mfu = [50.0, 50.0, 50.0, 0.5, inf, 50.0, 0.0, 50.0, nan, 50.0]
    tflops = [0.5, 0.5, 0.5, 0.005, 0.5, inf, 0.5, 0.0, 0.5, nan]
    got = peak_finding(_red(mfu=mfu, tflops=tflops), 1, None, 1)
    assert got == Finding(frozenset({"mfu", "tflops"}),
                          _BOTH_EMPTY.format(peak="1", n=4, side="below"))


def test_no_step_with_both_is_no_finding():
    assert peak_finding(_red(mfu=[0.0, 50.0], tflops=[5.0, 0.0]), 8, None, 1) == Finding()


def test_an_mfu_of_exactly_one_can_be_a_fraction():
    """mfu 1.0 (100 % as a fraction) beside 340.8 TFLOPS: x 100, a tile's peak exactly."""
    got = peak_finding(_red(mfu=[1.0, 1.0, 1.0], tflops=[340.8, 340.8, 340.8]), 1, None, 1)
    assert got == Finding(frozenset({"mfu"}), (
        "tflops / (mfu / 100) implies a 34,080 TFLOPS device (median of 3 steps), above any "
        "accelerator's; every mfu is at most 1, and x 100 the peak is 340.8 TFLOPS, near 340.8 "
        "(Intel Max 1550 tile, 512 CUs): mfu was logged as a fraction, not a percentage; mfu "
        "left empty"))


def test_tflops_for_a_job_of_two_gpus():
    """2 % mfu beside 204 TFLOPS on 2 GPUs: 10,200 implied, 5,100 per GPU (MI355X's 5,000)."""
    got = peak_finding(_red(mfu=[2.0, 2.0], tflops=[204.0, 204.0]), 2, None, 1)
    assert got == Finding(frozenset({"tflops"}), (
        "tflops / (mfu / 100) implies a 10,200 TFLOPS device (median of 2 steps), above any "
        "accelerator's; per GPU (2) it is 5,100.0 TFLOPS, near 5,000.0 (AMD Instinct MI355X): "
        "tflops was logged for the whole job, not per GPU; tflops left empty"))


@pytest.mark.parametrize(("off", "other", "nearer"), [
    (0.05, 1.0, True), (0.0501, 1.0, False),  # within PEAK_MATCH, the bound included
    (0.02, 0.0401, True), (0.02, 0.04, False),  # under half as far, strictly
    (0.02, 0.05, True), (0.02, 0.03, False),
])
def test_clearly_nearer(off, other, nearer):
    assert _clearly_nearer(off, other) is nearer


def test_the_legitimate_ratios():
    """1, gpus, gpus / tp (a whole number of groups), and 1000 x each (dt in ms)."""
    assert identities(1, None) == [
        (1.0, 1.0, "1 (a global count)", "the logged tokens"),
        (1000.0, 1.0, "1000 x 1 (a global count) (dt in milliseconds)", "the logged tokens")]
    assert [w[:2] for w in identities(48, 2)] == [
        (1.0, 1.0), (48.0, 48.0), (24.0, 24.0), (1000.0, 1.0), (48000.0, 48.0),
        (24000.0, 24.0)]
    assert identities(48, 2)[2][2:] == (
        "24 (gpus / tp 2: a count per data-parallel group)",
        "the logged tokens x 24 data-parallel groups")
    assert identities(4, 1) == identities(4, None) == identities(4, 4) == identities(4, 3)
    assert identities(4, None)[1][2:] == ("4 (gpus: a count per rank)",
                                          "the logged tokens x 4 ranks")


def test_a_rate_timer_has_the_room_the_step_time_check_gives_dt():
    from ezpz_amsc.run.crosschecks import STEP_TIME_OVER_SPAN_MAX

    assert RATE_TIMER_OVER_SPAN_MAX == STEP_TIME_OVER_SPAN_MAX == 1.25


def test_the_band_follows_the_scatter():
    """Three median absolute deviations over the median, at least 5 %."""
    assert (TOKENS_RATE_SCATTER, TOKENS_RATE_BAND_MIN) == (3.0, 0.05)
    assert identity_band(np.array([1.0, 1.0, 1.0]), 1.0) == (0.05, 0.0)
    band, scatter = identity_band(np.array([0.9, 1.0, 1.1]), 1.0)
    assert (round(band, 9), round(scatter, 9)) == (0.3, 0.1)
    band, scatter = identity_band(np.array([2.02, 2.0, 1.98]), 2.0)
    assert (round(band, 9), round(scatter, 9)) == (0.05, 0.01)


@pytest.mark.parametrize(("tokens", "cumulative"), [
    ([1.0, 2.0, 3.0], True), ([1.0, 2.0], False), ([1.0, 2.0, 2.0], False),
    ([3.0, 2.0, 1.0], False), ([1.0, 2.0, 3.0, 4.0], True)])
def test_a_running_total_grows_on_three_steps_or_more(tokens, cumulative):
    assert _cumulative(np.array(tokens)) is cumulative


_KEYS = {"tps": "train/tps", "tps_per_gpu": "train/tps_per_gpu"}
_INFLATED = ("{name} ({value} tokens/s, the median) is {over}x what the records' clock "
             "sustains: {tokens} tokens per step ({source}) over the time between records is "
             "{clock} tokens/s{accum}; dt times part of each step (the last micro-batch?), so "
             "the logged rate is inflated; throughput left empty")


def _throughput(red: Reduced, gpus: int = 1, accum: str = "") -> Finding:
    return throughput_finding(red, _KEYS, gpus, lambda: accum)


def test_only_steps_with_a_positive_finite_rate_dt_and_tokens_are_counted():
    """Three steps give rate x dt / tokens = 0.25 (each value at most 1); each other step
    lacks one of the three (inf, 0, NaN): counted, it would change the count or the median."""
    inf, nan = np.inf, np.nan
    red = _red(tps=[0.5, 0.5, 0.5, inf, 0.5, 0.0, 0.5, 0.5, 0.5, nan, 0.5],
               dt=[0.5, 0.5, 0.5, 0.5, inf, 0.5, 0.0, 0.5, 0.5, 0.5, nan],
               tokens=[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, inf, 0.0, 1.0, 1.0])
    # Below the identity: the clock judges the five intervals whose step has a positive
    # finite rate and token count (1 token at 0.5 tokens/s: 2 s each, in 1 s each).
    assert _throughput(red) == Finding(THROUGHPUT_CELLS, (
        "train/tps x dt / tokens is 0.25 (median of 3 steps, scatter 0.0%): 75% below 1 (a "
        "global count); at that rate the tokens between records take 10 s of the 5 s between "
        "them (2x): the records' clock cannot sustain so low a rate, train/tps is not the "
        "run's tokens per second (samples/s?); throughput left empty"))


def test_a_per_gpu_rate_times_gpus_against_the_clock():
    """train/tps_per_gpu 250 on 4 GPUs, 1,000 tokens a step in 1 s of dt, records 8 s apart."""
    red = _red(tps_per_gpu=[250.0] * 3, dt=[1.0] * 3, tokens=[1000.0] * 3, ts=[0.0, 8.0, 16.0])
    assert _throughput(red, 4, "; accum") == Finding(THROUGHPUT_CELLS, _INFLATED.format(
        name="train/tps_per_gpu x 4 gpus", value="1,000", over="8", tokens="1,000",
        source="the logged tokens", clock="125", accum="; accum"))


@pytest.mark.parametrize("tps", [[1000.0, 1000.0], [1000.0, 1000.0, 1001.0]])
def test_rate_times_dt_the_same_to_a_thousandth_gives_the_tokens(tps):
    """Two steps are enough; a spread of exactly 1e-3 of the median is still the same."""
    red = _red(tps=tps, dt=[1.0] * len(tps), ts=[8.0 * k for k in range(len(tps))])
    assert _throughput(red) == Finding(THROUGHPUT_CELLS, _INFLATED.format(
        name="train/tps", value="1,000", over="8", tokens="1,000", source="train/tps x dt",
        clock="125", accum=""))


def test_one_step_of_rate_times_dt_says_nothing():
    assert _throughput(_red(tps=[1000.0], dt=[1.0], ts=[0.0])) == Finding()


@pytest.mark.parametrize(("counter", "noted"), [("train/iter", False), (None, True)])
def test_the_clock_counts_the_steps_between_records(counter, noted):
    """Records every 2 steps, 8 s apart, 1 s a step: 4x (allowed). Without a step counter
    the records are one step apart: 8x."""
    red = _red(tps=[1000.0, 1000.0], dt=[1.0, 1.0], ts=[0.0, 8.0], step=[2.0, 4.0],
               counter=counter)
    assert (_throughput(red) != Finding()) == noted


def test_exactly_one_second_uncovered_is_enough():
    """256 tokens at 1,024 tokens/s need 0.25 s; the records are 1.25 s apart: 5x, 1 s."""
    red = _red(tps=[1024.0, 1024.0], dt=[0.25, 0.25], tokens=[256.0, 256.0], ts=[0.0, 1.25])
    assert _throughput(red) == Finding(THROUGHPUT_CELLS, _INFLATED.format(
        name="train/tps", value="1,024", over="5", tokens="256", source="the logged tokens",
        clock="205", accum=""))


def test_the_clock_judges_only_intervals_it_can():
    """Three intervals of 0.625 s whose 256 tokens at 2,048 tokens/s need 0.125 s (5x, 1.5 s
    not covered); each other interval lacks something: a timestamp (NaN), time (0 s, or
    backwards), a whole step (0 or 0.5 of one), a finite positive need (an infinite or
    missing rate). Judged, any of them would change the median, the seconds or the rate."""
    nan, inf = np.nan, np.inf
    red = _red(ts=[0.0, 0.625, 1.25, 1.875, nan, 3.125, 2.5, 3.125, 3.75, 4.5, 4.5, 5.0],
               step=[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 7.0, 7.5, 8.5, 9.5, 10.5],
               tps=[2048.0] * 9 + [inf, 2048.0, nan], dt=[0.125] * 12, tokens=[256.0] * 12)
    assert _throughput(red) == Finding(THROUGHPUT_CELLS, _INFLATED.format(
        name="train/tps", value="2,048", over="5", tokens="256", source="the logged tokens",
        clock="410", accum=""))


@pytest.mark.parametrize(("tps", "tps_per_gpu", "world"), [
    ([np.nan, 800.0, 1200.0], [100.0, 200.0, 200.0], 4),  # the first whole ratio, 4 (not 6)
    ([800.0], [200.0], 4),
    ([810.0, 10.0], [200.0, np.nan], None),  # 4.05: not a whole rank count
])
def test_logged_world_size_is_the_first_whole_ratio(tps, tps_per_gpu, world):
    assert logged_world_size(_red(tps=tps, tps_per_gpu=tps_per_gpu)) == world


def test_a_rate_without_a_reduced_value_is_named_without_one():
    """The per-GPU series reduced to nothing (too large for a float): the note names the
    rate alone."""
    red = _red(tps_per_gpu=[250.0] * 3, dt=[1.0] * 3, tokens=[1000.0] * 3, ts=[0.0, 8.0, 16.0])
    red.stats["tps_per_gpu"].value = None
    assert _throughput(red, 4) == Finding(THROUGHPUT_CELLS, _INFLATED.format(
        name="train/tps_per_gpu x 4 gpus", value="", over="8", tokens="1,000",
        source="the logged tokens", clock="125", accum="").replace(" ( tokens/s, the median)",
                                                                   ""))


def test_an_mfu_up_to_one_only_is_a_fraction():
    """mfu 1.5 beside 511.2 TFLOPS: x 100 would be a tile's peak, but 1.5 is no fraction."""
    got = peak_finding(_red(mfu=[1.5, 1.5], tflops=[511.2, 511.2]), 1, None, 1)
    assert got == Finding(frozenset({"mfu", "tflops"}), _BOTH_EMPTY.format(
        peak="34,080", n=2, side="above"))


def test_rate_times_dt_of_one_timed_step_says_nothing():
    """The first step has no dt: one rate x dt is no evidence the rate came from dt."""
    red = _red(tps=[1000.0, 1000.0], dt=[np.nan, 1.0], ts=[0.0, 8.0])
    assert _throughput(red) == Finding()


@pytest.mark.parametrize("ts", [[0.0, 0.95], [0.0, 0.95, np.nan]])
def test_under_a_second_uncovered_is_not_enough(ts):
    """9.5x inflated, but 0.95 s between records of which 0.1 s is covered: 0.85 s."""
    n = len(ts)
    red = _red(tps=[2560.0] * n, dt=[0.1] * n, tokens=[256.0] * n, ts=ts)
    assert _throughput(red) == Finding()


def test_the_tokens_of_several_steps_between_records():
    """Records every 2 steps, 16 s apart: 2,000 tokens in each interval, 125 tokens/s."""
    red = _red(tps=[1000.0] * 3, dt=[1.0] * 3, ts=[0.0, 16.0, 32.0], step=[2.0, 4.0, 6.0])
    assert _throughput(red) == Finding(THROUGHPUT_CELLS, _INFLATED.format(
        name="train/tps", value="1,000", over="8", tokens="1,000", source="train/tps x dt",
        clock="125", accum=""))


# ---------------------------------------------------------------- the recorded system's device
# The real fsdp_tp-2rank run moved to a listed system (MACHINE), logging a GPU's tflops and
# mfu (a 3 % wobble over its 30 steps); every outcome on both JSON readers.


@pytest.fixture(params=["default", "stdlib"])
def json_reader(request, monkeypatch):
    monkeypatch.setenv("EZPZ_AMSC_JSON", "" if request.param == "default" else "stdlib")
    return request.param


def _on_system(tmp_path: Path, machine: str, tflops, mfu, **dist) -> Path:
    """fsdp_tp-2rank on ``machine``: ``tflops(i, dt)`` and ``mfu(i, dt)`` on step i."""
    run = copy_run("fsdp_tp-2rank", tmp_path)

    def logged(rec):
        m = rec["metrics"]
        if is_step(rec):
            i, dt = m["train/iter"], m["train/dt"]
            m["train/tflops"], m["train/mfu"] = tflops(i, dt), mfu(i, dt)
        return rec

    rewrite(run / "metrics-0.jsonl", logged)
    edit_dist(run, MACHINE=machine, **dist)
    return run


def _fsdp_dts() -> list[float]:
    return [x["metrics"]["train/dt"] for x in read_records(
        RUNS_DIR / "fsdp_tp-2rank" / "metrics-0.jsonl") if is_step(x)]


def _wobbled(x: float) -> float:
    """The median of x (1 + i / 1000) over steps 2..30 (the warmup step left out)."""
    return statistics.median(x * (1 + i / 1000) for i in range(2, 31))


def _row_cells(r) -> tuple[str, str, str]:
    row = one_row(r)
    return row["system"], row["mfu"], row["tflops"]


def test_tflops_above_the_device_s_peak_on_one_node_is_the_node_s_total(tmp_path, json_reader):
    """Polaris, 1 node of 2 ranks: 300 TFLOPS per GPU x 2 = 600 'per GPU', above an A100's
    312: the node's total; mfu (96.2 %, 300 of 312) checks out against tflops / 2."""
    run = _on_system(tmp_path, "Polaris", lambda i, dt: 600.0 * (1 + i / 1000),
                     lambda i, dt: 300.0 / 312.0 * 100 * (1 + i / 1000))
    r = run_cli(run, "--config", "c")
    assert _row_cells(r) == ("Polaris", f"{_wobbled(300.0 / 312.0 * 100):.3f}", "")
    assert notes_of(r) == [
        f"tflops {_wobbled(600.0):,.3f} (the median) is above the peak of Polaris's NVIDIA "
        "A100, 312 TFLOPS: no GPU does that, so it is not a per-GPU rate; / 2 GPUs per node "
        f"it is {_wobbled(600.0) / 2:,.3f}: the node's total (the whole job's: 1 node); "
        "tflops left empty"]


def test_tflops_above_the_peak_on_nodes_of_one_rank_is_the_job_s_total(tmp_path, json_reader):
    """Perlmutter, --nodes 2 (one rank per node): / 1 is still above, / 2 gpus is not."""
    run = _on_system(tmp_path, "perlmutter", lambda i, dt: 500.0 * (1 + i / 1000),
                     lambda i, dt: 250.0 / 312.0 * 100 * (1 + i / 1000))
    r = run_cli(run, "--config", "c", "--nodes", "2")
    assert _row_cells(r) == ("perlmutter", f"{_wobbled(250.0 / 312.0 * 100):.3f}", "")
    assert notes_of(r) == [
        f"tflops {_wobbled(500.0):,.3f} (the median) is above the peak of perlmutter's NVIDIA "
        f"A100, 312 TFLOPS: no GPU does that, so it is not a per-GPU rate; / 2 gpus it is "
        f"{_wobbled(500.0) / 2:,.3f}: the job's total; tflops left empty"]


def test_tflops_above_the_peak_even_per_gpu_of_the_job(tmp_path, json_reader):
    """2,000 on 2 A100s: 1,000 each is still above 312; nothing to check mfu against."""
    run = _on_system(tmp_path, "Polaris", lambda i, dt: 2000.0 * (1 + i / 1000),
                     lambda i, dt: 50.0 * (1 + i / 1000))
    r = run_cli(run, "--config", "c")
    assert _row_cells(r) == ("Polaris", f"{_wobbled(50.0):.3f}", "")
    assert notes_of(r) == [
        f"tflops {_wobbled(2000.0):,.3f} (the median) is above the peak of Polaris's NVIDIA "
        "A100, 312 TFLOPS: no GPU does that, so it is not a per-GPU rate, even / 2 gpus "
        f"({_wobbled(2000.0) / 2:,.3f}); tflops left empty"]


def test_at_the_peak_exactly_is_not_above_it(tmp_path, json_reader):
    """312 on an A100 (mfu 100 %) after a slower warmup step: not above the peak."""
    run = _on_system(tmp_path, "Polaris", lambda i, dt: 312.0 if i > 1 else 100.0,
                     lambda i, dt: 100.0 if i > 1 else 100.0 / 3.12)
    assert _row_cells(run_cli(run, "--config", "c")) == ("Polaris", "100.000", "312.000")


def test_a_system_not_listed_keeps_the_any_device_band(tmp_path, json_reader):
    """600 TFLOPS beside an MI300X's mfu on a system not listed: a real device's peak."""
    run = _on_system(tmp_path, "Sirius", lambda i, dt: 600.0 * (1 + i / 1000),
                     lambda i, dt: 600.0 / 1300.0 * 100 * (1 + i / 1000))
    r = run_cli(run, "--config", "c")
    assert _row_cells(r) == ("Sirius", f"{_wobbled(600.0 / 13.0):.3f}", f"{_wobbled(600.0):.3f}")
    assert notes_of(r) == []


def test_tflops_the_same_on_every_step_is_flops_per_step(tmp_path, json_reader):
    """Aurora: 20 TFLOP a step, mfu = 20 / dt / 340.8 x 100 (a rate): tflops empty, mfu
    kept (20 / dt / (mfu / 100) is a tile's peak)."""
    run = _on_system(tmp_path, "Aurora", lambda i, dt: 20.0,
                     lambda i, dt: 20.0 / dt / 340.8 * 100)
    r = run_cli(run, "--config", "c")
    dts = _fsdp_dts()
    mfu = statistics.median(20.0 / dt / 340.8 * 100 for dt in dts[1:])
    assert _row_cells(r) == ("Aurora", f"{mfu:.3f}", "")
    assert notes_of(r) == [
        f"tflops is 20 on every step while dt moves {min(dts):.4g}..{max(dts):.4g} s: a rate "
        "would move inversely with dt (tflops x dt the same), so it is the TFLOP of a step, a "
        "work, not TFLOP/s; tflops left empty"]


def test_a_rate_from_dt_is_a_rate(tmp_path, json_reader):
    """tflops x dt the same on every step (20 TFLOP / dt): a rate, published."""
    run = _on_system(tmp_path, "Aurora", lambda i, dt: 20.0 / dt,
                     lambda i, dt: 20.0 / dt / 340.8 * 100)
    r = run_cli(run, "--config", "c")
    dts = _fsdp_dts()[1:]
    assert _row_cells(r) == ("Aurora", f"{statistics.median(2000 / dt / 340.8 for dt in dts):.3f}",
                             f"{statistics.median(20.0 / dt for dt in dts):.3f}")
    assert notes_of(r) == []


def test_mfu_against_another_device_s_peak(tmp_path, json_reader):
    """Polaris, mfu against an H100's 989: mfu empty, the plausible tflops kept."""
    run = _on_system(tmp_path, "Polaris", lambda i, dt: 100.0 * (1 + i / 1000),
                     lambda i, dt: 100.0 / 989.0 * 100 * (1 + i / 1000))
    r = run_cli(run, "--config", "c")
    assert _row_cells(r) == ("Polaris", "", f"{_wobbled(100.0):.3f}")
    assert notes_of(r) == [
        "tflops / (mfu / 100) implies a 989.0 TFLOPS device (median of 30 steps), not "
        "Polaris's: 312 (NVIDIA A100) TFLOPS; it is NVIDIA H100 SXM's peak (989): mfu was "
        "computed against another device's peak, not Polaris's; mfu left empty"]


@pytest.mark.parametrize(("machine", "peak"), [("SunSpot", 298.2), ("Aurora", 340.8),
                                               ("Frontier", 191.5), ("Sophia", 312.0)])
def test_the_device_s_own_peak_holds(tmp_path, json_reader, machine, peak):
    run = _on_system(tmp_path, machine, lambda i, dt: 90.0 * (1 + i / 1000),
                     lambda i, dt: 90.0 / peak * 100 * (1 + i / 1000))
    r = run_cli(run, "--config", "c")
    assert _row_cells(r) == (machine, f"{_wobbled(9000.0 / peak):.3f}", f"{_wobbled(90.0):.3f}")
    assert notes_of(r) == []


def test_mfu_as_a_fraction_of_the_device_s_peak(tmp_path, json_reader):
    run = _on_system(tmp_path, "Aurora", lambda i, dt: 90.0 * (1 + i / 1000),
                     lambda i, dt: 90.0 / 340.8 * (1 + i / 1000))
    r = run_cli(run, "--config", "c")
    assert _row_cells(r) == ("Aurora", "", f"{_wobbled(90.0):.3f}")
    assert notes_of(r) == [
        "tflops / (mfu / 100) implies a 34,080.0 TFLOPS device (median of 30 steps), not "
        "Aurora's: 340.8 (Intel Max 1550 tile, 512 CUs) or 298.2 (Intel Max 1550 tile, 448 "
        "CUs) TFLOPS; every mfu is at most 1, and x 100 the peak is 340.8: mfu was logged as "
        "a fraction, not a percentage; mfu left empty"]


@pytest.mark.parametrize(("nodes", "whose", "n_notes"), [
    ("1", "the node's total (the whole job's: 1 node)", 1),  # 2 ranks on the one node
    ("2", "the job's total", None),                          # one rank on each of 2 nodes
])
def test_tflops_a_node_or_job_total_under_the_peak(tmp_path, json_reader, nodes, whose,
                                                   n_notes):
    """Polaris, 2 ranks: 100 TFLOPS is the total of 50 each (under 312 either way);
    mfu = 50 / 312: tflops / 2 is the A100's peak, and --nodes says whose total it is."""
    run = _on_system(tmp_path, "Polaris", lambda i, dt: 100.0 * (1 + i / 1000),
                     lambda i, dt: 50.0 / 312.0 * 100 * (1 + i / 1000))
    r = run_cli(run, "--config", "c", "--nodes", nodes)
    assert _row_cells(r) == ("Polaris", f"{_wobbled(5000.0 / 312.0):.3f}", "")
    assert notes_of(r)[-1] == (
        "tflops / (mfu / 100) implies a 624.0 TFLOPS device (median of 30 steps), not "
        f"Polaris's: 312 (NVIDIA A100) TFLOPS; / 2 it is 312.0: tflops is {whose}, not "
        "per GPU; tflops left empty")
    assert n_notes is None or len(notes_of(r)) == n_notes


def test_nothing_explains_the_implied_peak(tmp_path, json_reader):
    """Aurora, 500 implied: no tile's, no listed device's: both left empty."""
    run = _on_system(tmp_path, "Aurora", lambda i, dt: 100.0 * (1 + i / 1000),
                     lambda i, dt: 20.0 * (1 + i / 1000))
    r = run_cli(run, "--config", "c")
    assert _row_cells(r) == ("Aurora", "", "")
    assert notes_of(r) == [
        "tflops / (mfu / 100) implies a 500.0 TFLOPS device (median of 30 steps), not "
        "Aurora's: 340.8 (Intel Max 1550 tile, 512 CUs) or 298.2 (Intel Max 1550 tile, 448 "
        "CUs) TFLOPS, nor any listed device's: mfu is not a percentage of the device's peak "
        "or tflops not its rate; mfu and tflops left empty"]


# ---------------------------------------------------------------- identities by the run's scatter


def _tokens_run(tmp_path: Path, ratio, command: str | None = None, world: int = 2) -> Path:
    """fsdp_tp-2rank (train/tokens 512, global) whose train/tps is ``ratio(i)`` x tokens /
    dt, on ``world`` ranks; the per-GPU rate dropped (no world-size ratio to disagree)."""
    run = copy_run("fsdp_tp-2rank", tmp_path)

    def logged(rec):
        m = rec["metrics"]
        if is_step(rec):
            m["train/tps"] = ratio(m["train/iter"]) * m["train/tokens"] / m["train/dt"]
            del m["train/tps_per_gpu"]
        return rec

    rewrite(run / "metrics-0.jsonl", logged)
    edit_dist(run, WORLD_SIZE_IN_USE=str(world), world_size=str(world),
              **({"EZPZ_RUN_COMMAND": command} if command else {}))
    return run


def _tps_median(ratio) -> float:
    recs = [x for x in read_records(RUNS_DIR / "fsdp_tp-2rank" / "metrics-0.jsonl")
            if is_step(x)]
    return statistics.median(ratio(x["metrics"]["train/iter"]) * 512 / x["metrics"]["train/dt"]
                             for x in recs[1:])


_LAUNCH_TP = "mpiexec --np=4 --ppn=4 python3 -m ezpz.examples.fsdp_tp{} --batch-size 2"
_TP_RATE = _tps_median(lambda i: 2.0)


@pytest.mark.parametrize(("tp", "cells", "notes"), [
    # --tp 2: tps x dt / tokens = 2 = gpus / tp, a count per data-parallel group: published
    (" --tp 2", (f"{_TP_RATE:.3f}", f"{_TP_RATE / 4:.3f}"), [
        "throughput_tokens_per_sec_per_gpu derived as global / 4 gpus (no per-GPU throughput "
        "logged)", MFU_NOTE]),
    # without tp, 2 on four ranks is no identity
    ("", ("", ""), [
        "train/tps x dt / tokens is 2 (median of 30 steps, scatter 0.0%): 100% above 1 (a "
        "global count), beyond the run's own scatter (band 5%): train/tps is not the run's "
        "tokens per second (timed over part of each step, samples/s, tokens per step?); "
        "throughput left empty", MFU_NOTE]),
])
def test_a_ratio_of_two_on_four_ranks_is_an_identity_with_tp_2_only(tmp_path, json_reader, tp,
                                                                     cells, notes):
    run = _tokens_run(tmp_path, lambda i: 2.0, _LAUNCH_TP.format(tp), world=4)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert (row["throughput_tokens_per_sec"], row["throughput_tokens_per_sec_per_gpu"]) == cells
    assert notes_of(r) == notes


def test_the_band_widens_with_the_run_s_scatter(tmp_path, json_reader):
    """1.2 on average, +-10 % step by step (scatter 10 %, band 30 %): within it."""
    wobble = lambda i: 1.2 * (1.1 if i % 2 else 0.9)  # noqa: E731
    r = run_cli(_tokens_run(tmp_path, wobble), "--config", "c")
    assert one_row(r)["throughput_tokens_per_sec"] == f"{_tps_median(wobble):.3f}"


def test_consistently_twenty_percent_high_is_not_the_rate(tmp_path, json_reader):
    """1.2 on every step, +-0.1 %: outside a 5 % band."""
    steady = lambda i: 1.2 * (1.001 if i % 2 else 0.999)  # noqa: E731
    r = run_cli(_tokens_run(tmp_path, steady), "--config", "c")
    row = one_row(r)
    assert (row["throughput_tokens_per_sec"], row["throughput_tokens_per_sec_per_gpu"]) == (
        "", "")
    assert notes_of(r)[0] == (
        "train/tps x dt / tokens is 1.2 (median of 30 steps, scatter 0.1%): 20% above 1 (a "
        "global count), beyond the run's own scatter (band 5%): train/tps is not the run's "
        "tokens per second (timed over part of each step, samples/s, tokens per step?); "
        "throughput left empty")


# ---------------------------------------------------------------- tflops_finding, value by value


def _tflops(red: Reduced, gpus: int = 2, nodes: int = 1, system: str | None = "Polaris",
            value: float | None = None):
    from ezpz_amsc.run.identities import tflops_finding

    red.stats["tflops"].value = value
    return tflops_finding(red, gpus, nodes, system)


_WORK = ("tflops is {work} on every step while dt moves {lo}..{hi} s: a rate would move "
         "inversely with dt (tflops x dt the same), so it is the TFLOP of a step, a work, not "
         "TFLOP/s; tflops left empty")


def test_a_work_is_judged_on_steps_with_both_positive_and_finite():
    """0.5 TFLOP on the three steps timed (dt 0.5..2 s); each other step lacks one (a dt of
    0 or NaN, a tflops of inf or 0): counted, the work would not be the same on every step,
    or the per-GPU rates would hold a number where the step has none."""
    nan = np.nan
    finding, per_gpu = _tflops(_red(tflops=[0.5, 0.5, 0.5, 0.5, np.inf, 0.0, 0.5],
                                    dt=[0.5, 1.5, 2.0, 0.0, 1.0, 1.0, nan]))
    assert finding == Finding(frozenset({"tflops"}), _WORK.format(work="0.5", lo="0.5", hi="2"))
    np.testing.assert_array_equal(per_gpu, [1.0, 0.5 / 1.5, 0.25, nan, nan, nan, nan])


def test_two_steps_of_one_tflops_are_no_evidence_of_a_work():
    finding, per_gpu = _tflops(_red(tflops=[0.5, 0.5], dt=[1.0, 2.0]))
    assert finding == Finding()
    np.testing.assert_array_equal(per_gpu, [0.5, 0.5])


@pytest.mark.parametrize(("tflops", "dt", "work"), [
    ([1000.0, 1000.0, 999.0], [100.0, 100.0, 101.0], True),  # both spreads exactly at bound
    ([1000.0, 999.0, 999.0], [100.0, 100.0, 101.0], False),  # 1/999 of the median: over
    ([1000.0, 1000.0, 998.0], [100.0, 100.0, 101.0], False),  # 2/1000 below the top
    ([1000.0, 1000.0, 1000.0], [100.0, 100.0, 100.95], False),  # dt moves under 1/100
])
def test_the_same_to_a_thousandth_while_dt_moves_a_hundredth(tflops, dt, work):
    finding, _ = _tflops(_red(tflops=tflops, dt=dt))
    assert (finding != Finding()) is work


@pytest.mark.parametrize(("gpus", "nodes", "value", "said"), [
    # 624 on 2 A100s of one node: / 2 is the peak exactly, the bound included
    (2, 1, 624.0, "/ 2 GPUs per node it is 312.000: the node's total (the whole job's: 1 "
                  "node)"),
    # 8 ranks on 2 nodes, 4 each: the node's total, and not the whole job's
    (8, 2, 1248.0, "/ 4 GPUs per node it is 312.000: the node's total"),
    # one rank a node: / 1 is still above; / 2 gpus is the job's total
    (2, 2, 600.0, "/ 2 gpus it is 300.000: the job's total"),
])
def test_tflops_above_the_peak_is_the_smallest_total_under_it(gpus, nodes, value, said):
    red = _red(tflops=[value] * 3, dt=[1.0] * 3)
    finding, per_gpu = _tflops(red, gpus, nodes, value=value)
    assert finding == Finding(frozenset({"tflops"}), (
        f"tflops {value:,.3f} (the median) is above the peak of Polaris's NVIDIA A100, 312 "
        f"TFLOPS: no GPU does that, so it is not a per-GPU rate; {said}; tflops left empty"))
    k = int(said.split()[1])
    np.testing.assert_array_equal(per_gpu, [value / k] * 3)


# ---------------------------------------------------------------- _system_peak, value by value


@pytest.mark.parametrize(("mfu", "tflops", "cells", "said"), [
    # every mfu at most 1, the bound included: a fraction, x 100 a tile's peak
    (1.0, 340.8, {"mfu"}, "every mfu is at most 1"),
    # 1.5 is no fraction: nothing explains 34,080
    (1.5, 511.2, {"mfu", "tflops"}, "nor any listed device's"),
    # a fraction whose x 100 is no tile's (200): an MI250X GCD's 191.5, within 5 %
    (1.0, 2.0, {"mfu"}, "it is AMD Instinct MI250X, one GCD's peak"),
    # x 100 within the 5 % of a tile's 340.8 either way; x 99 or x 101 would not be
    (1.0, 340.8 * 1.045, {"mfu"}, "every mfu is at most 1"),
    (1.0, 340.8 / 1.045, {"mfu"}, "every mfu is at most 1"),
])
def test_an_mfu_fraction_on_a_listed_system(mfu, tflops, cells, said):
    got = peak_finding(_red(mfu=[mfu] * 3, tflops=[tflops] * 3), 12, "Aurora", 1)
    assert got.empty == frozenset(cells) and said in (got.note or "")


# ---------------------------------------------------------------- a rate against tokens / dt


_ABOVE = ("train/tps x dt / tokens is {ratio} (median of 3 steps, scatter 0.0%): {pct} above "
          "{what}, beyond the run's own scatter (band 5%): train/tps is not the run's tokens "
          "per second (timed over part of each step, samples/s, tokens per step?); throughput "
          "left empty")
_PER_RANK = "4 (gpus: a count per rank)"


def test_a_rate_above_the_per_rank_identity_says_how_far_above_it():
    """4,800 tokens/s x 1 s / 1,000 tokens on 4 ranks: 4.8, 20 % above 4."""
    red = _red(tps=[4800.0] * 3, dt=[1.0] * 3, tokens=[1000.0] * 3)
    assert _throughput(red, 4) == Finding(THROUGHPUT_CELLS, _ABOVE.format(
        ratio="4.8", pct="20%", what=_PER_RANK))


def test_at_the_band_s_edge_either_way_the_identity_holds():
    """4.2 = 4 x 1.05 and 4 / 1.05 exactly, each step 1 s of the clock's 1 s: nothing."""
    above = _red(tps=[4200.0] * 3, dt=[1.0] * 3, tokens=[1000.0] * 3)
    below = _red(tps=[4.0] * 3, dt=[1.0] * 3, tokens=[1.05] * 3)
    assert _throughput(above, 4) == _throughput(below, 4) == Finding()


_BELOW = ("train/tps x dt / tokens is 3.2 (median of {n} steps, scatter 0.0%): 20% below "
          f"{_PER_RANK}")


@pytest.mark.parametrize(("step", "ts", "taken"), [
    # records every 2 steps, 2.5 s apart: 2 x 4,000 tokens at 3,200 tokens/s take 2.5 s
    ([2.0, 4.0, 6.0], [0.0, 2.5, 5.0], "5 s of the 5 s between them (100%)"),
    # intervals the clock cannot judge: half a step, no time between the records
    ([2.0, 4.0, 6.0, 6.5, 8.5], [0.0, 2.5, 5.0, 6.0, 6.0], "5 s of the 5 s between them (100%)"),
    # 1.25 x the clock, the bound included
    ([2.0, 4.0, 6.0], [0.0, 2.0, 4.0], "5 s of the 4 s between them (125%)"),
])
def test_a_rate_below_the_identity_stands_when_the_clock_sustains_it(step, ts, taken):
    """3,200 tokens/s x 1 s / 1,000 tokens on 4 ranks: 3.2, 20 % below 4 (4,000 tokens a
    step): timed over more than dt, and the records' clock has room for it."""
    n = len(step)
    red = _red(tps=[3200.0] * n, dt=[1.0] * n, tokens=[1000.0] * n, step=step, ts=ts)
    assert _throughput(red, 4) == Finding(note=(
        f"{_BELOW.format(n=n)}: the rate is timed over more than dt (data loading outside "
        f"dt?); at that rate the tokens between records take {taken}: the records' clock "
        "sustains it, published"))


def test_a_rate_below_the_identity_with_no_clock_is_left_empty():
    nan = np.nan
    red = _red(tps=[3200.0] * 3, dt=[1.0] * 3, tokens=[1000.0] * 3, ts=[nan, nan, nan])
    assert _throughput(red, 4) == Finding(THROUGHPUT_CELLS, (
        f"{_BELOW.format(n=3)}, and no two records' timestamps to check it against; "
        "throughput left empty"))


def test_a_scattered_run_keeps_a_rate_within_its_own_band():
    """rate x dt / tokens of 2.4, 3.2 and 4.0 on 4 ranks: median 3.2, 20 % below 4, but the
    run's own scatter (0.8 / 3.2 = 25 %, a band of 75 %) covers it; the clock has room."""
    red = _red(tps=[2400.0, 3200.0, 4000.0], dt=[1.0] * 3, tokens=[1000.0] * 3)
    assert _throughput(red, 4) == Finding()
