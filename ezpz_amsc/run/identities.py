"""Identities between a row's numbers (docs/numbers.md, "Cross-checks before a row is
published"): what two of them imply about each other, against what is physically
possible.

- ``tflops`` per GPU is at most the peak of the recorded system's device, and a rate
  (it moves inversely with dt, not the same on every step);
- ``tflops / (mfu / 100)`` is the device's peak (:mod:`ezpz_amsc.run.devices`): the
  recorded system's, else some real accelerator's;
- the logged tokens/s times the step time is the tokens a step processed (1, gpus or
  gpus / tp times the logged count, within the run's own scatter), and the records' own
  clock must be able to sustain that rate;
- ``train/tps / train/tps_per_gpu`` is the world size.

Each function says what it found; :mod:`ezpz_amsc.run.columns` decides the cells.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from ezpz_amsc.run.reduce import (
    STEP_TIME_UNDER_SPAN_MIN,
    UNCOVERED_MIN_SEC,
    Reduced,
    median_sorted,
    ranks_per_step,
)

if TYPE_CHECKING:
    from ezpz_amsc.run.devices import System

THROUGHPUT_CELLS = frozenset({"throughput_tokens_per_sec", "throughput_tokens_per_sec_per_gpu"})
# rate x dt / tokens is 1 when the rate is tokens per second (fsdp_tp computes both
# from the same tokens and dt: exactly 1.0), the world size when the tokens are counted
# per rank, gpus / tp when they are counted per data-parallel group, 1000 times each with
# dt in milliseconds. The band around it is the run's own: a rate from another timer than
# dt scatters step by step, and a ratio off by more than that scatter is off on every step
# (a rate timed over part of the step: 20 % high, consistently). Three median absolute
# deviations are about two standard deviations of a normal scatter; 5 % at least: values
# logged rounded (tokens/s to an integer, dt to the millisecond on 20 ms steps: 2.5 %).
TOKENS_RATE_SCATTER = 3.0
TOKENS_RATE_BAND_MIN = 0.05
# rate x dt the same on every step, to this relative spread: the rate was computed as
# tokens / dt (exact to float rounding in ezpz's examples), giving the tokens per step.
RATE_FROM_DT_SPREAD = 1e-3
# A logged rate this many times what the clock sustains is inflated: the same bound
# as dt covering under a quarter of the time between records (the step-time check).
RATE_OVER_CLOCK_MAX = 1 / STEP_TIME_UNDER_SPAN_MIN
# A rate below tokens / dt is timed over more than dt; at most over the time between
# records, with the room for timer granularity that the step-time check gives the summed
# dt (crosschecks.STEP_TIME_OVER_SPAN_MAX, the same 1.25: a test holds them equal).
RATE_TIMER_OVER_SPAN_MAX = 1.25


@dataclass(frozen=True)
class Finding:
    """Cells an identity says are wrong, and the note that says why."""

    empty: frozenset[str] = field(default_factory=frozenset)
    note: str | None = None


def _median(x: np.ndarray) -> float:
    """The median of a scratch array of the caller's, which it sorts in place (no copy of a
    long run's column; every caller passes a fresh array, or one whose order it no longer
    needs)."""
    x.sort()
    return median_sorted(x)


def logged_world_size(red: Reduced) -> int | None:
    """``train/tps / train/tps_per_gpu`` as a whole rank count, when logged (one value: a
    change splits the records into attempts)."""
    ranks = ranks_per_step(red.stats["tps"].values, red.stats["tps_per_gpu"].values)
    whole = ranks[np.isfinite(ranks)]
    return int(whole[0]) if whole.size else None


# ---------------------------------------------------------------- tflops, mfu and the peak

# A tflops the same on every step to this relative spread, while dt moves by at least
# WORK_DT_SPREAD_MIN (10 times as much: a rate from dt would move as dt does), is the
# work of a step (TFLOP), not a rate (TFLOP/s): a rate x dt is what stays constant.
WORK_SPREAD_MAX = RATE_FROM_DT_SPREAD
WORK_DT_SPREAD_MIN = 10 * RATE_FROM_DT_SPREAD


def _spread(x: np.ndarray) -> float:
    """(max - min) / median of positive values (a fresh array: sorted in place)."""
    return float(x.max() - x.min()) / _median(x)


def _same_to(x: np.ndarray, spread: float) -> bool:
    """(max - min) / median at most ``spread``; a rate that moves is told without a sort
    ((max - min) / max is no larger: the median is at most the max)."""
    top = float(x.max())
    return float(top - x.min()) <= spread * top and _spread(x) <= spread


def tflops_finding(red: Reduced, gpus: int, nodes: int, system: str | None
                   ) -> tuple[Finding, np.ndarray | None]:
    """What the logged ``tflops`` is, before it meets mfu: a per-GPU rate (nothing found),
    the TFLOP of a step (the same on every step while dt moves), or, above the recorded
    system's device's peak, a node's or the job's total; never a per-GPU rate then.

    Returns the finding and the per-GPU rate of each step the series stands for (for the
    identity with mfu): the logged values, the work / dt, the total / GPUs it is the total
    of, or None when nothing says which.
    """
    st = red.stats
    tflops, dt = st["tflops"].values, st["dt"].values
    with np.errstate(all="ignore"):  # values near float max: inf, not a warning
        timed = np.isfinite(tflops) & np.isfinite(dt) & (tflops > 0) & (dt > 0)
        work_like = int(timed.sum()) >= 3 and _same_to(tflops[timed], WORK_SPREAD_MAX) and \
            _spread(dt[timed]) >= WORK_DT_SPREAD_MIN
    if work_like:
        work = _median(tflops[timed])
        lo, hi = float(dt[timed].min()), float(dt[timed].max())
        per_gpu = np.full(tflops.size, np.nan)
        per_gpu[timed] = tflops[timed] / dt[timed]
        return Finding(frozenset({"tflops"}), (
            f"tflops is {work:,.4g} on every step while dt moves {lo:.4g}..{hi:.4g} s: a rate "
            "would move inversely with dt (tflops x dt the same), so it is the TFLOP of a "
            "step, a work, not TFLOP/s; tflops left empty")), per_gpu
    value = st["tflops"].value
    if value is None or st["mfu"].all_zero:  # ezpz's mfu 0.0: not a device it (or the
        return Finding(), tflops  # table of systems) knows, a CPU; the table is not loaded
    from ezpz_amsc.run.devices import system_of

    sysdev = system_of(system)
    if sysdev is None or value <= (peak := sysdev.fastest.peak_tflops):
        return Finding(), tflops
    shown = (f"tflops {value:,.3f} (the median) is above the peak of {system}'s "
             f"{sysdev.fastest.name}, {peak:g} TFLOPS: no GPU does that, so it is not a "
             "per-GPU rate")
    for k, per, whose in _totals(gpus, nodes):
        if value / k <= peak:
            return Finding(frozenset({"tflops"}), (
                f"{shown}; / {k} {per} it is {value / k:,.3f}: {whose}; tflops left "
                "empty")), tflops / k
    return Finding(frozenset({"tflops"}), (
        f"{shown}, even / {gpus} gpus ({value / gpus:,.3f}); tflops left empty")), None


def _totals(gpus: int, nodes: int) -> list[tuple[int, str, str]]:
    """The totals a per-GPU rate logged too high may be, smallest first: (GPUs it is the
    total of, what they are, whose total). A total of one GPU is the rate itself, which
    the callers have found wrong already: no finding comes of it."""
    per_node = -(-gpus // max(nodes, 1))
    node = "the node's total" + (" (the whole job's: 1 node)" if nodes <= 1 else "")
    return [(per_node, "GPUs per node", node), (gpus, "gpus", "the job's total")]


def peak_finding(red: Reduced, gpus: int, system: str | None, nodes: int,
                 rate: np.ndarray | None = None) -> Finding:
    """``tflops / (mfu / 100)`` against the peak of the recorded system's device, or, for a
    system not listed, against the peaks real accelerators have.

    ``rate``: the per-GPU TFLOPS of each step (:func:`tflops_finding`; the logged tflops
    when not given). With a listed system, an implied peak within
    :data:`~ezpz_amsc.run.devices.PEAK_MATCH` of its device's holds. Otherwise the note
    names the cause: mfu logged as a fraction (every value at most 1, x 100 the device's
    peak: mfu left empty), tflops a node's or the job's total (divided by the GPUs per
    node or gpus, the device's peak: tflops left empty), mfu against another device's
    peak (mfu left empty), or nothing says which (both left empty).
    """
    mfu = red.stats["mfu"].values
    tflops = red.stats["tflops"].values if rate is None else rate
    with np.errstate(invalid="ignore"):
        both = np.isfinite(mfu) & np.isfinite(tflops) & (mfu > 0) & (tflops > 0)
    if not both.any():
        return Finding()
    # The device table only for a run that logs both (most runs log mfu 0.0 or neither).
    from ezpz_amsc.run.devices import system_of

    with np.errstate(over="ignore"):
        implied = _median(100 * tflops[both] / mfu[both])
    sysdev = system_of(system)
    if sysdev is not None:
        return _system_peak(implied, int(both.sum()), float(mfu[both].max()), sysdev,
                            gpus, nodes, tflops_known=rate is None)
    return _any_peak(implied, int(both.sum()), float(mfu[both].max()), gpus)


def _system_peak(implied: float, n: int, mfu_max: float, sysdev: System, gpus: int,
                 nodes: int, tflops_known: bool) -> Finding:
    """The implied peak against the listed system's device (see :func:`peak_finding`)."""
    from ezpz_amsc.run.devices import PEAK_MATCH, matches, nearest

    if matches(implied, sysdev):
        return Finding()
    shown = (f"tflops / (mfu / 100) implies a {implied:,.1f} TFLOPS device (median of {n} "
             f"steps), not {sysdev.name}'s: {sysdev.device_names} TFLOPS")
    if mfu_max <= 1 and matches(implied / 100, sysdev):
        return Finding(frozenset({"mfu"}), (
            f"{shown}; every mfu is at most 1, and x 100 the peak is {implied / 100:,.1f}: "
            "mfu was logged as a fraction, not a percentage; mfu left empty"))
    if tflops_known:  # tflops as logged: it may be a total below the peak
        for k, _, whose in _totals(gpus, nodes):
            if matches(implied / k, sysdev):
                return Finding(frozenset({"tflops"}), (
                    f"{shown}; / {k} it is {implied / k:,.1f}: tflops is {whose}, not per "
                    "GPU; tflops left empty"))
    other, off = nearest(implied)
    if off <= PEAK_MATCH:
        return Finding(frozenset({"mfu"}), (
            f"{shown}; it is {other.name}'s peak ({other.peak_tflops:,g}): mfu was computed "
            f"against another device's peak, not {sysdev.name}'s; mfu left empty"))
    return Finding(frozenset({"mfu", "tflops"}), (
        f"{shown}, nor any listed device's: mfu is not a percentage of the device's peak or "
        "tflops not its rate; mfu and tflops left empty"))


def _any_peak(implied: float, n: int, mfu_max: float, gpus: int) -> Finding:
    """The implied peak against every listed device, for a system not listed."""
    from ezpz_amsc.run.devices import PEAK_MAX_TFLOPS, PEAK_MIN_TFLOPS, nearest, plausible_peak

    if plausible_peak(implied):
        return Finding()
    shown = f"tflops / (mfu / 100) implies a {implied:,.0f} TFLOPS device (median of {n} steps)"
    high = implied > PEAK_MAX_TFLOPS
    readings = []  # (the cell that would be wrong, the peak it implies then, how, why)
    if high and mfu_max <= 1:
        readings.append(("mfu", implied / 100, "every mfu is at most 1, and x 100 the peak is",
                         "mfu was logged as a fraction, not a percentage"))
    if high and gpus > 1:
        readings.append(("tflops", implied / gpus, f"per GPU ({gpus}) it is",
                         "tflops was logged for the whole job, not per GPU"))
    offs = [nearest(peak)[1] for _, peak, _, _ in readings]
    for k, (cell, peak, how, why) in enumerate(readings):
        other = min((off for j, off in enumerate(offs) if j != k), default=np.inf)
        if _clearly_nearer(offs[k], other):
            device = nearest(peak)[0]
            return Finding(frozenset({cell}), (
                f"{shown}, above any accelerator's; {how} {peak:,.1f} TFLOPS, near "
                f"{device.peak_tflops:,} ({device.name}): {why}; {cell} left empty"))
    side = "above" if high else "below"
    return Finding(frozenset({"mfu", "tflops"}), (
        f"{shown}, {side} any accelerator's ({PEAK_MIN_TFLOPS:g} to {PEAK_MAX_TFLOPS:,.0f} "
        "TFLOPS): mfu is not a percentage of one device's peak or tflops not one device's; "
        "mfu and tflops left empty"))


def _clearly_nearer(off: float, other: float) -> bool:
    """Within :data:`~ezpz_amsc.run.devices.PEAK_MATCH` of a listed peak, and under half as
    far as the other."""
    from ezpz_amsc.run.devices import PEAK_MATCH

    return off <= PEAK_MATCH and off < other / 2


# ---------------------------------------------------------------- tokens, dt and the clock


Identity = tuple[float, float, str, str]


def identities(gpus: int, tp: int | None) -> list[Identity]:
    """The legitimate values of ``rate x dt / tokens``: (value, what the logged tokens are
    multiplied by for the step's global tokens, what it means, the tokens it gives).
    1: a global count; gpus: a count per rank; gpus / tp: a count per data-parallel group;
    1000 times each: dt in milliseconds (refused or noted by the step-time check; the rate
    is still checked against the clock)."""
    wants = [(1.0, 1.0, "1 (a global count)", "the logged tokens")]
    if gpus > 1:
        wants.append((float(gpus), float(gpus), f"{gpus} (gpus: a count per rank)",
                      f"the logged tokens x {gpus} ranks"))
    if tp is not None and 1 < tp < gpus and gpus % tp == 0:
        dp = gpus // tp
        wants.append((float(dp), float(dp),
                      f"{dp} (gpus / tp {tp}: a count per data-parallel group)",
                      f"the logged tokens x {dp} data-parallel groups"))
    return wants + [(1000 * w, m, f"1000 x {what} (dt in milliseconds)", source)
                    for w, m, what, source in wants]


def _nearest_identity(ratio: float, wants: list[Identity]) -> Identity:
    """The legitimate value nearest the ratio, by how many times off either way."""
    return min(wants, key=lambda w: max(ratio / w[0], w[0] / ratio))


def identity_band(ratios: np.ndarray, median: float) -> tuple[float, float]:
    """How far from its identity a run's ``rate x dt / tokens`` may be, and its scatter: the
    median absolute deviation of the per-step ratio over its median, x
    :data:`TOKENS_RATE_SCATTER` (about two standard deviations of a normal scatter), at
    least :data:`TOKENS_RATE_BAND_MIN`."""
    scatter = float(np.median(np.abs(ratios - median))) / median  # a partition, not a sort
    return max(TOKENS_RATE_BAND_MIN, TOKENS_RATE_SCATTER * scatter), scatter


def _cumulative(tokens: np.ndarray) -> bool:
    """A count that grows on every step, three or more: a running total of tokens."""
    return tokens.size >= 3 and bool(np.all(tokens[1:] > tokens[:-1]))


def throughput_finding(red: Reduced, keys_used: dict[str, str], gpus: int,
                       accumulation: Callable[[], str], tp: int | None = None) -> Finding:
    """The logged throughput against the tokens a step processed, its dt and the clock.

    With a logged token count (``train/tokens``), ``rate x dt / tokens`` must be one of
    its legitimate values (:func:`identities`; ``tp`` the tensor-parallel size) within
    the run's own scatter (:func:`identity_band`): above it, the rate is not tokens per
    second; below it, the rate is timed over more than dt, and stands when the records'
    clock sustains it (:func:`_below_identity`). Without one, a rate x dt that is the same
    on every step shows the rate was computed from dt, and gives the tokens per step. Then the
    records' own timestamps must sustain the rate: over a typical interval, the
    tokens of the steps it covers at the logged rate must take most of it.
    ``accumulation()`` names a logged accumulation count, as evidence (a second
    read, so only called on a finding).
    """
    st = red.stats
    tps, tpg, dt = st["tps"].values, st["tps_per_gpu"].values, st["dt"].values
    if np.isfinite(tps).any():
        rate, name, value = tps, keys_used["tps"], st["tps"].value
    elif np.isfinite(tpg).any():
        rate, name = tpg * gpus, f"{keys_used['tps_per_gpu']} x {gpus} gpus"
        value = None if st["tps_per_gpu"].value is None else st["tps_per_gpu"].value * gpus
    else:
        return Finding()
    tokens = red.tokens_values
    with np.errstate(all="ignore"):
        timed = np.isfinite(rate) & np.isfinite(dt) & (rate > 0) & (dt > 0)
        counted = timed & np.isfinite(tokens) & (tokens > 0)
        if _cumulative(tokens[counted]):
            counted[:] = False  # a running total (like tokens_seen), not a step's tokens
        if counted.any():
            ratios = rate[counted] * dt[counted] / tokens[counted]
            ratio = _median(ratios)
            want, times, what, source = _nearest_identity(ratio, identities(gpus, tp))
            per_step = tokens if times == 1 else tokens * times
            band, scatter = identity_band(ratios, ratio)
            shown = (f"{name} x dt / tokens is {ratio:.4g} (median of {int(counted.sum())} "
                     f"steps, scatter {scatter:.1%})")
            if ratio > want * (1 + band):
                return Finding(THROUGHPUT_CELLS, (
                    f"{shown}: {ratio / want - 1:.0%} above {what}, beyond the run's own "
                    f"scatter (band {band:.0%}): {name} is not the run's tokens per second "
                    "(timed over part of each step, samples/s, tokens per step?); throughput "
                    "left empty"))
            if ratio < want / (1 + band):
                return _below_identity(red, rate, per_step, shown, ratio / want, what, name)
        else:
            made = rate[timed] * dt[timed]
            if made.size < 2 or float(made.max() - made.min()) > RATE_FROM_DT_SPREAD * _median(
                    made):
                return Finding()
            per_step, source = np.full(rate.size, _median(made)), f"{name} x dt"
    return _against_the_clock(red, rate, per_step, name, value, source, accumulation)


def _below_identity(red: Reduced, rate: np.ndarray, per_step: np.ndarray, shown: str,
                    off: float, what: str, name: str) -> Finding:
    """A rate below ``tokens / dt``: timed over more than dt (data loading outside it). It
    stands when the records' clock sustains it: the tokens between records, at the logged
    rate, take no longer than the time between the records (:data:`RATE_TIMER_OVER_SPAN_MAX`
    of it)."""
    span = np.diff(red.ts_values)
    steps_each = np.diff(red.step_values) if red.counter is not None else np.ones(span.size)
    with np.errstate(all="ignore"):
        need = per_step[1:] * steps_each / rate[1:]  # seconds the rate implies between records
        ok = (np.isfinite(span) & (span > 0) & np.isfinite(steps_each) & (steps_each >= 1)
              & np.isfinite(need) & (need > 0))
        needed, between = float(need[ok].sum()), float(span[ok].sum())
    below = f"{shown}: {1 - off:.0%} below {what}"
    if not ok.any():
        return Finding(THROUGHPUT_CELLS, (
            f"{below}, and no two records' timestamps to check it against; throughput left "
            "empty"))
    taken = f"at that rate the tokens between records take {needed:.4g} s of the {between:.4g} s"
    if needed > RATE_TIMER_OVER_SPAN_MAX * between:
        return Finding(THROUGHPUT_CELLS, (
            f"{below}; {taken} between them ({needed / between:.3g}x): the records' clock "
            f"cannot sustain so low a rate, {name} is not the run's tokens per second "
            "(samples/s?); throughput left empty"))
    return Finding(note=(
        f"{below}: the rate is timed over more than dt (data loading outside dt?); {taken} "
        f"between them ({needed / between:.0%}): the records' clock sustains it, published"))


def _against_the_clock(red: Reduced, rate: np.ndarray, per_step: np.ndarray, name: str,
                       value: float | None, source: str, accumulation: Callable[[], str]
                       ) -> Finding:
    ts, step = red.ts_values, red.step_values
    span = np.diff(ts)
    steps_each = np.diff(step) if red.counter is not None else np.ones(span.size)
    with np.errstate(all="ignore"):  # values near float max: inf, not a warning
        need = per_step[1:] * steps_each  # seconds the rate needs for those tokens:
        need /= rate[1:]  # divided in place, the same numbers without a second column
        ok = (np.isfinite(span) & (span > 0) & np.isfinite(steps_each) & (steps_each >= 1)
              & np.isfinite(need) & (need > 0))
        if not ok.any():
            return Finding()
        every = bool(ok.all())  # then no masked copies of a long run's columns
        over = _median(span / need if every else span[ok] / need[ok])
        uncovered = float((span - need if every else span[ok] - need[ok]).sum())
        if not (over > RATE_OVER_CLOCK_MAX and uncovered >= UNCOVERED_MIN_SEC):
            return Finding()
        tokens = float((per_step[1:][ok] * steps_each[ok]).sum())
    clock_rate = tokens / float(span[ok].sum())
    shown = f" ({value:,.0f} tokens/s, the median)" if value is not None else ""
    return Finding(THROUGHPUT_CELLS, (
        f"{name}{shown} is {over:.3g}x what the records' clock sustains: "
        f"{_median(per_step[1:][ok]):,.0f} tokens per step ({source}) over the time between "
        f"records is {clock_rate:,.0f} tokens/s{accumulation()}; dt times part of each step "
        "(the last micro-batch?), so the logged rate is inflated; throughput left empty"))
