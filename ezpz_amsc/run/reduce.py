"""Order the steps, drop warmup, reduce each series (docs/numbers.md, "The defaults").

numpy is imported here and only here, so ``--help`` and the plugin load never
pay for it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ezpz_amsc.errors import AmscError
from ezpz_amsc.options import REDUCERS
from ezpz_amsc.results.schema import (
    CLOCK_SLACK_SEC,
    MAX_COUNT,
    MFU_MAX_PCT,
    PROCESS_START_SLACK_SEC,
    TIMESTAMP_MIN,
    format_timestamp,
)
from ezpz_amsc.run.details import Segment, StepCoverage
from ezpz_amsc.run.steps import (
    CHECKPOINT_KEY,
    CHECKPOINT_NEEDLES,
    COUNTER_KEYS,
    SERIES,
    Steps,
    epoch_values,
    values_of_keys,
)
from ezpz_amsc.text import opt, plural

# Columns read beside the series (steps.TOKEN_KEYS, steps.STEP_EPOCH_KEYS), in the same
# table while records are filtered and ordered, never reduced into a cell.
TOKENS, EPOCH = "tokens", "epoch"

# Values no real step can have are dropped like non-finite ones (and noted):
# a step takes time, and throughput, MFU and TFLOPS are never negative. Zero
# stays for those three: ezpz writes mfu 0.0 when it does not know the peak.
POSITIVE_SERIES = ("dt",)
NON_NEGATIVE_SERIES = ("tps", "tps_per_gpu", "mfu", "tflops")
# A first step stamped more than 2 days before the second comes from a skewed
# clock: no job on these machines pauses that long between two steps.
FIRST_GAP_MAX_SEC = 2 * 86400.0
# train/tps / train/tps_per_gpu is the world size, a whole number up to rounding.
RATIO_TOLERANCE = 0.01
# Step time vs the clock, over steps 2..n. The shipped real runs' dt covers 0.76-0.85
# of the time between records, real 2-rank CPU runs with 4-9 ms steps down to 0.33
# (logging takes as long as the step): below 0.25 dt misses part of each step, when
# at least 1 s of the time is not covered (sub-second runs are all logging).
STEP_TIME_UNDER_SPAN_MIN = 0.25
UNCOVERED_MIN_SEC = 1.0
# A pause between two records: an interval this many times the typical one (per step),
# and at least a minute longer. The shipped runs' longest interval is 2x their median.
GAP_FACTOR = 10.0
GAP_MIN_SEC = 60.0
# Throughput before and after a pause differing by more than this factor: the job came
# back on other ranks (a resume after a node failure), another attempt. Steady training
# varies by a few percent step to step; one rank fewer of 4 is a factor of 1.33.
LEVEL_SHIFT_FACTOR = 1.25
# A checkpoint or save time logged at a pause that accounts for at least this share of
# it explains the pause: the job saved, it did not die and come back (a throughput
# change after it is the run's own: a batch-size ramp). A save logged as a few seconds
# beside a 10-minute gap explains nothing.
CHECKPOINT_SHARE_MIN = 0.5


@dataclass
class Timestamps:
    """What the steps' clock says, for the clock checks (all counts over the steps used)."""

    present: int = 0  # steps with a numeric timestamp
    implausible: int = 0  # of those, before 2015 or later than now
    first_bad: float | None = None  # the first implausible value, for messages
    first_step_raw: float | None = None  # the first step's timestamp as logged
    used_step: float | None = None  # step number whose timestamp is the row's
    used_index: int | None = None  # its position among the ordered steps
    skewed_first: str | None = None  # why the first step's plausible timestamp was passed over
    # that step and its timestamp: not always the first step (its timestamp may be missing)
    skewed_step: float | None = None
    skewed_ts: float | None = None
    last_read: float | None = None  # latest plausible timestamp of every step read

@dataclass(frozen=True)
class Boundary:
    """Why an attempt starts where it does: the evidence against the records before it."""

    restart: tuple[float, float] | None = None  # step numbers: the last before, the first after
    ranks: tuple[int, int] | None = None  # logged world size before, after
    shift: tuple[float, float] | None = None  # throughput after / before, the pause's seconds


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
    # all steps in order (NaN = absent), for sparklines and the checks
    values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    all_zero: bool = False  # every finite value is exactly 0.0


@dataclass
class Reduced:
    """The steps ordered and reduced: each series' value, and what was dropped and why."""

    steps: int
    first_timestamp: float | None
    wall_time_sec: float | None
    final_loss: float | None
    stats: dict[str, SeriesStats] = field(default_factory=dict)
    step_values: np.ndarray = field(default_factory=lambda: np.zeros(0))  # empty: no step
    notes: list[str] = field(default_factory=list)
    coverage: StepCoverage | None = None  # set only when the step numbers have gaps
    invalid: dict[str, int] = field(default_factory=dict)  # series -> values dropped as impossible
    mfu_over_100: int = 0  # mfu values dropped for being above 100 %
    # plausible timestamps in step order (NaN = none)
    ts_values: np.ndarray = field(default_factory=lambda: np.zeros(0))
    timestamps: Timestamps = field(default_factory=Timestamps)
    not_steps: int = 0  # records without the run's step counter, left out
    # records with the counter but none of the training series the others carry (eval)
    not_training: int = 0
    evaluations: int = 0  # records with the counter and evaluation keys (nanoGPT's evals)
    duplicates: int = 0  # records identical to an earlier one (a line written twice)
    by_epoch: bool = False  # the step counter restarts each epoch: ordered by (epoch, step)
    counter: str | None = None  # the run's step counter key
    segments: list[Segment] = field(default_factory=list)  # attempts found in the records
    boundaries: list[Boundary] = field(default_factory=list)  # why each segment after the first
    tokens_values: np.ndarray = field(default_factory=lambda: np.zeros(0))  # tokens per step
    epoch_values: np.ndarray = field(default_factory=lambda: np.zeros(0))  # epoch per step
    attempt: int | None = None  # 1-based segment exported (--attempt), when there are several
    # boundaries between records of one process (the hook's: written since it started),
    # dropped: its records are one attempt
    in_process: int = 0
    loss_nonfinite_tail: int = 0  # trailing steps whose loss was logged non-finite
    stale_loss: tuple[float, float | None] | None = None  # (last finite loss, its step)


# np.median and np.percentile import numpy.ma on first use (~7 ms, more than
# the rest of the export of a 300-step run). These are their default methods,
# value for value, on the sorted finite values.
def median_sorted(ordered: np.ndarray) -> float:
    """``np.median`` of an ascending, NaN-free, non-empty 1-D array (inf is fine)."""
    n = ordered.size
    mid = n // 2
    if n % 2:
        return float(ordered[mid])
    return (float(ordered[mid - 1]) + float(ordered[mid])) / 2


def median_of(x: np.ndarray, overwrite: bool = False) -> float:
    """``np.median`` of a NaN-free, non-empty 1-D array, in linear time (a partition,
    not a sort: run on every run's intervals). ``overwrite``: partition ``x`` itself,
    a scratch array of the caller's, instead of a copy."""
    n = x.size
    mid = n // 2
    kth = mid if n % 2 else (mid - 1, mid)
    if overwrite:
        x.partition(kth)
        part = x
    else:
        part = np.partition(x, kth)
    if n % 2:
        return float(part[mid])
    return (float(part[mid - 1]) + float(part[mid])) / 2


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
    head = values[:0] if kept_warmup else values[:warmup]  # finite values not in kept
    all_zero = not (kept.any() or head[np.isfinite(head)].any())
    # kept is a copy: sorted in place unless the reducer needs it in step order.
    if reducer in ("mean", "last"):
        ordered = np.sort(kept)
    else:
        kept.sort()
        ordered = kept
    # Near float max, mean/median overflow; such a value is unusable, not a crash.
    with np.errstate(over="ignore", invalid="ignore"):
        p10, p90 = percentile_sorted(ordered, 10), percentile_sorted(ordered, 90)
        value = _reduce(kept, ordered, reducer)
    return SeriesStats(_finite_or_none(value), present, int(kept.size), dropped, kept_warmup,
                       _finite_or_none(p10), _finite_or_none(p90), values, all_zero=all_zero)


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


def step_coverage(step: np.ndarray) -> StepCoverage | None:
    """Gaps in the logged step numbers (a run that logged every N steps), else ``None``.

    Only whole step numbers are judged; a late start (ezpz's minimal example
    logs from step 6) is not a gap. The total is an estimate for the note, not
    a number the row uses: ``last - first + stride`` counts the steps before
    the first logged one that its stride implies (10, 20, .., 300 → ~300). The
    stride is the most common distance, so that a final step logged off the
    stride does not shrink it (0, 10, .., 90, 99 → ~100, not ~108).
    """
    finite = _finite(step)
    if finite.size < 2 or not np.all(finite == np.floor(finite)):
        return None
    if np.all(finite[1:] > finite[:-1]):  # logged in order: sorted and distinct already
        uniq = finite
    else:
        ordered = np.sort(finite)
        # Distinct values by comparing sorted neighbours: np.unique imports numpy.ma (~7 ms).
        uniq = ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]
    if uniq.size < 2:
        return None
    diffs = np.diff(uniq)
    if float(diffs.max()) <= 1:
        return None
    first, last, stride = int(uniq[0]), int(uniq[-1]), _most_common(diffs)
    if int(diffs[-1]) < stride:
        # "every 10 steps plus the last one" (diffusion: 0, 10, .., 90, 99): the
        # short last interval ends the run; only steps before the first count.
        head = max(0, min(first - 1 if first else 0, stride - 1))
        total = last - first + 1 + head
    else:
        total = last - first + stride
    return StepCoverage(int(uniq.size), first, last, stride, total)


def epoch_coverage(step: np.ndarray, epoch: np.ndarray) -> StepCoverage | None:
    """:func:`step_coverage` of a counter that starts again each epoch: each epoch's
    steps counted on their own and added up (an epoch without gaps counts its steps);
    None when no epoch has gaps."""
    logged = total = 0
    strides = []
    for e in np.unique(epoch[np.isfinite(epoch)]).tolist():
        here = step[(epoch == e) & np.isfinite(step)]
        c = step_coverage(here)
        if c is None:
            n = int(np.unique(here).size)
            logged, total = logged + n, total + n
        else:
            logged, total = logged + c.logged, total + c.estimated_total
            strides.append(c.stride)
    if not strides:
        return None
    numbered = step[np.isfinite(step)]
    return StepCoverage(logged, int(numbered[0]), int(numbered[-1]),
                        _most_common(np.array(strides)), total)


def _most_common(x: np.ndarray) -> int:
    """The most frequent value of an integer-valued array (the smallest on a tie)."""
    d = np.sort(x)
    starts = np.concatenate(([0], np.flatnonzero(d[1:] != d[:-1]) + 1))
    counts = np.diff(np.append(starts, d.size))
    return int(d[starts[int(np.argmax(counts))]])


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
        # At least one glyph each: the steps used must be drawn however long the warmup.
        warm_chars = min(width - 1, max(1, round(width * warmup_steps / n))) if warmup_steps else 0
        used_chars = width - warm_chars

    def buckets(x: np.ndarray, k: int) -> list[float | None]:
        out: list[float | None] = []
        for part in np.array_split(x, k) if k else []:
            ok = part[np.isfinite(part)]
            out.append(_mean(ok) if ok.size else None)
        return out

    return {
        "steps": n,
        "warmup_steps": warmup_steps,
        "steps_per_point": 1 if n <= width else -(-(n - warmup_steps) // max(used_chars, 1)),
        "warmup": buckets(values[:warmup_steps], warm_chars),
        "used": buckets(values[warmup_steps:], used_chars),
    }


def _mean(x: np.ndarray) -> float:
    """The mean of finite values, finite too: values near float max overflow the plain sum
    (an inf point would make ``--format json`` fail), so those are averaged pre-divided."""
    with np.errstate(over="ignore"):
        m = float(x.mean())
    return m if math.isfinite(m) else float((x / x.size).sum())


def _drop_impossible(cols: dict[str, np.ndarray]) -> tuple[dict[str, int], int]:
    """NaN out values no real step can have; returns how many per series, and mfu > 100."""
    invalid: dict[str, int] = {}
    for name in (*POSITIVE_SERIES, *NON_NEGATIVE_SERIES):
        x = cols[name]
        bad = (x <= 0) if name in POSITIVE_SERIES else (x < 0)  # NaN compares False
        if bad.any():
            invalid[name] = int(bad.sum())
            cols[name] = np.where(bad, np.nan, x)
    over = cols["mfu"] > MFU_MAX_PCT
    over_100 = int(over.sum())
    if over_100:
        cols["mfu"] = np.where(over, np.nan, cols["mfu"])
    return invalid, over_100


def ranks_per_step(tps: np.ndarray, tps_per_gpu: np.ndarray) -> np.ndarray:
    """Per step, ``train/tps / train/tps_per_gpu`` when it is a whole rank count, else NaN."""
    with np.errstate(all="ignore"):
        ratio = tps / tps_per_gpu
        whole: np.ndarray = np.round(ratio)
        ok = np.isfinite(ratio) & (whole >= 1) & (whole <= MAX_COUNT)
        off = np.abs(np.subtract(ratio, whole, out=ratio), out=ratio)  # in place: long runs
        ok &= off <= RATIO_TOLERANCE * whole
    whole[~ok] = np.nan
    return whole


def typical_and_long(span: np.ndarray, steps: np.ndarray, ok: np.ndarray
                     ) -> tuple[float, np.ndarray]:
    """The typical seconds per step over the ``ok`` intervals (a non-empty mask), and which
    of them are long: over :data:`GAP_FACTOR` times it for the steps they cover."""
    if ok.all():  # no masked copies of a long run's columns, one scratch column
        scratch = span / steps
        typical = median_of(scratch, overwrite=True)
        return typical, span > np.multiply(steps, GAP_FACTOR * typical, out=scratch)
    typical = median_of(span[ok] / steps[ok])
    long = np.zeros(ok.size, dtype=bool)
    long[ok] = span[ok] > GAP_FACTOR * typical * steps[ok]
    return typical, long


def _pauses(step: np.ndarray, ts: np.ndarray) -> list[tuple[int, float]]:
    """Long pauses in file order: (index of the record after it, its seconds).

    A pause is an interval over :data:`GAP_FACTOR` times the typical one for the
    steps it covers, and over :data:`GAP_MIN_SEC` longer than that.
    """
    with np.errstate(all="ignore"):  # values near float max: inf, not a warning
        span, steps = np.diff(ts), np.diff(step)
        ok = np.isfinite(span) & (span > 0) & np.isfinite(steps) & (steps >= 1)
        if not ok.any():
            return []
        typical, long = typical_and_long(span, steps, ok)
        at = np.flatnonzero(long)  # few: judged one by one
        at = at[span[at] - typical * np.where(ok[at], steps[at], 0) > GAP_MIN_SEC]
    return [(int(i) + 1, float(span[i])) for i in at]


def restarts_each_epoch(step: np.ndarray, epoch: np.ndarray) -> bool:
    """The step counter starts again where the epoch number advances (train/iter per epoch).

    Every record with a step number must carry an epoch; one restart at an advancing
    epoch is enough (a retry from scratch goes back to epoch 0, an attempt all the same).
    """
    numbered = np.isfinite(step)
    s, e = (step, epoch) if numbered.all() else (step[numbered], epoch[numbered])
    if s.size < 2 or not np.isfinite(e).all():
        return False
    back = np.flatnonzero(s[1:] <= s[:-1]) + 1
    return bool(back.size) and bool(np.any(e[back] > e[back - 1]))


def duplicate_records(columns: list[np.ndarray]) -> np.ndarray:
    """True for every record equal to an earlier one in all ``columns`` (NaN equals NaN).

    ``columns`` start with the timestamp: only records with one can be told to be the
    same line written twice rather than two steps that logged the same values.
    """
    ts = columns[0]
    n = int(ts.size)
    dup = np.zeros(n, dtype=bool)
    order = np.lexsort(tuple(reversed(columns)))  # stable: the earlier record first
    order = order[np.isfinite(ts[order])]
    if order.size < 2:
        return dup
    same = np.ones(order.size - 1, dtype=bool)
    for col in columns:
        c = col[order]
        same &= (c[1:] == c[:-1]) | (np.isnan(c[1:]) & np.isnan(c[:-1]))
    dup[order[1:][same]] = True
    return dup


def _finite(x: np.ndarray) -> np.ndarray:
    """The finite values of ``x``: ``x`` itself when all are (no copy of a long column)."""
    ok = np.isfinite(x)
    return x if ok.all() else x[ok]


def _finite_at(x: np.ndarray) -> np.ndarray | None:
    """Positions of the finite values of ``x``; None when that is all of them."""
    ok = np.isfinite(x)
    return None if ok.all() else np.flatnonzero(ok)


def _step_back(s: np.ndarray, e: np.ndarray | None) -> np.ndarray:
    """Positions where the step key does not increase: (epoch, step) when ``e`` is given."""
    if e is None:
        return np.flatnonzero(s[1:] <= s[:-1]) + 1
    return np.flatnonzero((e[1:] < e[:-1]) | ((e[1:] == e[:-1]) & (s[1:] <= s[:-1]))) + 1


def _repeats(s: np.ndarray, e: np.ndarray | None) -> bool:
    """Some step key occurs twice."""
    if e is None:
        ordered = np.sort(s)
        return bool(np.any(ordered[1:] == ordered[:-1]))
    o = np.lexsort((s, e))
    return bool(np.any((s[o][1:] == s[o][:-1]) & (e[o][1:] == e[o][:-1])))


def find_segments(step: np.ndarray, ts: np.ndarray, ranks: np.ndarray,
                  epoch: np.ndarray | None = None, rate: np.ndarray | None = None,
                  checkpointed: Callable[[int, float], bool] | None = None,
                  since: float | None = None
                  ) -> tuple[list[Segment], list[Boundary], int]:
    """Split records (file order) into attempts; with the evidence for each boundary.

    A retried job appends a new attempt whose step numbers start again, so a
    step number repeats; then every step that does not increase starts a new
    segment. Without a repeat, records out of order are just out of order.
    ``epoch`` (given when the counter restarts each epoch) makes the step key
    (epoch, step). A change in the logged world size (a job resumed on more
    ranks) splits, and so does a throughput level that changes by more than
    :data:`LEVEL_SHIFT_FACTOR` across a long pause (resumed on fewer ranks,
    when only one throughput is logged), even when the step numbers continue, unless
    ``checkpointed(at, seconds)`` says a save time logged at the pause explains it (a
    checkpoint, then a batch-size ramp: one process all along).

    ``since``: when the process that wrote the last records started (the finalize hook's
    own). Records stamped from then on are that process's, one attempt whatever the rules
    above say (how many boundaries that dropped is returned last); the records before
    them are another launch's, an attempt of their own.
    """
    n = int(step.size)
    cuts: dict[int, Boundary] = {}
    idx = _finite_at(step)  # None: all of them (no index array for a long run)
    s = step if idx is None else step[idx]
    e = epoch if epoch is None or idx is None else epoch[idx]
    back = _step_back(s, e)  # none in a run logged in order: no sort
    if back.size and _repeats(s, e):
        for j in back.tolist():
            cuts[j if idx is None else int(idx[j])] = Boundary(restart=(float(s[j - 1]),
                                                                        float(s[j])))
    ridx = _finite_at(ranks)
    r = ranks if ridx is None else ranks[ridx]
    for j in (np.flatnonzero(r[1:] != r[:-1]) + 1).tolist():
        at = j if ridx is None else int(ridx[j])
        cuts[at] = replace(cuts.get(at, Boundary()), ranks=(int(r[j - 1]), int(r[j])))
    if rate is not None:
        for at, shift in _level_shifts(step, ts, rate, sorted(cuts)):
            if at not in cuts and checkpointed is not None and checkpointed(at, shift[1]):
                continue
            cuts[at] = replace(cuts.get(at, Boundary()), shift=shift)
    dropped = 0
    if since is not None:
        with np.errstate(invalid="ignore"):
            mine = ts >= since - PROCESS_START_SLACK_SEC  # NaN: not known to be
        if mine.any():
            inside = [at for at in cuts if mine[at] and mine[at - 1]]
            for at in inside:
                del cuts[at]
            dropped = len(inside)
            first = int(np.argmax(mine))
            if first and first not in cuts and mine[first:].all():
                cuts[first] = Boundary()  # the evidence is the hook's: its process began
    bounds = [0, *sorted(cuts), n]
    out = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        st, tt, rr = step[a:b], ts[a:b], ranks[a:b]
        fs, ft, fr = _finite(st), _finite(tt), _finite(rr)
        out.append(Segment(a, b, float(fs[0]) if fs.size else None,
                           float(fs[-1]) if fs.size else None,
                           float(ft[0]) if ft.size else None,
                           int(fr[0]) if fr.size else None))
    return out, [cuts[k] for k in sorted(cuts)], dropped


def split_records(step: np.ndarray, cols: dict[str, np.ndarray]) -> np.ndarray:
    """True for each record that logs the step number of the record before it with other
    keys: none of the series both hold a number (loss in one record, dt and tps in the
    next). A retried step logs the same keys again; it is never joined."""
    same = np.zeros(step.size, dtype=bool)
    same[1:] = step[1:] == step[:-1]  # NaN never equals
    if not same.any():
        return same
    for name in SERIES:
        x = np.isfinite(cols[name])
        same[1:] &= ~(x[1:] & x[:-1])
    return same


def _merge(joins: np.ndarray, step: np.ndarray, ts: np.ndarray, bad_loss: np.ndarray,
           cols: dict[str, np.ndarray]
           ) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Each record joined to the one before it: one record, with the first record's
    timestamp and each column's value from whichever record holds one."""
    starts = np.flatnonzero(~joins)
    out = {}
    for k, v in cols.items():
        with np.errstate(invalid="ignore"):
            out[k] = np.fmax.reduceat(np.asarray(v, dtype=np.float64), starts)
    return (step[starts], ts[starts], np.logical_or.reduceat(bad_loss, starts), out)


def _checkpointed(steps: Steps, ts: np.ndarray) -> Callable[[int, float], bool]:
    """Whether a checkpoint or save time logged beside a pause (in the records on either
    side of it, or the next one: fsdp_tp logs it in the next step's record) accounts for
    at least :data:`CHECKPOINT_SHARE_MIN` of it. A second pass over the chosen rank's
    file, made only for a pause across which the throughput changes."""

    def explained(at: int, sec: float) -> bool:
        lo, hi = ts[at - 1], ts[min(at + 1, ts.size - 1)]
        if not (math.isfinite(lo) and math.isfinite(hi)):
            return False
        found = values_of_keys(steps, CHECKPOINT_NEEDLES,
                               lambda k: CHECKPOINT_KEY.search(k) is not None,
                               (float(lo), float(hi)))
        saved = max((sum(v) for v in found.values()), default=0.0)
        return saved >= CHECKPOINT_SHARE_MIN * sec

    return explained


def _level_shifts(step: np.ndarray, ts: np.ndarray, rate: np.ndarray, cuts: list[int]
                  ) -> list[tuple[int, tuple[float, float]]]:
    """Long pauses across which the throughput level changes: (record after, (ratio, sec)).

    Each side's level is the median of its records between the neighbouring cuts and
    pauses, leaving out the first record of each side (the warmup step of a (re)start).
    """
    pauses = _pauses(step, ts)
    if not pauses:
        return []
    edges = sorted({0, int(step.size), *cuts, *(at for at, _ in pauses)})
    found = []
    for at, sec in pauses:
        k = edges.index(at)
        before, after = rate[edges[k - 1] + 1:at], rate[at + 1:edges[k + 1]]
        before, after = before[np.isfinite(before)], after[np.isfinite(after)]
        if before.size < 2 or after.size < 2:
            continue
        lo, hi = median_sorted(np.sort(before)), median_sorted(np.sort(after))
        if lo > 0 and hi > 0 and max(hi / lo, lo / hi) > LEVEL_SHIFT_FACTOR:
            found.append((at, (hi / lo, sec)))
    return found


def _pick_attempt(segments: list[Segment], attempt: str) -> int:
    """0-based index of the segment ``--attempt`` names (``last`` or 1-based N)."""
    if attempt == "last":
        return len(segments) - 1
    k = int(attempt)
    if not 1 <= k <= len(segments):
        held = f"{len(segments)} attempt{'' if len(segments) == 1 else 's'}"
        raise AmscError(opt("attempt", k) + f": the records hold {held}; pass "
                        + opt("attempt", "last") + f" or a number from 1 to {len(segments)}")
    return k - 1


def _first_timestamp(ts: np.ndarray, step: np.ndarray, out: Timestamps) -> float | None:
    """The row's timestamp: the first step's, unless its clock is off (then the next one's)."""
    stamped = np.isfinite(ts)
    if not stamped.any():
        return None
    used = first = int(np.argmax(stamped))
    rest = stamped[first + 1:]
    if rest.any():
        second = first + 1 + int(np.argmax(rest))
        a, b = float(ts[first]), float(ts[second])
        nxt = _step_text(step[second])
        if a > b + 1.0:
            out.skewed_first = f"is later than {nxt}'s"
        elif b - a > FIRST_GAP_MAX_SEC:
            out.skewed_first = f"is {(b - a) / 86400:.0f} days before {nxt}'s"
        if out.skewed_first:
            out.skewed_step, out.skewed_ts = float(step[first]), a
            used = second
    out.used_index = used
    out.used_step = float(step[used]) if np.isfinite(step[used]) else None
    return float(ts[used])


def _step_text(x: float) -> str:
    return f"step {int(x)}" if np.isfinite(x) and x == int(x) else "the next step"


def _epoch_column(steps: Steps) -> np.ndarray:
    """Every record's epoch; one that never changes (read at the first record only, the usual
    case) is one number repeated by a read-only view, not a column of a long run's length."""
    at = [k for k in steps.epochs if 0 <= k < len(steps)]
    if at == [0]:
        return np.broadcast_to(np.float64(steps.epochs[0]), (len(steps),))
    return np.frombuffer(epoch_values(steps), dtype=np.float64)


def _tokens_column(steps: Steps) -> np.ndarray:
    """Every record's tokens: the leading run of one value, then the column of the rest
    (a read-only view of one number when the run is all of them, the usual case)."""
    first = np.float64(steps.tokens_first)
    if steps.tokens_run >= len(steps):
        return np.broadcast_to(first, (len(steps),))
    rest = np.frombuffer(steps.tokens, dtype=np.float64)
    return np.concatenate((np.full(steps.tokens_run, first), rest)) if steps.tokens_run else rest


def reduce_steps(steps: Steps, warmup: int, reducer: str, attempt: str | None = None,
                 now: float | None = None, since: float | None = None) -> Reduced:
    """Keep the training steps (of one attempt), order them, and reduce every series.

    ``attempt``: ``last`` or a 1-based number, the segment to export when the
    records hold several (see :func:`find_segments`); ``None`` keeps them all
    and leaves the refusal to the checks. ``since``: the start of the process that wrote
    the last records, when known (the finalize hook; see :func:`find_segments`).
    """
    if reducer not in REDUCERS:
        raise ValueError(f"unknown reducer {reducer!r}")
    notes: list[str] = []
    if len(steps) == 0:
        return Reduced(0, None, None, None, notes=notes)
    step = np.frombuffer(steps.step, dtype=np.float64)
    ts_raw = np.frombuffer(steps.timestamp, dtype=np.float64)
    cols = {k: np.frombuffer(steps.series[k], dtype=np.float64) for k in SERIES}
    cols[TOKENS] = _tokens_column(steps)
    cols[EPOCH] = _epoch_column(steps)
    bad_loss = np.zeros(len(steps), dtype=bool)
    bad_loss[steps.loss_nonfinite] = True

    # Only training steps: records without the run's counter (eval batches) are not,
    # nor records with it that carry none of the series the others do (eval records
    # numbered by the training step).
    not_steps = not_training = evaluations = 0
    if steps.step_key is not None:
        keep = np.frombuffer(steps.counter, dtype=np.int8) == COUNTER_KEYS.index(steps.step_key)
        not_steps = int(keep.size - keep.sum())
        trained = keep.copy()
        trained[steps.contentless] = False
        if trained.any():
            not_training = int(keep.sum() - trained.sum())
            keep = trained
        if steps.evaluations:  # nanoGPT-style evaluation records beside the steps
            trained = keep.copy()
            trained[steps.evaluations] = False
            if trained.any():
                evaluations = int(keep.sum() - trained.sum())
                keep = trained
        if not_steps or not_training or evaluations:
            step, ts_raw, bad_loss = step[keep], ts_raw[keep], bad_loss[keep]
            cols = {k: v[keep] for k, v in cols.items()}
    if step.size == 0:
        return Reduced(0, None, None, None, notes=notes, not_steps=not_steps,
                       counter=steps.step_key)

    # A line written twice is one record: only a step number that repeats can be one
    # (and only a step that does not increase can repeat one: no sort in the usual case).
    duplicates = 0
    finite_step = _finite(step)
    if _step_back(finite_step, None).size and _repeats(finite_step, None):
        dup = duplicate_records([ts_raw, step, *cols.values()])
        duplicates = int(dup.sum())
        if duplicates:
            keep = ~dup
            step, ts_raw, bad_loss = step[keep], ts_raw[keep], bad_loss[keep]
            cols = {k: v[keep] for k, v in cols.items()}
        joins = split_records(step, cols)
        if joins.any():
            merged = int(joins.sum())
            step, ts_raw, bad_loss, cols = _merge(joins, step, ts_raw, bad_loss, cols)
            notes.append(f"merged {plural(merged, 'record')} into the record before "
                         f"{'it' if merged == 1 else 'each'}: the same {steps.step_key} with "
                         "other keys (one step logged in two records), one step, not a retry")
    if evaluations:
        notes.append(f"left out {plural(evaluations, 'record')} with {steps.step_key} and "
                     f"{steps.eval_key} beside training keys, under the step number of the "
                     "record beside each: evaluation records, not training steps")

    hi = (time.time() if now is None else now) + CLOCK_SLACK_SEC
    with np.errstate(invalid="ignore"):
        plausible = (ts_raw >= TIMESTAMP_MIN) & (ts_raw <= hi)
    # Every timestamp plausible (the usual case): the column itself, not a copy of it.
    ts = ts_raw if plausible.all() else np.where(plausible, ts_raw, np.nan)
    del plausible
    latest = float(np.fmax.reduce(ts))  # NaN (no timestamp) is passed over
    last_read = latest if math.isfinite(latest) else None

    by_epoch = restarts_each_epoch(step, cols[EPOCH])
    epoch = cols[EPOCH] if by_epoch else None
    rate = cols["tps"] if np.isfinite(cols["tps"]).any() else cols["tps_per_gpu"]
    segments, boundaries, in_process = find_segments(
        step, ts, ranks_per_step(cols["tps"], cols["tps_per_gpu"]), epoch, rate,
        _checkpointed(steps, ts), since)
    if in_process:
        assert since is not None  # boundaries are dropped only for a known start
        notes.append(f"this process wrote the records since it started at "
                     f"{format_timestamp(since)}: one attempt, though the command line "
                     f"would split them in {in_process + 1} (a throughput change across a "
                     "pause, a counter that repeats)")
    chosen = None
    if attempt is not None:
        chosen = _pick_attempt(segments, attempt)
        seg = segments[chosen]
        part = slice(seg.start, seg.stop)
        step, ts, ts_raw, bad_loss = step[part], ts[part], ts_raw[part], bad_loss[part]
        cols = {k: v[part] for k, v in cols.items()}
    n = int(step.size)

    step_key = step if np.isfinite(step).all() else np.where(np.isfinite(step), step, np.inf)
    epoch_key = np.where(np.isfinite(cols[EPOCH]), cols[EPOCH], np.inf) if by_epoch else None
    # Strictly increasing step keys (a run logged in order, the usual case)
    # already are the sorted order, whatever the timestamps: skip the sort and
    # its index arrays, the largest memory cost of a long run.
    in_order = (bool(np.all(step_key[1:] > step_key[:-1])) if epoch_key is None
                else not _step_back(step_key, epoch_key).size)
    if not in_order:
        ts_key = np.where(np.isfinite(ts), ts, np.inf)
        keys = (np.arange(n), ts_key, step_key) + ((epoch_key,) if epoch_key is not None else ())
        order = np.lexsort(keys)
        if not np.array_equal(order, np.arange(n)):
            by = "epoch, then step key" if by_epoch else "step key"
            notes.append(f"records were out of order; sorted {n} steps by {by}, then timestamp")
            step, ts, ts_raw, bad_loss = step[order], ts[order], ts_raw[order], bad_loss[order]
            cols = {k: v[order] for k, v in cols.items()}
    invalid, over_100 = _drop_impossible(cols)
    if invalid:
        parts = ", ".join(f"{k} {v}" for k, v in invalid.items())
        notes.append(f"dropped {plural(sum(invalid.values()), 'impossible value')} (step time "
                     f"<= 0 or negative throughput/mfu/tflops: {parts})")

    missing_step = int((~np.isfinite(step)).sum())
    if missing_step and steps.step_key is not None:
        have = "has" if missing_step == 1 else "have"
        notes.append(f"{missing_step} of {plural(n, 'step')} {have} a non-finite {steps.step_key}; "
                     "ordered by timestamp, last")

    present = np.isfinite(ts_raw)
    stamps = Timestamps(present=int(present.sum()), last_read=last_read)
    bad = present & ~np.isfinite(ts)
    stamps.implausible = int(bad.sum())
    if stamps.implausible:
        stamps.first_bad = float(ts_raw[np.flatnonzero(bad)[0]])
    stamps.first_step_raw = float(ts_raw[0]) if present[0] else None
    first_ts = _first_timestamp(ts, step, stamps)

    dt = cols["dt"]
    dt_ok = np.isfinite(dt)
    with np.errstate(over="ignore"):  # all finite: the same sum, without a copy
        wall = float((dt if dt_ok.all() else dt[dt_ok]).sum()) if dt_ok.any() else None
    if wall is not None and not np.isfinite(wall):
        notes.append("summed step time overflows a float; left unknown")
        wall = None

    final_loss, tail, stale = _final_loss(cols["loss"], bad_loss, step)

    stats = {k: reduce_series(cols[k], warmup, reducer) for k in SERIES}
    for k, s in stats.items():
        if s.value is None and s.present:
            notes.append(f"{k} reduces to a value too large for a float; left empty")
    coverage = None
    if steps.step_key is not None:
        coverage = epoch_coverage(step, cols[EPOCH]) if by_epoch else step_coverage(step)
    return Reduced(n, first_ts, wall, final_loss, stats, step, notes, coverage, invalid,
                   mfu_over_100=over_100, ts_values=ts, timestamps=stamps, not_steps=not_steps,
                   not_training=not_training, evaluations=evaluations,
                   duplicates=duplicates, by_epoch=by_epoch,
                   counter=steps.step_key, segments=segments, boundaries=boundaries,
                   attempt=None if chosen is None else chosen + 1, in_process=in_process,
                   loss_nonfinite_tail=tail, stale_loss=stale,
                   tokens_values=cols[TOKENS], epoch_values=cols[EPOCH])


def _final_loss(loss: np.ndarray, bad: np.ndarray, step: np.ndarray
                ) -> tuple[float | None, int, tuple[float, float | None] | None]:
    """The last logged loss; ``None`` when it was NaN/inf (a diverged run), with the
    number of such trailing steps and the stale last finite value it must not become."""
    finite = np.isfinite(loss)
    logged = finite | bad
    if not logged.any():
        return None, 0, None
    last_logged = _last_true(logged)
    if not bad[last_logged]:
        return float(loss[last_logged]), 0, None
    if not finite.any():
        return None, int(logged.sum()), None
    last = _last_true(finite)
    at = float(step[last]) if np.isfinite(step[last]) else None
    return None, int(logged[last + 1:].sum()), (float(loss[last]), at)


def _last_true(mask: np.ndarray) -> int:
    """The position of the last True of a mask holding one."""
    return int(mask.size - 1 - np.argmax(mask[::-1]))
