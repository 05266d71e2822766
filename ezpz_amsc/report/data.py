"""``report PATH...``: a scaling study over results files, before the rows go public.

Reads results files exactly as ``--check`` does (a row with a problem is
reported and left out), groups the ``pass`` rows by (config, system), and per
node count takes medians over the repeats. The report is one plain dict
(:func:`build_report`); the JSON (``--format json``), the text
(:mod:`ezpz_amsc.report_text`) and the plot (:mod:`ezpz_amsc.plot`) are all
drawn from it, so they cannot disagree. Throughputs keep the rows' 3 decimals;
efficiency, spread and ratios are rounded to what the text shows before any
flag compares them, so a flag never contradicts the number printed next to it.

A sweep is usually thousands of rows, read without numpy; a large file's measured
repeats are parsed a block at a time with it (:mod:`ezpz_amsc.report.columns`).
"""

from __future__ import annotations

import contextlib
import functools
import math
import operator
import os
import statistics
from array import array
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from ezpz_amsc.errors import AmscError
from ezpz_amsc.fs.read import open_regular
from ezpz_amsc.report.columns import (
    GPUS_MISMATCH_PCT,
    MIN_RATE,
    RUNS_FROM_BYTES,
    CleanRuns,
    Point,
    gpus_mismatch,
)
from ezpz_amsc.results.rows import read_records
from ezpz_amsc.results.schema import (
    HEADER,
    KEY_COLUMNS,
    KEY_INDEX,
    MAX_COUNT,
    MFU_ZERO_MEANS,
    RunKey,
    column,
)
from ezpz_amsc.results.seen import SeenRuns
from ezpz_amsc.results.validate import Capped, check_results_file, more_problems
from ezpz_amsc.text import plural

# Efficiency above this is superlinear. Per-GPU throughput cannot really grow
# with the node count of a weak-scaling run; a few percent can (a cooler node,
# a lucky placement, run-to-run noise), more almost always means a wrong gpus
# count somewhere: too few gpus recorded here, or too many at the baseline.
SUPERLINEAR_ABOVE = 1.05
# Efficiency below this is a collapse: a judgement, set so that ordinary
# communication overhead does not trip it and a broken point does. A healthy
# data-parallel run overlaps its gradient all-reduce with compute and loses
# per-GPU rate slowly as nodes grow; below 70 % almost a third of every GPU is
# lost to something the baseline did not pay for (a slow or faulty node, a bad
# placement, a communication setting, too many gpus recorded), which is worth
# a look before the point is published, even if the model really scales that
# badly.
LOW_EFFICIENCY_BELOW = 0.70
# Repeats of one point (same config, system, nodes, gpus) whose tokens/s
# differ by more than this, relative to their median, do not measure one rate.
SPREAD_ABOVE_PCT = 10.0

TPS = column("throughput_tokens_per_sec")
TPS_PER_GPU = column("throughput_tokens_per_sec_per_gpu")
MFU = column("mfu")


# --- reading ----------------------------------------------------------------------------------

PointKey = tuple[str, str, int, int]  # config, system (case folded), nodes, gpus


@dataclass
class Sweep:
    """Every usable row of the results files, sorted into the report's piles."""

    files: list[str]
    rows_read: int = 0
    problems: list[str] = field(default_factory=list)  # the first of each file's, bounded
    problem_count: int = 0  # all of them, those not listed included
    measured: dict[PointKey, Point] = field(default_factory=dict)
    failed: list[dict[str, Any]] = field(default_factory=list)
    without_throughput: list[dict[str, Any]] = field(default_factory=list)
    # System names compare case-insensitively (a hand-made "aurora" beside exported
    # "Aurora" rows is one machine): each folded name's spellings, with their rows.
    spellings: dict[str, Counter[str]] = field(default_factory=dict)

    def system_name(self, system: str) -> str:
        """The name a system is shown by: its most common spelling (ties: the first sorted)."""
        counts = self.spellings[system.casefold()]
        return min(counts, key=lambda name: (-counts[name], name))

    @property
    def rows_used(self) -> int:
        return (sum(len(point) for point in self.measured.values()) + len(self.failed)
                + len(self.without_throughput))

    def source(self, where: int) -> str:
        """``PATH:LINE`` of a row kept as ``where``: its line x the number of files + its file's."""
        line, number = divmod(where, len(self.files))
        return f"{self.files[number]}:{line}"


def read_sweep(paths: Sequence[str | os.PathLike[str]]) -> Sweep:
    """Read every results file; problems are collected, never fatal.

    A file that cannot be read at all (missing, a directory, no header) is an
    ``AmscError``: a report without one of the files asked for would look
    complete and not be.

    Two rows of one run are a problem: ``check`` finds them within a file, and the
    report across files and between spellings of a system. One file whose systems
    are each spelled one way holds no run twice once ``check`` passed its rows, so
    it is read without the report's own index of runs (tens of MB a million rows);
    should a second spelling turn up, the file is read again with it.
    """
    sweep = _read(paths, indexed=len(paths) > 1)
    if sweep is None:
        sweep = _read(paths, indexed=True)
        assert sweep is not None  # an indexed reading always ends
    return sweep


def _read(paths: Sequence[str | os.PathLike[str]], indexed: bool) -> Sweep | None:
    """The sweep, or None when unindexed reading met a system spelled two ways."""
    sweep = Sweep(files=[str(p) for p in paths])
    reading = _Reading(sweep, indexed, runs=not indexed and _bytes(paths) >= RUNS_FROM_BYTES)
    try:
        for number, path in enumerate(paths):
            if Path(path).is_dir():
                raise AmscError(f"{path}: is a directory; report needs results CSV files")
            found: Capped[tuple[int, str]] = Capped()  # bounded, as check's problems are
            take = functools.partial(reading.take, number, found)
            runs = (None if reading.runs is None
                    else functools.partial(reading.take_run, number, found))
            checked = check_results_file(path, take, on_clean=runs)
            if reading.runs is not None:
                reading.file_runs(number, found)
            rows, problems = checked.rows, checked.problems
            if reading.seen is None and reading.spelled_twice:
                return None
            sweep.rows_read += rows
            listed = _in_line_order(str(path), problems, found)
            sweep.problems.extend(listed)
            sweep.problems.extend(more_problems(path, checked.more + found.more))
            sweep.problem_count += len(listed) + checked.more + found.more
        reading.finish()
    finally:
        reading.close()
    return sweep


def _bytes(paths: Sequence[str | os.PathLike[str]]) -> int:
    """The size of the files (one that cannot be read is the reading's to report)."""
    total = 0
    for path in paths:
        with contextlib.suppress(OSError):
            total += os.stat(path).st_size
    return total


class _Reading:
    """The rows ``--check`` passes, filed into a sweep; a run seen in another row is a problem."""

    def __init__(self, sweep: Sweep, indexed: bool, runs: bool) -> None:
        self.sweep = sweep
        # Runs of clean rows filed many at a time (a large file read unindexed).
        self.runs = CleanRuns() if runs else None
        # The run identity, with the system's case folded as the report groups systems,
        # across files (None: one file, read as long as each system has one spelling).
        self.seen = SeenRuns(self._identity_at) if indexed else None
        self._spelling: dict[str, str] = {}  # each folded system name: its first spelling
        self.spelled_twice = False
        self._again: dict[int, tuple[BinaryIO, tuple[int, ...]]] = {}  # opened to confirm
        # (config, system, nodes, gpus) as written: the point a pass row of them goes to
        self._known: dict[tuple[str, str, str, str], tuple[Point, int, Counter[str], str]] = {}

    def take(self, number: int, found: list[tuple[int, str]], line: int,
             row: list[str], offset: int) -> None:
        """One row ``--check`` passed: a run seen before is a problem, else it is filed
        (after the runs of clean rows before it)."""
        if self.runs is not None:
            self.file_runs(number, found)
        self._take(number, found, line, row, offset)

    def _take(self, number: int, found: list[tuple[int, str]], line: int,
              row: list[str], offset: int) -> None:
        sweep = self.sweep
        where = line * len(sweep.files) + number
        if self.seen is not None:
            key = _identity(row)
            first = self.seen.first(",".join(key), where, offset, key)
            if first is not None:
                found.append((line, f"{sweep.source(where)}: same run as "
                                    f"{sweep.source(first)}"))
                return
        # The common row, a measured pass of a point a row of the same cells was filed
        # under before, filed without the checks _sort_row made then (counts in range, the
        # system's spelling seen).
        known = self._known.get((row[_CONFIG], row[_SYSTEM], row[_NODES], row[_GPUS]))
        if known is not None and row[_STATUS] == "pass":
            try:
                tps, tps_per_gpu = float(row[_TPS]), float(row[_TPS_PER_GPU])
            except ValueError:  # an empty cell: the long way, which says so
                pass
            else:
                if tps >= MIN_RATE and tps_per_gpu >= MIN_RATE:
                    point, gpus, counts, system = known
                    counts[system] += 1
                    _measure(point, where, tps, tps_per_gpu, gpus, row[_MFU])
                    _beside(point, row)
                    return
        if self.seen is None:
            system = row[_SYSTEM]
            if self._spelling.setdefault(system.casefold(), system) != system:
                self.spelled_twice = True
        problem = self._sort_row(where, row)
        if problem:
            found.append((line, f"{sweep.source(where)}: {problem}"))

    def take_run(self, number: int, found: list[tuple[int, str]], texts: list[str],
                 line: int, dropped: list[int]) -> None:
        """A run of clean rows ``--check`` passed (but ``dropped``): kept, and filed with
        those after it (:meth:`file_runs`)."""
        assert self.runs is not None and self.seen is None  # no run identities kept here
        if self.runs.add(texts, line, dropped):
            self._file(number, found)  # handed out later, many runs at once

    def file_runs(self, number: int, found: list[tuple[int, str]]) -> None:
        """File the runs kept and hand their rows out to the points (before a row filed
        another way, and at the end of a file)."""
        assert self.runs is not None
        self._file(number, found)
        self.runs.hand_out()

    def _file(self, number: int, found: list[tuple[int, str]]) -> None:
        """File the runs kept: the rows of points filed before many at a time, the others by
        :meth:`_take`."""
        assert self.runs is not None
        files = len(self.sweep.files)
        self.runs.file(lambda lines: lines * files + number,
                       lambda text, line: self._take(number, found, line, text.split(","), 0))

    def finish(self) -> None:
        """What is left to file once every file is read."""
        if self.runs is not None:
            self.runs.finish()

    def _sort_row(self, where: int, row: list[str]) -> str | None:
        """File one row that ``--check`` passed; return why it is not used, if it is not.
        A point a pass row was filed under is known from then on, by its cells as written."""
        sweep = self.sweep
        nodes, gpus = int(row[_NODES]), int(row[_GPUS])
        if nodes > MAX_COUNT or gpus > MAX_COUNT:
            name, count = ("nodes", nodes) if nodes > MAX_COUNT else ("gpus", gpus)
            return f"{name} {count} is more than {MAX_COUNT:,}; row not used"
        system = row[_SYSTEM]
        folded = system.casefold()
        counts = sweep.spellings.get(folded)
        if counts is None:
            counts = sweep.spellings[folded] = Counter()
        counts[system] += 1
        if row[_STATUS] == "fail":
            sweep.failed.append({**_where(sweep.source(where), row, nodes, gpus),
                                 "timestamp": row[_TIMESTAMP], "error": row[_ERROR]})
            return None
        tps, tps_per_gpu = _number(row[_TPS]), _number(row[_TPS_PER_GPU])
        if tps is None or tps_per_gpu is None:
            missing = [c for c, v in ((TPS, tps), (TPS_PER_GPU, tps_per_gpu)) if v is None]
            sweep.without_throughput.append({**_where(sweep.source(where), row, nodes, gpus),
                                             "missing": missing})
            return None
        if tps < MIN_RATE or tps_per_gpu < MIN_RATE:  # also keeps every efficiency finite
            name, at = (TPS, _TPS) if tps < MIN_RATE else (TPS_PER_GPU, _TPS_PER_GPU)
            return (f"{name} {row[at]!r} is below {MIN_RATE} (the smallest rate a row "
                    "holds at 3 decimals); row not used")
        key = (row[_CONFIG], folded, nodes, gpus)
        point = sweep.measured.get(key)
        if point is None:
            point = sweep.measured[key] = Point()
        self._known[(row[_CONFIG], system, row[_NODES], row[_GPUS])] = (point, gpus, counts,
                                                                          system)
        if self.runs is not None:
            self.runs.known((system, row[_CONFIG], row[_NODES], row[_GPUS]), point, gpus, counts)
        _measure(point, where, tps, tps_per_gpu, gpus, row[_MFU])
        _beside(point, row)
        return None

    def _identity_at(self, where: int, offset: int) -> RunKey | None:
        """The identity of the row at ``offset`` of the file of ``where``, read again."""
        number = where % len(self.sweep.files)
        if number not in self._again:
            f = open_regular(Path(self.sweep.files[number]))
            header = next(read_records(f), None)
            cells = [] if header is None or header.cells is None else header.cells
            key_index = tuple(cells.index(c) if c in cells else 0 for c in KEY_COLUMNS)
            self._again[number] = f, key_index
        f, key_index = self._again[number]
        rec = next(read_records(f, offset), None)
        if rec is None or rec.cells is None or len(rec.cells) <= max(key_index):
            return None
        return _folded(tuple(rec.cells[i] for i in key_index))

    def close(self) -> None:
        for f, _ in self._again.values():
            f.close()
        if self.seen is not None:
            self.seen.release()


# Where the cells the report reads are in a row (cells in HEADER's order).
_KEY_CELLS = operator.itemgetter(*KEY_INDEX)  # the run identity
_SYSTEM_AT = KEY_COLUMNS.index("system")  # in the run identity
(_TIMESTAMP, _SYSTEM, _CONFIG, _NODES, _GPUS, _STATUS, _ERROR, _TPS, _TPS_PER_GPU,
 _MFU, _WALL, _STEPS) = (HEADER.index(column(c)) for c in (
     "timestamp", "system", "config", "nodes", "gpus", "status", "error", TPS, TPS_PER_GPU,
     MFU, "wall_time_sec", "steps"))


def _identity(row: list[str]) -> RunKey:
    """The run identity, with the system's case folded as the report groups systems."""
    return _folded(_KEY_CELLS(row))


def _folded(key: RunKey) -> RunKey:
    system = key[_SYSTEM_AT]
    folded = system.casefold()
    return key if folded == system else (*key[:_SYSTEM_AT], folded, *key[_SYSTEM_AT + 1:])


def _in_line_order(path: str, checked: list[str], found: list[tuple[int, str]]) -> list[str]:
    """``--check``'s problems and the report's own, merged by line number."""
    def line_of(problem: str) -> int:
        head = problem[len(path) + 1:].split(":", 1)[0]
        return int(head) if head.isdigit() else 0  # a whole-file problem goes first

    return [text for _, text in sorted([(line_of(p), p) for p in checked] + found,
                                       key=lambda item: item[0])]


def _number(text: str) -> float | None:
    text = text.strip()
    return float(text) if text else None  # --check has made sure it parses and is finite


def _beside(point: Point, row: list[str]) -> None:
    """What ``compare`` reads of a measured repeat beside its rates: wall time, steps, when."""
    wall = _number(row[_WALL])
    if wall is not None:
        point.wall.append(wall)
    steps = row[_STEPS].strip()
    point.steps[steps] = point.steps.get(steps, 0) + 1
    stamp = row[_TIMESTAMP]
    if not point.first or stamp < point.first:
        point.first = stamp
    if stamp > point.last:
        point.last = stamp


def _measure(point: Point, where: int, tps: float, tps_per_gpu: float, gpus: int,
             mfu_cell: str) -> None:
    """One measured repeat of ``point``: its numbers appended, a gpus mismatch noted."""
    point.tps.append(tps)
    point.tps_per_gpu.append(tps_per_gpu)
    try:
        point.sources.append(where)
    except OverflowError:  # line x files past 4,294,967,295
        point.sources = array("q", point.sources)
        point.sources.append(where)
    mfu = _number(mfu_cell)
    if mfu == 0:
        point.mfu_zero += 1
    elif mfu is not None:
        point.mfu_pct.append(mfu)
    ratio = gpus_mismatch(tps, tps_per_gpu, gpus)
    if ratio is not None:
        point.mismatched.append((where, ratio))


def _where(source: str, row: list[str], nodes: int, gpus: int) -> dict[str, Any]:
    return {"source": source, "config": row[_CONFIG], "system": row[_SYSTEM],
            "nodes": nodes, "gpus": gpus}


# --- the numbers ------------------------------------------------------------------------------

def build_report(sweep: Sweep, sources: bool = True) -> dict[str, Any]:
    """The whole report as plain data (what ``--format json`` prints).

    ``sources=False`` leaves out each point's ``sources`` (the ``PATH:LINE`` of every
    repeat), which only the JSON shows: a string a row, the one part of the report that
    grows with the rows.
    """
    by_group: dict[tuple[str, str], list[tuple[int, int, Point]]] = defaultdict(list)
    for (config, system, nodes, gpus), point in sweep.measured.items():
        by_group[(config, sweep.system_name(system))].append((nodes, gpus, point))
    groups = [_group(sweep, config, system, points, sources)
              for (config, system), points in sorted(by_group.items())]
    named = [[{**r, "system": sweep.system_name(r["system"])} for r in pile]
             for pile in (sweep.failed, sweep.without_throughput)]
    return {
        "files": sweep.files,
        "rows": {"read": sweep.rows_read,
                 "measured": sum(len(r) for r in sweep.measured.values()),
                 "without_throughput": len(sweep.without_throughput),
                 "failed": len(sweep.failed),
                 "not_used": sweep.rows_read - sweep.rows_used},
        "thresholds": {"superlinear_above": SUPERLINEAR_ABOVE,
                       "low_efficiency_below": LOW_EFFICIENCY_BELOW,
                       "spread_above_pct": SPREAD_ABOVE_PCT,
                       "gpus_mismatch_pct": GPUS_MISMATCH_PCT},
        "merged_systems": _merged_systems(sweep),
        "groups": groups,
        "cross_machine": _cross_machine(groups),
        "failed": named[0],
        "without_throughput": named[1],
        "problems": sweep.problems,
        "problem_count": sweep.problem_count,
    }


def _merged_systems(sweep: Sweep) -> list[dict[str, Any]]:
    """The systems named in more than one case, each with its spellings' row counts."""
    return [{"system": sweep.system_name(next(iter(counts))),
             "spellings": dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))}
            for _, counts in sorted(sweep.spellings.items()) if len(counts) > 1]


def spread_pct(values: Sequence[float]) -> float | None:
    """(max - min) / median, in percent; None for a single repeat."""
    return _spread(sorted(values))


def _spread(ordered: Sequence[float]) -> float | None:
    """:func:`spread_pct` of values sorted."""
    if len(ordered) < 2:
        return None
    return (ordered[-1] - ordered[0]) / _median(ordered) * 100


def _median(ordered: Sequence[float]) -> float:
    """``statistics.median`` of values sorted, by its arithmetic: sorting is most of what a
    point's numbers cost, so each column is sorted once."""
    n = len(ordered)
    return ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def _point(sweep: Sweep, nodes: int, gpus: int, point: Point, sources: bool) -> dict[str, Any]:
    tps, tps_per_gpu = sorted(point.tps), sorted(point.tps_per_gpu)
    mfu = point.mfu_pct
    spread = _spread(tps)
    return {
        "nodes": nodes, "gpus": gpus, "repeats": len(point),
        "tokens_per_sec": round(_median(tps), 3),
        "tokens_per_sec_per_gpu": round(_median(tps_per_gpu), 3),
        "efficiency": None,  # set by _group, against the baseline
        "mfu_pct": round(statistics.median(mfu), 1) if mfu else None,
        "mfu_repeats": len(mfu),
        "spread_pct": None if spread is None else round(spread, 1),
        "tokens_per_sec_min": tps[0], "tokens_per_sec_max": tps[-1],
        "tokens_per_sec_per_gpu_min": tps_per_gpu[0],
        "tokens_per_sec_per_gpu_max": tps_per_gpu[-1],
        "flagged": False,
        **({"sources": [sweep.source(where) for where in point.sources]} if sources else {}),
    }


def _group(sweep: Sweep, config: str, system: str, points: list[tuple[int, int, Point]],
           sources: bool) -> dict[str, Any]:
    pts = [_point(sweep, n, g, point, sources)
           for n, g, point in sorted(points, key=lambda p: (p[0], p[1]))]
    base = pts[0]
    for p in pts:
        p["efficiency"] = round(p["tokens_per_sec_per_gpu"] / base["tokens_per_sec_per_gpu"], 3)
    runs = {(n, g): point for n, g, point in points}
    flags = (_group_flags(pts) + _zero_mfu_flags(runs)
             + [f for p in pts for f in _point_flags(sweep, p, base, runs)])
    flagged = {(f["nodes"], f["gpus"]) for f in flags}
    for p in pts:
        p["flagged"] = (p["nodes"], p["gpus"]) in flagged or (p["nodes"], None) in flagged
    return {"config": config, "system": system,
            "baseline": {"nodes": base["nodes"], "gpus": base["gpus"]},
            "points": pts, "flags": flags}


def _flag(kind: str, reason: str, nodes: int | None = None,
          gpus: int | None = None) -> dict[str, Any]:
    return {"kind": kind, "nodes": nodes, "gpus": gpus, "reason": reason}


def _group_flags(pts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    gpus_at: dict[int, list[int]] = defaultdict(list)
    for p in pts:
        gpus_at[p["nodes"]].append(p["gpus"])
    flags = []
    if len(gpus_at) == 1:
        (nodes,) = gpus_at
        flags.append(_flag("single_node_count",
                           f"only one node count ({nodes}): no scaling to show"))
    for nodes, gpus in gpus_at.items():
        if len(gpus) > 1:
            flags.append(_flag("mixed_gpus", f"recorded with {len(gpus)} different gpus "
                               f"counts ({', '.join(map(str, gpus))}): check gpus", nodes))
    return flags


def _zero_mfu_flags(runs: Mapping[tuple[int, int], Point]) -> list[dict[str, Any]]:
    zero = sum(point.mfu_zero for point in runs.values())
    if not zero:
        return []
    return [_flag("zero_mfu", f"mfu 0.0 in {plural(zero, 'row')}, read as unknown "
                              f"({MFU_ZERO_MEANS}): empty those cells")]


def _point_flags(sweep: Sweep, p: dict[str, Any], base: dict[str, Any],
                 runs: Mapping[tuple[int, int], Point]) -> list[dict[str, Any]]:
    at = {"nodes": p["nodes"], "gpus": p["gpus"]}
    eff = p["efficiency"]
    base_at = f"the baseline ({plural(base['nodes'], 'node')}, {plural(base['gpus'], 'gpu')})"
    flags = []
    if eff > SUPERLINEAR_ABOVE:
        flags.append(_flag("superlinear", f"efficiency {eff:.3f} is above "
                           f"{SUPERLINEAR_ABOVE:.2f} (superlinear): check gpus here and "
                           f"at {base_at}", **at))
    elif eff < LOW_EFFICIENCY_BELOW:
        flags.append(_flag("low_efficiency", f"efficiency {eff:.3f} is below "
                           f"{LOW_EFFICIENCY_BELOW:.2f} (collapse?): each GPU delivers "
                           f"{eff * 100:.1f}% of its rate at {base_at}", **at))
    if p["spread_pct"] is not None and p["spread_pct"] > SPREAD_ABOVE_PCT:
        flags.append(_flag("spread", f"repeats disagree: spread {p['spread_pct']:.1f}% is "
                           f"above {SPREAD_ABOVE_PCT:.0f}% (tokens/s "
                           f"{rate_text(p['tokens_per_sec_min'])} to "
                           f"{rate_text(p['tokens_per_sec_max'])} over "
                           f"{p['repeats']} repeats)", **at))
    if 0 < p["mfu_repeats"] < p["repeats"]:
        flags.append(_flag("partial_mfu", f"mfu logged by {p['mfu_repeats']} of "
                           f"{p['repeats']} repeats; its median is over those only", **at))
    for where, ratio in runs[(p["nodes"], p["gpus"])].mismatched:
        times = f"{ratio:.2f}x" if math.isfinite(ratio) else "past any number of times"
        flags.append(_flag("gpus_mismatch", f"{sweep.source(where)}: tokens/s/gpu x gpus is "
                           f"{times} tokens/s: gpus or a throughput is wrong", **at))
    return flags


def _cross_machine(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per config run on several systems: the systems side by side at shared node counts."""
    by_config: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for g in groups:  # sorted by (config, system), so the reference is the first system
        by_config[g["config"]].append(g)
    out = []
    for config, gs in by_config.items():
        if len(gs) < 2:
            continue
        at: dict[int, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        for g in gs:
            for p in g["points"]:
                at[p["nodes"]].append((g["system"], p))
        ref = gs[0]["system"]
        rows: list[dict[str, Any]] = []
        for nodes in sorted(n for n, items in at.items() if len({s for s, _ in items}) > 1):
            ref_tps = next((p["tokens_per_sec"] for s, p in at[nodes] if s == ref), None)
            rows.extend({"nodes": nodes, "system": s, "gpus": p["gpus"],
                         "tokens_per_sec": p["tokens_per_sec"],
                         "tokens_per_sec_per_gpu": p["tokens_per_sec_per_gpu"],
                         "efficiency": p["efficiency"],
                         "vs_reference": (None if ref_tps is None
                                          else round(p["tokens_per_sec"] / ref_tps, 2)),
                         "flagged": p["flagged"]}
                        for s, p in at[nodes])
        out.append({"config": config, "systems": [g["system"] for g in gs],
                    "reference": ref, "rows": rows})
    return out


def rate_text(x: float) -> str:
    """A throughput for reading: 1 decimal, or the row's 3 when it is that small."""
    return f"{x:,.1f}" if x >= 10 else f"{x:.3f}"
