"""Stage 4: order the steps, drop warmup, reduce each series (SPEC §2.3).

numpy is imported here and only here, so ``--help`` and the plugin load never
pay for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .steps import SERIES, Steps

REDUCERS = ("median", "mean", "max", "min", "last")

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
class Reduced:
    steps: int
    first_timestamp: float | None
    wall_time_sec: float | None
    final_loss: float | None
    stats: dict[str, SeriesStats] = field(default_factory=dict)
    step_values: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)
    invalid: dict[str, int] = field(default_factory=dict)  # series -> values dropped as impossible


def _reduce(x: np.ndarray, reducer: str) -> float:
    if reducer == "median":
        return float(np.median(x))
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
    # Near float max, mean/median overflow; such a value is unusable, not a crash.
    with np.errstate(over="ignore", invalid="ignore"):
        p10, p90 = (float(v) for v in np.percentile(kept, [10, 90]))
        value = _reduce(kept, reducer)
    return SeriesStats(value if np.isfinite(value) else None, present, int(kept.size), dropped,
                       kept_warmup, p10, p90, values, all_zero=not values[finite].any())


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
    ts_key = np.where(np.isfinite(ts), ts, np.inf)
    order = np.lexsort((np.arange(n), ts_key, step_key))
    if not np.array_equal(order, np.arange(n)):
        notes.append(f"records were out of order; sorted {n} steps by step key, then timestamp")
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
    if np.isfinite(step).any():
        finite_steps = step[np.isfinite(step)]
        dups = int(finite_steps.size - np.unique(finite_steps).size)
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
    return Reduced(n, first_ts, wall, final_loss, stats, step, notes, invalid)
