"""Stage 2: stream the chosen rank's step records into a few flat series.

Memory stays flat in the number of keys per record: only the handful of
series the row needs are kept, as ``array('d')`` (8 bytes a value), and numpy
sees them only at the end. Missing values are stored as NaN; values that were
present but non-finite are counted, so the caller can say how many it dropped.
"""

from __future__ import annotations

import json
import math
import os
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from .discover import MetricsSource
from .errors import AmscError

# Key lookup order per series (SPEC §2.2): train/<name>, then bare <name>;
# throughput is train/tps, else train/tokens_per_sec.
STEP_KEYS = ("train/iter", "train/step", "iter", "step")
SERIES_KEYS: dict[str, tuple[str, ...]] = {
    "dt": ("train/dt", "dt"),
    "tps": ("train/tps", "tps", "train/tokens_per_sec", "tokens_per_sec"),
    "tps_per_gpu": ("train/tps_per_gpu", "tps_per_gpu"),
    "mfu": ("train/mfu", "mfu"),
    "tflops": ("train/tflops", "tflops"),
    "loss": ("train/loss", "loss"),
}
SERIES = tuple(SERIES_KEYS)

# A line longer than this is skipped unread rather than held in memory.
MAX_LINE_BYTES = 64 << 20
_DRAIN_BYTES = 1 << 20

_NAN = float("nan")
# Pass over other ranks' lines of a shared file unparsed (see skim.py). Tests
# turn it off to get the full parse to compare with.
SKIM = True


@dataclass
class Steps:
    """The chosen rank's step records, as parallel series in file order."""

    rank: int | None = None
    step: array = field(default_factory=lambda: array("d"))
    timestamp: array = field(default_factory=lambda: array("d"))
    series: dict[str, array] = field(default_factory=lambda: {k: array("d") for k in SERIES})
    keys_used: dict[str, str] = field(default_factory=dict)  # series -> first key seen
    step_key: str | None = None
    nonfinite: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SERIES, 0))
    files_read: list[Path] = field(default_factory=list)
    files_not_read: int = 0
    bad_lines: int = 0
    long_lines: int = 0
    truncated_last_line: bool = False
    not_steps: int = 0  # parsed records with no numeric metric (e.g. precision/*)
    other_ranks: dict[int | None, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.step)


def _number(v: Any) -> float | None:
    """An int/float metric value as float; ``None`` for anything else.

    ``bool`` is an ``int`` subclass but never a metric. Non-finite floats and
    ints too large for a float come back as NaN/inf for the caller to count.
    """
    t = type(v)
    if t is float:
        return v
    if t is int:
        try:
            return float(v)
        except OverflowError:
            return math.inf
    return None


def _iter_lines(f: IO[bytes], limit: int) -> Iterator[bytes | None]:
    """Yield lines; ``None`` stands for a line over ``limit`` bytes (skipped)."""
    readline = f.readline
    while True:
        line = readline(limit)
        if not line:
            return
        if len(line) >= limit and not line.endswith(b"\n"):
            del line  # hold at most one small chunk while draining, not limit bytes
            while True:  # drain the rest of the long line in bounded chunks
                rest = readline(_DRAIN_BYTES)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def _fast_loads() -> Callable[[bytes], Any] | None:
    """orjson's ``loads`` when installed (the ``fast`` extra), unless turned off.

    ``EZPZ_AMSC_JSON=stdlib`` forces the standard library, so that both paths
    can be tested and compared on the same machine.
    """
    if os.environ.get("EZPZ_AMSC_JSON", "").strip().lower() == "stdlib":
        return None
    try:
        from orjson import loads
    except ImportError:
        return None
    return loads


FAST_LOADS = _fast_loads()

# json.loads(bytes) detects the encoding, decodes, and matches whitespace with
# a regex before and after scanning: ~15% of its cost on a 1 KB line. The
# scanner alone gives the same object for a line that is plain UTF-8 starting
# with its value; anything else goes to json.loads, which stays the authority.
_scan_once = json.JSONDecoder().scan_once
_JSON_WS = " \t\n\r"
# orjson turns integers outside int64/uint64 into floats; json keeps them ints.
_ORJSON_INT_LIMIT = float(2**63)


def _read_file(path: Path, out: Steps, want_rank: int | None, filter_rank: bool,
               max_line: int, skim: bool = True) -> int:
    """Append ``path``'s step records (of ``want_rank`` if filtering) to ``out``.

    This loop runs once per logged step, so it keeps per-record work to the
    lookups themselves: no per-record containers, values appended straight
    into the series (and taken back in the rare record that is not a step).
    When filtering, lines that are certainly another rank's records are
    counted without being parsed (``skim``); returns how many.
    """
    series = out.series
    nonfinite = out.nonfinite
    keys_used = out.keys_used
    step_app = out.step.append
    ts_app = out.timestamp.append
    lookups = [(name, keys, series[name].append) for name, keys in SERIES_KEYS.items()]
    arrays = [series[name] for name in SERIES]
    other = out.other_ranks
    isfinite = math.isfinite
    loads = json.loads
    fast = FAST_LOADS
    scan = _scan_once
    nan = _NAN

    last_ok = True
    last_line: bytes | None = b""
    try:
        f = open(path, "rb")  # noqa: SIM115 - closed by the with below; open errors differ
    except OSError as e:
        raise AmscError(f"{path}: cannot read metrics file: {e.strerror or e}") from None
    out.files_read.append(path)
    lines = _iter_lines(f, max_line)
    passed: dict[int, int] = {}  # rank -> records counted unparsed
    if skim and SKIM and filter_rank and type(want_rank) is int:
        from .skim import skim_lines  # numpy: loaded only for a file that needs it

        lines = skim_lines(f, max_line, want_rank, passed)
    with f:
        try:
            for line in lines:
                if line is None:
                    last_line = line
                    out.long_lines += 1
                    continue
                if not line.strip():
                    continue  # blank lines are neither records nor truncation evidence
                last_line = line
                try:
                    if fast is not None:
                        try:
                            rec = fast(line)
                        except ValueError:  # bare NaN/Infinity (ezpz writes them), ...
                            rec = loads(line)
                    else:
                        try:
                            text = line.decode()
                            rec, end = scan(text, 0)
                            if end != len(text) and text[end:].strip(_JSON_WS):
                                rec = loads(line)  # trailing data: let json.loads judge
                        except (ValueError, StopIteration, RecursionError):
                            rec = loads(line)
                except (ValueError, RecursionError):
                    out.bad_lines += 1
                    last_ok = False
                    continue
                last_ok = True
                if type(rec) is not dict:
                    out.bad_lines += 1
                    continue
                metrics = rec.get("metrics")
                if type(metrics) is not dict:
                    out.not_steps += 1
                    continue
                if filter_rank:
                    r = rec.get("rank")
                    if type(r) is float and fast is not None and abs(r) >= _ORJSON_INT_LIMIT:
                        r = loads(line).get("rank")
                    if type(r) is not int:
                        r = None
                    if r != want_rank:
                        if any(_number(v) is not None for v in metrics.values()):
                            other[r] = other.get(r, 0) + 1
                        continue
                get = metrics.get

                step = None
                for k in STEP_KEYS:
                    v = get(k)
                    if v is not None:
                        step = _number(v)
                        if step is not None:
                            if out.step_key is None:
                                out.step_key = k
                            break

                found = step is not None
                for name, keys, app in lookups:
                    for k in keys:  # first key holding a number; bool is not one
                        v = get(k)
                        if v is None:
                            continue
                        t = type(v)
                        if t is float:
                            break
                        if t is int:
                            v = _number(v)
                            break
                    else:
                        app(nan)
                        continue
                    found = True
                    if name not in keys_used:
                        keys_used[name] = k
                    if isfinite(v):
                        app(v)
                    else:
                        nonfinite[name] += 1
                        app(nan)
                if not found and not any(_number(v) is not None for v in metrics.values()):
                    for a in arrays:
                        a.pop()  # only NaNs were appended: nothing was found
                    out.not_steps += 1  # e.g. fsdp_tp's all-string precision/* record
                    continue
                step_app(step if step is not None and isfinite(step) else nan)
                ts = _number(rec.get("timestamp"))
                ts_app(ts if ts is not None and isfinite(ts) else nan)
        except OSError as e:
            raise AmscError(f"{path}: cannot read metrics file: {e.strerror or e}") from None
    if last_line is not None and not last_ok and not last_line.endswith(b"\n"):
        out.truncated_last_line = True
        out.bad_lines -= 1
    for r, n in passed.items():  # each is a record of rank r with a numeric metric
        other[r] = other.get(r, 0) + n
    return sum(passed.values())


def read_steps(source: MetricsSource, max_line: int = MAX_LINE_BYTES) -> Steps:
    """Read the records of one rank: rank 0 if it logged, else the lowest that did.

    Per-rank files: only the chosen rank's file is opened (the next one only if
    the chosen file held no step). One interleaved file: records are filtered
    by ``rank``; a second pass happens only when rank 0 logged nothing.
    """
    if source.scheme == "per-rank":
        ranks = sorted(source.per_rank)
        out = Steps()
        tried: list[Path] = []
        for r in ranks:
            skipped = (out.bad_lines, out.long_lines)  # of files that held no step
            out = Steps(rank=r)
            _read_file(source.per_rank[r], out, r, False, max_line)
            out.bad_lines += skipped[0]
            out.long_lines += skipped[1]
            tried.extend(out.files_read)
            out.files_read = list(tried)
            if len(out):
                break
        out.files_not_read = len(ranks) - len(tried)
        return out

    assert source.single is not None
    out = Steps(rank=0)
    if _read_file(source.single, out, 0, True, max_line) and not len(out):
        # The fallback below picks a rank from every other rank's records and
        # reports their counts; rank 0 logged nothing, so pay for a full parse.
        out = Steps(rank=0)
        _read_file(source.single, out, 0, True, max_line, skim=False)
    if len(out) or not out.other_ranks:
        return out
    # Rank 0 logged nothing: the lowest rank that did; records without a rank
    # field (None) only when no record names one.
    ranked = sorted(r for r in out.other_ranks if r is not None)
    chosen = ranked[0] if ranked else None
    again = Steps(rank=chosen)
    _read_file(source.single, again, chosen, True, max_line)
    again.other_ranks = {r: n for r, n in out.other_ranks.items() if r != chosen}
    again.bad_lines, again.long_lines = out.bad_lines, out.long_lines
    again.truncated_last_line = out.truncated_last_line
    return again
