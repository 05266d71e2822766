"""A large results file's clean rows filed into the report's points many at a time, with numpy.

The rows ``check`` matched whole (:data:`~ezpz_amsc.results.validate.OnClean`) hold no
quote and no comma in a cell, so tens of thousands of them are one buffer whose commas
say where every cell is: their numbers are parsed there (:class:`CleanRuns`), with no
Python object per cell, and each point gets its repeats as a slice of columns. That
keeps ``report`` on a million rows near the cost of reading them. The other rows, and
every row of a small file (which never imports numpy), are filed one at a time by
:mod:`ezpz_amsc.report.data`; both ways give the same points, to the bit.

A number is parsed the exact way only: a cell of at most 15 digits is its integer
divided by a power of ten up to 10^15, two numbers a double holds exactly, so the
one rounding of the division is the correctly rounded value ``float()`` gives. A
longer cell is read by ``float()``.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any

from ezpz_amsc.results.schema import HEADER

# tokens/s/gpu x gpus against tokens/s of the same row. The exporter writes
# one from the other (or both from ezpz, which divides by the ranks that ran),
# so they agree to rounding; 2 % apart means the gpus cell is not the count
# the throughput was measured with.
GPUS_MISMATCH_PCT = 2.0
MIN_RATE = 0.001  # the smallest positive throughput a row written at 3 decimals holds
# Files of at least this many bytes are filed a run of clean rows at a time (numpy); a
# smaller one costs less than importing numpy does.
RUNS_FROM_BYTES = 4 << 20
# Runs of clean rows are filed once they hold this many (numpy's cost per call, spread),
# from the first rows on fewer: a point's rows are filed here only after a row of it was
# filed the long way, which the file's first rows are likely to be.
RUN_ROWS = 1 << 14
FIRST_RUN_ROWS = 1 << 10
# Filed rows are handed out to their points once this many are kept (each hand-out costs
# Python's time per point it gives rows to).
HAND_OUT_ROWS = 1 << 17


class Point:
    """The measured repeats of one point (same config, system, nodes, gpus): ``pass`` rows
    with both throughput cells, kept as columns of numbers, not as rows."""

    __slots__ = ("tps", "tps_per_gpu", "mfu_pct", "mfu_zero", "sources", "mismatched",
                 "wall", "steps", "first", "last")

    def __init__(self) -> None:
        self.tps = array("d")
        self.tps_per_gpu = array("d")
        self.mfu_pct = array("d")  # the repeats that measured mfu (0.0 is read as unknown)
        self.mfu_zero = 0  # repeats whose mfu cell held 0.0: ezpz's "peak FLOPS unknown"
        self.sources = array("I")  # where each repeat is (``Sweep.source``); 8 bytes if need be
        # (where, tokens/s/gpu x gpus / tokens/s) of the repeats off by GPUS_MISMATCH_PCT
        self.mismatched: list[tuple[int, float]] = []
        # What ``compare`` shows or checks beside the rates: the wall times the repeats
        # have, how many repeats logged each ``steps`` cell (as written; "" when empty),
        # and the first and last timestamp (the schema's fixed format sorts as text).
        self.wall = array("d")
        self.steps: dict[str, int] = {}
        self.first = self.last = ""

    def __len__(self) -> int:
        return len(self.tps)


def gpus_mismatch(tps: float, tps_per_gpu: float, gpus: int) -> float | None:
    """tokens/s/gpu x gpus / tokens/s, rounded as printed, when it is off by more than
    :data:`GPUS_MISMATCH_PCT`; else None."""
    ratio = round(tps_per_gpu * gpus / tps, 2)
    if not math.isfinite(ratio):  # tokens/s/gpu x gpus past the largest double
        return ratio
    if abs(round(ratio * 100) - 100) > GPUS_MISMATCH_PCT:  # whole percent: no float fuzz
        return ratio
    return None


# Where the cells the runs are read at are: after comma number (cell index - 1).
_WALL, _TPS, _TPS_PER_GPU, _MFU, _STEPS = (
    HEADER.index(c) for c in ("wall_time_sec", "throughput_tokens_per_sec",
                              "throughput_tokens_per_sec_per_gpu", "mfu", "steps"))
_STATUS = HEADER.index("status")
_SYSTEM, _GPUS = HEADER.index("system"), HEADER.index("gpus")  # a point's cells: between them
_COMMAS = len(HEADER) - 1
_CELLS_AT_ONCE = 1 << 15  # numbers parsed at a time
_DIGITS = 15  # at most: below 2**53, so the integer and its float are the same number
_POINT, _NL, _COMMA, _ZERO = ord("."), ord("\n"), ord(","), ord("0")
assert (_SYSTEM, _GPUS, _STATUS) == (1, 4, 5) and HEADER[0] == "timestamp"


class CleanRuns:
    """Runs of clean rows, kept and then filed many at a time: the rows of points whose
    cells (system, config, nodes, gpus, as written) a row filed the long way named before
    (:meth:`known`); :meth:`file` hands every other row to its ``slow``, in order.
    """

    def __init__(self) -> None:
        self.np: Any = None  # numpy, once a run is filed: a file of no clean row never loads it
        self._ids: dict[bytes, int] = {}  # a point's cells as written, joined: their number
        self._point_of_id: list[int] = []  # each number's point (an index into _points)
        self._points: list[Point] = []
        self._numbers: dict[int, int] = {}  # id() of each of _points: its index
        self._gpus: list[int] = []  # each point's gpus count
        self._spellings: list[tuple[Counter[str], str]] = []  # each number's system's
        self._new: list[bytes] = []  # joined cells not yet looked up, numbered in order
        self._steps: list[tuple[Any, Any, Any]] = []  # per run: (point, steps value, rows)
        self._runs: list[tuple[list[str], int, list[int]]] = []  # kept, not yet filed
        # Per run filed: its rows' points and columns (where, tps, tps/gpu, mfu, wall time),
        # not yet handed out: a point's rows are handed out many runs at a time.
        self._filed: list[tuple[Any, ...]] = []
        self._filed_rows = 0
        self._kept = 0  # rows in them
        self._file_at = FIRST_RUN_ROWS  # rows kept: twice as many each time, to RUN_ROWS

    def _start(self) -> None:
        """numpy, and the columns kept with it."""
        import numpy as np

        self.np = np
        self._rows_of_id = np.zeros(0, np.int64)  # rows filed here, per number
        self._sorted = np.zeros(0, "S1")  # the joined cells looked up, sorted, fixed-width
        self._sorted_ids = np.zeros(0, np.int64)  # their numbers
        self._point_array = np.zeros(0, np.int32)  # each of those numbers' point
        # Each point's first and last timestamp of the rows filed here, as YYYYMMDDhhmmss
        self._lows = np.zeros(0, np.int64)
        self._highs = np.zeros(0, np.int64)  # 0: none

    def known(self, cells: Sequence[str], point: Point, gpus: int,
              spellings: Counter[str]) -> None:
        """Cells (system, config, nodes, gpus) of ``point``, as a row filed the long way
        wrote them: ``spellings`` counts that row's system spelling's rows."""
        if any("," in c for c in cells):  # joined, they would read as other cells
            return
        key = ",".join(cells).encode()
        if key in self._ids:
            return
        number = self._numbers.get(id(point))
        if number is None:
            number = self._numbers[id(point)] = len(self._points)
            self._points.append(point)
            self._gpus.append(gpus)
        self._ids[key] = len(self._point_of_id)
        self._point_of_id.append(number)
        self._spellings.append((spellings, cells[0]))
        self._new.append(key)

    def add(self, texts: list[str], line: int, dropped: list[int]) -> bool:
        """Keep a run of clean rows from line ``line`` (but ``dropped``, indexes into
        ``texts``) to be filed; True when enough rows are kept to file them at once."""
        self._runs.append((texts, line, dropped))
        self._kept += len(texts)
        if self._kept < self._file_at:
            return False
        self._file_at = min(2 * self._file_at, RUN_ROWS)
        return True

    def file(self, where_of: Callable[[Any], Any], slow: Callable[[str, int], None]) -> None:
        """File the runs kept: the rows of known points here, and ``slow(text, line)`` for
        each other row, in order (before these: they are of no known point, or add no
        repeat). ``where_of(lines)`` is where rows of those line numbers are kept."""
        if not self._runs:
            return
        if self.np is None:
            self._start()
        np = self.np
        runs, self._runs, self._kept = self._runs, [], 0
        texts = list(chain.from_iterable(run[0] for run in runs))
        n = len(texts)
        lines = np.concatenate([np.arange(line, line + len(t)) for t, line, _ in runs])
        keep = np.ones(n, bool)
        base = 0
        for run_texts, _, dropped in runs:
            keep[[base + i for i in dropped]] = False
            base += len(run_texts)
        data = np.frombuffer(("\n".join(texts) + "\n").encode(), np.uint8)
        commas = np.flatnonzero(data == _COMMA)
        ends = np.flatnonzero(data == _NL)
        assert len(commas) == _COMMAS * n and len(ends) == n  # clean rows: no comma in a cell
        c = commas.reshape(n, _COMMAS)
        starts = np.empty(n, np.int64)
        starts[0], starts[1:] = 0, ends[:-1] + 1

        def cell(j: int) -> tuple[Any, Any]:  # where cell j (> 0) starts and ends
            return c[:, j - 1] + 1, (c[:, j] if j < _COMMAS else ends)

        ids = self._lookup(data, cell(_SYSTEM)[0], cell(_GPUS)[1])
        ours = keep & (ids >= 0) & (data[cell(_STATUS)[0]] == ord("p"))
        spans = [cell(j) for j in (_TPS, _TPS_PER_GPU, _MFU, _WALL)]
        starts_4, ends_4 = (np.concatenate([span[k] for span in spans]) for k in (0, 1))
        values = self._parse(data, starts_4, ends_4, np.tile(ours, 4)).reshape(4, n)
        ours &= (values[0] >= MIN_RATE) & (values[1] >= MIN_RATE)  # an empty one is NaN
        for i in np.flatnonzero(keep & ~ours).tolist():
            slow(texts[i], int(lines[i]))
        rows = np.flatnonzero(ours)
        if not len(rows):
            return
        ids = ids[rows]
        self._rows_of_id += np.bincount(ids, minlength=len(self._rows_of_id))
        points = self._point_array[ids]
        s, e = cell(_STEPS)
        self._count_steps(points, np.where(e[rows] > s[rows],
                                           _integers(np, data, s[rows], e[rows]), -1))
        self._when(points, _stamps(np, data, starts[rows]))
        self._filed.append((points, where_of(lines[rows]),
                            *(column[rows] for column in values)))
        self._filed_rows += len(rows)
        if self._filed_rows >= HAND_OUT_ROWS:
            self.hand_out()

    def hand_out(self) -> None:
        """Give each point the rows filed here since the last time, in the file's order (to
        be called before a row of a point filed here is filed another way)."""
        if not self._filed:
            return
        np = self.np
        columns = list(zip(*self._filed, strict=True))
        self._filed, self._filed_rows = [], 0
        points = np.concatenate(columns[0])
        order = np.argsort(points, kind="stable")  # each point's rows in the file's order
        points = points[order]
        where, tps, tps_per_gpu, mfu, wall = (np.concatenate(c)[order] for c in columns[1:])
        del columns
        n = len(points)
        firsts = np.flatnonzero(np.r_[True, points[1:] != points[:-1]])
        lasts = np.r_[firsts[1:], n]
        logged = ~np.isnan(mfu) & (mfu != 0)
        mfu_zero = np.add.reduceat(mfu == 0, firsts)
        mfu_at = np.r_[0, np.cumsum(logged)]
        mfu = mfu[logged]
        timed = ~np.isnan(wall)
        wall_at = np.r_[0, np.cumsum(timed)]
        wall = wall[timed]
        wide = int(where.max()) > 0xFFFFFFFF  # line x files past 4,294,967,295
        gpus = np.asarray(self._gpus, np.float64)[points]
        # Only the rows a ratio of 1.5 % off could flag are judged the exact way.
        with np.errstate(over="ignore"):  # an infinite ratio is one of them
            suspects = np.flatnonzero(np.abs(tps_per_gpu * gpus / tps - 1) > 0.015).tolist()
        # Each column's bytes, sliced for each point (8 bytes a value, 4 a narrow source).
        tps_b, tps_per_gpu_b, mfu_b, wall_b, where_b = (
            memoryview(column).cast("B") for column in (tps, tps_per_gpu, mfu, wall, where))
        narrow_b = None if wide else memoryview(where.astype(np.uint32)).cast("B")
        s = 0
        for number, lo, hi, zero, mfu_lo, mfu_hi, wall_lo, wall_hi in zip(
                points[firsts].tolist(), firsts.tolist(), lasts.tolist(), mfu_zero.tolist(),
                mfu_at[firsts].tolist(), mfu_at[lasts].tolist(), wall_at[firsts].tolist(),
                wall_at[lasts].tolist(), strict=True):
            point = self._points[number]
            point.tps.frombytes(tps_b[8 * lo:8 * hi])
            point.tps_per_gpu.frombytes(tps_per_gpu_b[8 * lo:8 * hi])
            if narrow_b is not None and point.sources.typecode == "I":
                point.sources.frombytes(narrow_b[4 * lo:4 * hi])
            else:
                if point.sources.typecode != "q":
                    point.sources = array("q", point.sources)
                point.sources.frombytes(where_b[8 * lo:8 * hi])
            point.mfu_zero += zero
            point.mfu_pct.frombytes(mfu_b[8 * mfu_lo:8 * mfu_hi])
            point.wall.frombytes(wall_b[8 * wall_lo:8 * wall_hi])
            while s < len(suspects) and suspects[s] < hi:
                i = suspects[s]
                ratio = gpus_mismatch(float(tps[i]), float(tps_per_gpu[i]),
                                      self._gpus[number])
                if ratio is not None:
                    point.mismatched.append((int(where[i]), ratio))
                s += 1

    def _count_steps(self, points: Any, steps: Any) -> None:
        """Count the rows of each point's steps values (-1: empty), to be handed out last."""
        np = self.np
        values, codes = np.unique(steps, return_inverse=True)
        pairs, counts = np.unique(points.astype(np.int64) * len(values) + codes,
                                  return_counts=True)
        self._steps.append((pairs // len(values), values[pairs % len(values)], counts))

    def _when(self, points: Any, stamps: Any) -> None:
        """The first and last timestamp of each point, with these."""
        np = self.np
        grow = len(self._points) - len(self._lows)
        if grow > 0:
            none = np.full(grow, np.iinfo(np.int64).max)  # above every YYYYMMDDhhmmss
            self._lows = np.concatenate([self._lows, none])
            self._highs = np.concatenate([self._highs, np.zeros(grow, np.int64)])
        np.minimum.at(self._lows, points, stamps)
        np.maximum.at(self._highs, points, stamps)

    def finish(self) -> None:
        """What is not handed out with each run: the points' steps cells and first and last
        timestamps, and the rows of each spelling of a system."""
        assert not self._filed and not self._runs  # all handed out
        np = self.np
        if np is None:  # no run filed
            return
        for (spellings, system), rows in zip(self._spellings, self._rows_of_id.tolist(),
                                             strict=False):  # later numbers filed no row
            if rows:
                spellings[system] += rows
        if self._steps:
            points, values, counts = (np.concatenate(c) for c in zip(*self._steps, strict=True))
            values, codes = np.unique(values, return_inverse=True)
            pairs, at = np.unique(points * len(values) + codes, return_inverse=True)
            counts = np.bincount(at, weights=counts).astype(np.int64)  # below 2**53: exact
            texts = ["" if v < 0 else str(v) for v in values.tolist()]
            for pair, count in zip(pairs.tolist(), counts.tolist(), strict=True):
                number, code = divmod(pair, len(values))
                steps = self._points[number].steps
                steps[texts[code]] = steps.get(texts[code], 0) + count
        filed = np.flatnonzero(self._highs)
        for number, low, high in zip(filed.tolist(), self._lows[filed].tolist(),
                                     self._highs[filed].tolist(), strict=True):
            point = self._points[number]
            first, last = _stamp_text(low), _stamp_text(high)
            if not point.first or first < point.first:
                point.first = first
            if last > point.last:
                point.last = last

    def _lookup(self, data: Any, starts: Any, ends: Any) -> Any:
        """Each row's number of its point's cells (-1: not one a row was filed under)."""
        np = self.np
        lengths = ends - starts
        if self._new:
            self._look_up_new()
        if not len(self._sorted):
            return np.full(len(starts), -1, np.int64)
        width = self._sorted.dtype.itemsize
        fits = lengths <= width  # a longer one is no key known
        padded = np.concatenate((data, np.zeros(width, np.uint8)))
        windows = np.lib.stride_tricks.sliding_window_view(padded, width)[starts]
        wanted = np.where(np.arange(width) < lengths[:, None], windows, 0)
        wanted = np.ascontiguousarray(wanted).view(f"S{width}").ravel()
        pos = np.minimum(np.searchsorted(self._sorted, wanted), len(self._sorted) - 1)
        # No cell holds a NUL, so bytes padded with NULs compare as the cells do.
        found = fits & (self._sorted[pos] == wanted)
        return np.where(found, self._sorted_ids[pos], -1)

    def _look_up_new(self) -> None:
        """The cells known since the last lookup merged into the sorted ones (a copy, not a
        sort of them all: a file of many points names new ones in every run)."""
        np = self.np
        new, first = self._new, len(self._sorted_ids)
        self._new = []
        keys = np.array(new, dtype=bytes)
        width = max(keys.dtype.itemsize, self._sorted.dtype.itemsize)
        old = self._sorted.astype(f"S{width}")
        order = np.argsort(keys)
        keys = keys.astype(f"S{width}")[order]
        at = np.searchsorted(old, keys)
        self._sorted = np.insert(old, at, keys)
        self._sorted_ids = np.insert(self._sorted_ids, at, first + order)
        self._point_array = np.concatenate(
            [self._point_array, np.asarray(self._point_of_id[first:], np.int32)])
        self._rows_of_id = np.concatenate([self._rows_of_id, np.zeros(len(new), np.int64)])

    def _parse(self, data: Any, starts: Any, ends: Any, wanted: Any) -> Any:
        """The decimal numbers between ``starts`` and ``ends`` (NaN where empty), exact; the
        ``wanted`` ones of more than :data:`_DIGITS` digits by ``float()``."""
        np = self.np
        values, exact = np.empty(len(starts)), np.empty(len(starts), bool)
        for at in range(0, len(starts), _CELLS_AT_ONCE):  # its scratch: 128 bytes a cell
            part = slice(at, at + _CELLS_AT_ONCE)
            values[part], exact[part] = _decimals(np, data, starts[part], ends[part])
        for i in np.flatnonzero(wanted & ~exact).tolist():
            values[i] = float(bytes(data[starts[i]:ends[i]]))
        return values


_PLACES = array("q", [10 ** k for k in range(17, -1, -1)])  # 10^17 .. 1


def _decimals(np: Any, data: Any, starts: Any, ends: Any) -> tuple[Any, Any]:
    """Numbers ``[0-9]*(.[0-9]+)?`` between ``starts`` and ``ends``: (values, exact). A
    value is exact where the cell has at most :data:`_DIGITS` digits (and NaN where it is
    empty); elsewhere it is not to be used."""
    lengths = ends - starts
    width = min(max(int(lengths.max(initial=0)), 1), _DIGITS + 1)  # the digits and a point
    chars = _last_bytes(np, data, ends, lengths, width)
    places = np.frombuffer(_PLACES, np.int64)[-width:]  # each byte's, right to left
    point = (chars == _POINT) @ places  # 10^(digits after it); 0: no point
    # The digits as one integer, the point read as a digit 0 ("12.5" -> 1205)...
    whole = chars @ places - _ZERO * int(places.sum()) + (_ZERO - _POINT) * point
    # ... and without it: the digits left of it are a place too high.
    has_point = point > 0
    right = np.where(has_point, whole % np.maximum(point, 1), 0)
    mantissa = np.where(has_point, (whole - right) // 10 + right, whole)
    values = mantissa / np.maximum(point, 1)  # both exact doubles: one rounding, float()'s
    values[lengths == 0] = np.nan
    return values, lengths - has_point <= _DIGITS


def _last_bytes(np: Any, data: Any, ends: Any, lengths: Any, width: int) -> Any:
    """The last ``width`` bytes of each cell, those before the cell's start "0"."""
    padded = np.concatenate((np.full(width, _ZERO, np.uint8), data))
    windows = np.lib.stride_tricks.sliding_window_view(padded, width)[ends]
    return np.where(np.arange(width) >= (width - lengths)[:, None], windows, _ZERO)


def _integers(np: Any, data: Any, starts: Any, ends: Any) -> Any:
    """Whole numbers of at most 18 digits (a steps cell) between ``starts`` and ``ends``."""
    lengths = ends - starts
    width = max(int(lengths.max(initial=0)), 1)
    assert width <= 18  # what the clean-row pattern lets through
    chars = _last_bytes(np, data, ends, lengths, width)
    places = np.frombuffer(_PLACES, np.int64)[-width:]
    return chars @ places - _ZERO * int(places.sum())


# Each byte of YYYY-MM-DDThh:mm:ssZ: its place in the number YYYYMMDDhhmmss (0: a separator).
_STAMP_PLACES = array("d", [10.0 ** k for k in (13, 12, 11, 10)] + [0.0]
                      + [10.0 ** k for k in (9, 8)] + [0.0] + [10.0 ** k for k in (7, 6)]
                      + [0.0] + [10.0 ** k for k in (5, 4)] + [0.0]
                      + [10.0 ** k for k in (3, 2)] + [0.0] + [10.0 ** k for k in (1, 0)]
                      + [0.0])


def _stamps(np: Any, data: Any, starts: Any) -> Any:
    """The timestamps at the rows' starts as the numbers YYYYMMDDhhmmss."""
    places = np.frombuffer(_STAMP_PLACES)
    chars = np.lib.stride_tricks.sliding_window_view(data, len(places))[starts]
    # Below 2**53 at every step: exact in a double.
    return (chars @ places - _ZERO * places.sum()).astype(np.int64)


def _stamp_text(stamp: int) -> str:
    """YYYYMMDDhhmmss as the schema writes it."""
    s = f"{stamp:014d}"
    return f"{s[:4]}-{s[4:6]}-{s[6:8]}T{s[8:10]}:{s[10:12]}:{s[12:]}Z"
