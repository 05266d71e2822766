"""Identities between a row's numbers (docs/numbers.md, "Cross-checks before a row is
published"): what two of them imply about each other, against what is physically
possible.

- ``tflops / (mfu / 100)`` is the device's peak (:mod:`ezpz_amsc.run.devices`);
- the logged tokens/s times the step time is the tokens a step processed, and the
  records' own clock must be able to sustain that rate;
- ``train/tps / train/tps_per_gpu`` is the world size.

Each function says what it found; :mod:`ezpz_amsc.run.columns` decides the cells.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ezpz_amsc.run.reduce import (
    STEP_TIME_UNDER_SPAN_MIN,
    UNCOVERED_MIN_SEC,
    Reduced,
    median_sorted,
    ranks_per_step,
)

THROUGHPUT_CELLS = frozenset({"throughput_tokens_per_sec", "throughput_tokens_per_sec_per_gpu"})
# rate x dt / tokens is 1 when the rate is tokens per second (fsdp_tp computes both
# from the same tokens and dt: exactly 1.0), the world size when the tokens are counted
# per rank, 1000 times either with dt in milliseconds. Another timer for the rate than for dt
# moves it a little; samples/s (1 / sequence length), tokens per step (dt) or a dt
# that times one micro-batch of several (1 / accumulation) move it far.
TOKENS_RATE_FACTOR = 1.5
# rate x dt the same on every step, to this relative spread: the rate was computed as
# tokens / dt (exact to float rounding in ezpz's examples), giving the tokens per step.
RATE_FROM_DT_SPREAD = 1e-3
# A logged rate this many times what the clock sustains is inflated: the same bound
# as dt covering under a quarter of the time between records (the step-time check).
RATE_OVER_CLOCK_MAX = 1 / STEP_TIME_UNDER_SPAN_MIN


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


def peak_finding(red: Reduced, gpus: int) -> Finding:
    """``tflops / (mfu / 100)`` against the peaks real accelerators have.

    Outside them, the note names the cause and the wrong cell is left empty when
    one explanation lands near a listed device's peak and clearly nearer than the
    other: mfu logged as a fraction (every value at most 1; x 100, a device's
    peak) or tflops logged for the whole job (divided by gpus, a device's peak).
    Otherwise nothing says which cell is wrong: both are left empty.
    """
    mfu, tflops = red.stats["mfu"].values, red.stats["tflops"].values
    with np.errstate(invalid="ignore"):
        both = np.isfinite(mfu) & np.isfinite(tflops) & (mfu > 0) & (tflops > 0)
    if not both.any():
        return Finding()
    # The device table only for a run that logs both (most runs log mfu 0.0 or neither).
    from ezpz_amsc.run.devices import PEAK_MAX_TFLOPS, PEAK_MIN_TFLOPS, nearest, plausible_peak

    with np.errstate(over="ignore"):
        implied = _median(100 * tflops[both] / mfu[both])
    if plausible_peak(implied):
        return Finding()
    shown = (f"tflops / (mfu / 100) implies a {implied:,.0f} TFLOPS device (median of "
             f"{int(both.sum())} steps)")
    high = implied > PEAK_MAX_TFLOPS
    readings = []  # (the cell that would be wrong, the peak it implies then, how, why)
    if high and float(mfu[both].max()) <= 1:
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


def _near(ratio: float, want: float) -> bool:
    return max(ratio / want, want / ratio) <= TOKENS_RATE_FACTOR


def _tokens_per_step(ratio: float, tokens: np.ndarray, gpus: int
                     ) -> tuple[np.ndarray, str] | None:
    """The global tokens of each step, when ``rate x dt / tokens`` says the rate is tokens
    per second of them: 1 (a global count), the world size (a count per rank), or 1000
    times either (dt in milliseconds, refused or noted by the step-time check; the rate
    is still checked against the clock)."""
    for unit in (1.0, 1000.0):
        if _near(ratio / unit, 1):
            return tokens, "the logged tokens"
        if gpus > 1 and _near(ratio / unit, gpus):
            return tokens * gpus, f"the logged tokens x {gpus} ranks"
    return None


def _cumulative(tokens: np.ndarray) -> bool:
    """A count that grows on every step, three or more: a running total of tokens."""
    return tokens.size >= 3 and bool(np.all(tokens[1:] > tokens[:-1]))


def throughput_finding(red: Reduced, keys_used: dict[str, str], gpus: int,
                       accumulation: Callable[[], str]) -> Finding:
    """The logged throughput against the tokens a step processed, its dt and the clock.

    With a logged token count (``train/tokens``), ``rate x dt / tokens`` must be 1
    (or the world size, when the count is per rank); otherwise the rate is not
    tokens per second. Without one, a rate x dt that is the same on every step
    shows the rate was computed from dt, and gives the tokens per step. Then the
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
            ratio = _median(rate[counted] * dt[counted] / tokens[counted])
            found = _tokens_per_step(ratio, tokens, gpus)
            if found is None:
                return Finding(THROUGHPUT_CELLS, (
                    f"{name} x dt / tokens is {ratio:.3g} (median of {int(counted.sum())} "
                    f"steps), not 1: {name} is not tokens per second (samples/s, tokens per "
                    "step, or dt misses part of each step?); throughput left empty"))
            per_step, source = found
        else:
            made = rate[timed] * dt[timed]
            if made.size < 2 or float(made.max() - made.min()) > RATE_FROM_DT_SPREAD * _median(
                    made):
                return Finding()
            per_step, source = np.full(rate.size, _median(made)), f"{name} x dt"
    return _against_the_clock(red, rate, per_step, name, value, source, accumulation)


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
