"""Stage 4: order the steps, drop warmup, reduce each series (SPEC §2.3).

numpy is imported here and only here, so ``--help`` and the plugin load never
pay for it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .options import REDUCERS
from .steps import SERIES, Steps

# Values no real step can have are dropped like non-finite ones (and noted):
# a step takes time, and throughput, MFU and TFLOPS are never negative. Zero
# stays for those three: ezpz writes mfu 0.0 when it does not know the peak.
POSITIVE_SERIES = ("dt",)
NON_NEGATIVE_SERIES = ("tps", "tps_per_gpu", "mfu", "tflops")
# Epoch seconds that format as YYYY-MM-DDTHH:MM:SSZ: 1970-01-01 to 9999-12-31.
# Anything outside is a broken clock, and time.gmtime cannot take all of it.
TIMESTAMP_RANGE = (0.0, 253402300799.0)


@dataclass
class SeriesStats:
    """How one series was reduced, for notes and ``--explain``."""

    value: float | None
    present: int  # finite values over all steps
    used: int  # values the reducer saw
    dropped_warmup: int  # finite values dropped as warmup
    kept_warmup: bool  # warmup would have left nothing, so it was kept
    p10: float | None = None
    p90: float | None = None
    values: np.ndarray | None = None  # all steps in order (NaN = absent), for sparklines
    all_zero: bool = False  # every finite value is exactly 0.0


@dataclass
class StepCoverage:
    """Which step numbers the logged records cover, when they leave gaps."""

    logged: int  # distinct step numbers logged
    first: int
    last: int
    stride: int  # smallest distance between consecutive logged step numbers
    estimated_total: int  # steps the run likely took between first and last


@dataclass
class Reduced:
    steps: int
    first_timestamp: float | None
    wall_time_sec: float | None
    final_loss: float | None
    stats: dict[str, SeriesStats] = field(default_factory=dict)
    step_values: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    coverage: StepCoverage | None = None  # set only when the step numbers have gaps
    invalid: dict[str, int] = field(default_factory=dict)  # series -> values dropped as impossible


# np.median and np.percentile import numpy.ma on first use (~7 ms, more than
# the rest of the export of a 300-step run). These are their default methods,
# value for value, on the sorted finite values.
def median_sorted(ordered: np.ndarray) -> float:
    """``np.median`` of an ascending, finite, non-empty 1-D array."""
    n = ordered.size
    mid = n // 2
    if n % 2:
        return float(ordered[mid])
    return (float(ordered[mid - 1]) + float(ordered[mid])) / 2


def percentile_sorted(ordered: np.ndarray, q: float) -> float:
    """``np.percentile(x, q)`` ("linear") of an ascending, finite, non-empty 1-D array."""
    n = ordered.size
    pos = (n - 1) * (q / 100)
    if pos >= n - 1:
        return float(ordered[-1])
    lo = math.floor(pos)
    t = pos - lo
    a, b = float(ordered[lo]), float(ordered[lo + 1])
    diff = b - a
    return b - diff * (1 - t) if t >= 0.5 else a + diff * t


def _reduce(x: np.ndarray, ordered: np.ndarray, reducer: str) -> float:
    if reducer == "median":
        return median_sorted(ordered)
    if reducer == "mean":
        return float(np.mean(x))
    if reducer == "max":
        return float(np.max(x))
    if reducer == "min":
        return float(np.min(x))
    return float(x[-1])


def reduce_series(values: np.ndarray, warmup: int, reducer: str) -> SeriesStats:
    """Drop the first ``warmup`` steps, then reduce the finite values left.

    Warmup counts steps, not values: a metric missing on step 1 still has
    step 1 dropped. If warmup leaves nothing, the whole series is kept — a
    warmup-tainted number beats an empty cell (the caller notes it).
    """
    finite = np.isfinite(values)
    present = int(finite.sum())
    if present == 0:
        return SeriesStats(None, 0, 0, 0, False, values=values)
    tail = values[warmup:]
    kept = tail[np.isfinite(tail)]
    kept_warmup = False
    if kept.size == 0:
        kept = values[finite]
        kept_warmup = warmup > 0
    dropped = present - int(kept.size)
    ordered = np.sort(kept)
    # Near float max, mean/median overflow; such a value is unusable, not a crash.
    with np.errstate(over="ignore", invalid="ignore"):
        p10, p90 = percentile_sorted(ordered, 10), percentile_sorted(ordered, 90)
        value = _reduce(kept, ordered, reducer)
    return SeriesStats(_finite_or_none(value), present, int(kept.size), dropped, kept_warmup,
                       _finite_or_none(p10), _finite_or_none(p90), values,
                       all_zero=not values[finite].any())


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def step_coverage(step: np.ndarray) -> StepCoverage | None:
    """Gaps in the logged step numbers (a run that logged every N steps), else ``None``.

    Only whole step numbers are judged; a late start (ezpz's minimal example
    logs from step 6) is not a gap. The total is an estimate for the note, not
    a number the row uses: ``last - first + stride`` counts the steps before
    the first logged one that its stride implies (10, 20, .., 300 → ~300).
    """
    finite = step[np.isfinite(step)]
    if finite.size < 2 or not np.all(finite == np.floor(finite)):
        return None
    ordered = np.sort(finite)
    # Distinct values by comparing sorted neighbours: np.unique imports numpy.ma (~7 ms).
    uniq = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
    if uniq.size < 2:
        return None
    diffs = np.diff(uniq)
    if float(diffs.max()) <= 1:
        return None
    first, last, stride = int(uniq[0]), int(uniq[-1]), int(diffs.min())
    return StepCoverage(int(uniq.size), first, last, stride, last - first + stride)


def trend(values: np.ndarray, warmup_steps: int, width: int = 60) -> dict[str, object]:
    """A series squeezed to at most ``width`` points for a sparkline, warmup kept apart.

    Up to ``width`` steps: one point per step. Longer: the warmup and the used
    steps are bucketed separately (mean of each bucket's finite values), so a
    slow first step never blurs into the steps that were reduced. Plain floats
    and ``None`` (no finite value) only: the result goes into JSON as is.
    """
    n = int(values.size)
    warmup_steps = max(0, min(warmup_steps, n))
    if n <= width:
        warm_chars, used_chars = warmup_steps, n - warmup_steps
    else:
        warm_chars = max(1, round(width * warmup_steps / n)) if warmup_steps else 0
        used_chars = width - warm_chars

    def buckets(x: np.ndarray, k: int) -> list[float | None]:
        out: list[float | None] = []
        for part in np.array_split(x, k) if k else []:
            ok = part[np.isfinite(part)]
            out.append(float(ok.mean()) if ok.size else None)
        return out

    return {
        "steps": n,
        "warmup_steps": warmup_steps,
        "steps_per_point": 1 if n <= width else -(-(n - warmup_steps) // max(used_chars, 1)),
        "warmup": buckets(values[:warmup_steps], warm_chars),
        "used": buckets(values[warmup_steps:], used_chars),
    }


def _drop_impossible(cols: dict[str, np.ndarray]) -> dict[str, int]:
    """NaN out values no real step can have; returns how many per series."""
    invalid: dict[str, int] = {}
    for name in (*POSITIVE_SERIES, *NON_NEGATIVE_SERIES):
        x = cols[name]
        bad = (x <= 0) if name in POSITIVE_SERIES else (x < 0)  # NaN compares False
        if bad.any():
            invalid[name] = int(bad.sum())
            cols[name] = np.where(bad, np.nan, x)
    return invalid


def reduce_steps(steps: Steps, warmup: int, reducer: str) -> Reduced:
    """Order records by step key then timestamp, and reduce every series."""
    if reducer not in REDUCERS:
        raise ValueError(f"unknown reducer {reducer!r}")
    n = len(steps)
    notes: list[str] = []
    if n == 0:
        return Reduced(0, None, None, None, notes=notes)
    step = np.frombuffer(steps.step, dtype=np.float64)
    ts = np.frombuffer(steps.timestamp, dtype=np.float64)
    cols = {k: np.frombuffer(steps.series[k], dtype=np.float64) for k in SERIES}

    lo, hi = TIMESTAMP_RANGE
    bad_ts = (ts < lo) | (ts > hi)
    if bad_ts.any():
        k = int(bad_ts.sum())
        notes.append(f"ignored {k} timestamp{'' if k == 1 else 's'} outside years 1970-9999")
        ts = np.where(bad_ts, np.nan, ts)

    step_key = np.where(np.isfinite(step), step, np.inf)
    # Strictly increasing step keys (a run logged in order, the usual case)
    # already are the sorted order, whatever the timestamps: skip the sort and
    # its index arrays, the largest memory cost of a long run.
    in_order = bool(np.all(step_key[1:] > step_key[:-1]))
    if not in_order:
        ts_key = np.where(np.isfinite(ts), ts, np.inf)
        order = np.lexsort((np.arange(n), ts_key, step_key))
        if not np.array_equal(order, np.arange(n)):
            notes.append(f"records were out of order; sorted {n} steps by step key, "
                         "then timestamp")
            step, ts = step[order], ts[order]
            cols = {k: v[order] for k, v in cols.items()}
    invalid = _drop_impossible(cols)
    if invalid:
        parts = ", ".join(f"{k} {v}" for k, v in invalid.items())
        notes.append(f"dropped {sum(invalid.values())} impossible values (step time <= 0 or "
                     f"negative throughput/mfu/tflops: {parts})")

    missing_step = int((~np.isfinite(step)).sum())
    if missing_step and steps.step_key is not None:
        notes.append(f"{missing_step} of {n} steps have no step key; ordered by timestamp, last")
    if not in_order and np.isfinite(step).any():
        finite_steps = step[np.isfinite(step)]
        # Equal neighbours after sorting, not np.unique: that imports numpy.ma (~7 ms).
        ordered = np.sort(finite_steps)
        dups = int(np.count_nonzero(ordered[1:] == ordered[:-1]))
        if dups:
            notes.append(f"{dups} step numbers appear more than once (restarted run?)")

    good_ts = np.isfinite(ts)
    first_ts = float(ts[0]) if good_ts[0] else (float(ts[good_ts][0]) if good_ts.any() else None)

    dt = cols["dt"]
    dt_ok = np.isfinite(dt)
    with np.errstate(over="ignore"):
        wall = float(dt[dt_ok].sum()) if dt_ok.any() else None
    if wall is not None and not np.isfinite(wall):
        notes.append("summed step time overflows a float; left unknown")
        wall = None

    loss = cols["loss"]
    loss_ok = np.flatnonzero(np.isfinite(loss))
    final_loss = float(loss[loss_ok[-1]]) if loss_ok.size else None

    stats = {k: reduce_series(cols[k], warmup, reducer) for k in SERIES}
    for k, s in stats.items():
        if s.value is None and s.present:
            notes.append(f"{k} reduces to a value too large for a float; left empty")
    coverage = step_coverage(step) if steps.step_key is not None else None
    return Reduced(n, first_ts, wall, final_loss, stats, step, notes, coverage, invalid)
