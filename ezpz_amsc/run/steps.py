"""Stream the chosen rank's step records into a few flat series.

Memory stays flat in the number of keys per record: only the handful of
series the row needs are kept, as ``array('d')`` (8 bytes a value), and numpy
sees them only at the end. Missing values are stored as NaN; values that were
present but non-finite are counted, so the caller can say how many it dropped.
"""

from __future__ import annotations

import json
import math
import os
import re
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ezpz_amsc.errors import AmscError, reason
from ezpz_amsc.fs.read import open_regular
from ezpz_amsc.options import ENV_JSON
from ezpz_amsc.results.schema import MAX_LINE_BYTES
from ezpz_amsc.run.layout import MetricsSource
from ezpz_amsc.run.lines import is_gzip, iter_lines, open_metrics

# Key lookup order per series (docs/numbers.md, "The records"): train/<name>, then bare <name>.
# Step counters in order of preference; each record remembers which one it
# carried (its index here), so that the run's counter is the best one any
# record has and records without it are not steps. ``epoch`` counts only in an
# epoch-level history (ezpz's ``fsdp`` example logs one record per epoch).
STEP_KEYS = ("train/iter", "train/step", "iter", "step")
EPOCH_KEYS = ("epoch", "train/epoch")
COUNTER_KEYS = STEP_KEYS + EPOCH_KEYS
NO_COUNTER = -1
# Training throughput is train/tps (global), train/tokens_per_sec (hf, global)
# and train/tps_per_gpu, nothing else: bare tokens_per_sec is ezpz's inference
# example, per rank, and bare tps/tps_per_gpu are not written by any example.
SERIES_KEYS: dict[str, tuple[str, ...]] = {
    "dt": ("train/dt", "dt"),
    "tps": ("train/tps", "train/tokens_per_sec"),
    "tps_per_gpu": ("train/tps_per_gpu",),
    "mfu": ("train/mfu", "mfu"),
    "tflops": ("train/tflops", "tflops"),
    "loss": ("train/loss", "loss", "train_loss"),  # train_loss: fsdp's epoch records
}
NOT_TRAINING_THROUGHPUT = ("tokens_per_sec", "tps", "tps_per_gpu")
SERIES = tuple(SERIES_KEYS)
# Read beside the series, never reduced into a cell: the tokens a step processed
# (fsdp_tp logs the global count as train/tokens; its train/tokens_seen is cumulative),
# for the throughput identity, and the epoch of a step counter that restarts each epoch.
TOKEN_KEYS = ("train/tokens", "train/ntokens")
STEP_EPOCH_KEYS = ("train/epoch", "epoch")
# Keys of an evaluation: a record carrying one beside the counter and a few training keys
# (nanoGPT's periodic {iter, train/loss, val/loss, lr, mfu}) evaluates, it does not train.
EVAL_PREFIXES = ("val/", "val_", "eval/", "eval_", "valid/", "valid_", "validation/",
                 "test/", "test_")

# Read size of the hashing thread (the memory it adds to a --provenance export).
_HASH_BUFFER_BYTES = 8 << 20

_NAN = float("nan")
# Pass over other ranks' lines of a shared file unparsed (see skim.py). Tests
# turn it off to get the full parse to compare with.
SKIM = True


@dataclass
class Steps:
    """The chosen rank's step records, as parallel series in file order."""

    rank: int | None = None
    step: array[float] = field(default_factory=lambda: array("d"))
    counter: array[int] = field(default_factory=lambda: array("b"))  # COUNTER_KEYS index per record
    # records (their index here) holding no number in any of the SERIES: eval records
    contentless: list[int] = field(default_factory=list)
    # records (their index here) carrying an evaluation key (EVAL_PREFIXES) under the step
    # number of the record beside them: nanoGPT-style periodic evaluation records
    evaluations: list[int] = field(default_factory=list)
    eval_key: str | None = None  # the first evaluation key such a record carried
    # TOKEN_KEYS, NaN when absent: the first tokens_run records all hold tokens_first (a
    # run that logs one batch size, or none, keeps no column), ``tokens`` the records after.
    tokens: array[float] = field(default_factory=lambda: array("d"))
    tokens_first: float = math.nan
    tokens_run: int = 0
    # STEP_EPOCH_KEYS (NaN when absent) of the first record and of each whose step number
    # does not increase, where the epoch can change the order (epoch_values()); only where
    # it differs from the one before (a run without step numbers keeps no entry per record).
    epochs: dict[int, float] = field(default_factory=dict)
    timestamp: array[float] = field(default_factory=lambda: array("d"))
    series: dict[str, array[float]] = field(default_factory=lambda: {k: array("d") for k in SERIES})
    keys_used: dict[str, str] = field(default_factory=dict)  # series -> first key seen
    step_key: str | None = None  # the preferred counter any record carried
    nonfinite: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SERIES, 0))
    files_read: list[Path] = field(default_factory=list)
    files_not_read: int = 0
    bad_lines: int = 0
    long_lines: int = 0
    truncated_last_line: bool = False
    not_steps: int = 0  # parsed records with no numeric metric (e.g. precision/*)
    other_ranks: dict[int | None, int] = field(default_factory=dict)
    loss_nonfinite: list[int] = field(default_factory=list)  # records whose loss was NaN/inf
    ignored_throughput: dict[str, int] = field(default_factory=dict)  # bare keys seen, per key
    max_line: int = MAX_LINE_BYTES  # the line cap the records were read with, for a second pass

    def __len__(self) -> int:
        return len(self.step)


class Digest(NamedTuple):
    """Size and sha256 of a file as it was on disk when read, for provenance records.

    ``sha256`` is None for a file left unhashed by a :class:`Digests` budget.
    """

    size: int
    sha256: str | None

@dataclass
class FilesRead:
    """The files a row came from, for its provenance record."""

    root: Path
    metrics: list[Path]  # in the order read
    digests: Digests  # of the metrics files, taken while they were read
    provenance: list[Path]  # the files placement used
    run_info: list[Path]  # every run_info.json found, nearest first
    # What the row's system, nodes, gpus and ranks per node came from (placement's
    # ``placement_sources``): column -> {"value", "option"} or {"value", "from": [...]}.
    values: dict[str, Any] = field(default_factory=dict)



class Digests(dict[Path, Digest]):
    """The digests of the files an export read, by path; with an optional byte budget.

    A file is hashed whole or not at all: one whose size would take the bytes
    hashed so far past ``budget_bytes`` gets ``Digest(size, None)``.
    """

    def __init__(self, budget_bytes: int | None = None) -> None:
        super().__init__()
        self.budget_bytes = budget_bytes
        self.hashed_bytes = 0

    def admit(self, size: int) -> bool:
        """Whether a file of ``size`` bytes fits what is left of the budget (then counted)."""
        if self.budget_bytes is not None and self.hashed_bytes + size > self.budget_bytes:
            return False
        self.hashed_bytes += size
        return True


class _Hasher:
    """The sha256 of an open file, taken on a thread from its own reads beside the parse.

    The thread reads the file descriptor with ``os.preadv`` (its own offset, so
    the parse's reads, seeks and the skim's early stop are untouched) in 8 MiB
    chunks; both the read and ``sha256.update`` release the GIL, so on a second
    core the hash costs the parse almost nothing (on a busy machine it costs what
    hashing costs: about a second of CPU per GiB). Reads come from
    the page cache the parse fills (or fills it first): the file is fetched
    from disk once.
    """

    def __init__(self, fd: int) -> None:
        # Imported here: hashlib loads OpenSSL (~3.5 MB resident), which only
        # a --provenance export needs.
        import hashlib
        import threading

        self._fd = fd
        self._sha256 = hashlib.sha256()
        self._size = 0
        self._error: BaseException | None = None
        self._stop = False
        # Always joined (digest() or stop()) before the file closes: not a daemon.
        self._thread = threading.Thread(target=self._run, name="ezpz-amsc-sha256")
        self._thread.start()

    def _run(self) -> None:
        # One reused buffer (a fresh 8 MiB object per read costs page faults), and few,
        # large reads: each read and each update hands the GIL back and forth once.
        buf = bytearray(_HASH_BUFFER_BYTES)
        view, update, fd = memoryview(buf), self._sha256.update, self._fd
        try:
            while not self._stop:
                n = os.preadv(fd, [buf], self._size)
                if not n:
                    return
                update(view[:n])
                self._size += n
        except BaseException as e:  # noqa: BLE001 - re-raised by digest(), in the caller
            self._error = e
        finally:
            view.release()

    def stop(self) -> None:
        """Stop early (the read failed): the digest is not wanted."""
        self._stop = True
        self._thread.join()

    def digest(self, path: Path) -> Digest:
        """The file's size and sha256, once the thread has read it to its end."""
        self._thread.join()
        e = self._error
        if isinstance(e, OSError):
            raise _read_error(path, e)
        if e is not None:  # never a digest of part of the file
            raise e
        return Digest(self._size, self._sha256.hexdigest())


def _number(v: Any) -> float | None:
    """An int/float metric value as float; ``None`` for anything else.

    ``bool`` is an ``int`` subclass but never a metric. Non-finite floats and
    ints too large for a float come back as NaN/inf for the caller to count.
    """
    t = type(v)
    if t is float:
        return v  # type: ignore[no-any-return]  # (its type was just checked: no call here)
    if t is int:
        try:
            return float(v)
        except OverflowError:
            return math.inf
    return None


def _first_number(get: Callable[[str], Any], keys: tuple[str, ...]) -> float:
    """The first of ``keys`` present, as a finite float; NaN when absent or not a number."""
    for k in keys:
        v = get(k)
        if v is not None:
            x = _number(v)
            return x if x is not None and math.isfinite(x) else _NAN
    return _NAN


def _fast_loads() -> Callable[[bytes], Any] | None:
    """orjson's ``loads`` when installed (the ``fast`` extra), unless turned off.

    ``EZPZ_AMSC_JSON=stdlib`` forces the standard library, so that both paths
    can be tested and compared on the same machine.
    """
    if os.environ.get(ENV_JSON, "").strip().lower() == "stdlib":
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
_scan_once = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # (set in __init__)
_JSON_WS = " \t\n\r"
# orjson turns integers outside int64/uint64 into floats; json keeps them ints.
_ORJSON_INT_LIMIT = float(2**63)


def _read_error(path: Path, e: OSError) -> AmscError:
    return AmscError(f"{path}: cannot read metrics file: {reason(e)}")


def _read_file(path: Path, out: Steps, want_rank: int | None, filter_rank: bool,
               max_line: int, keep_unranked: bool = False,
               digests: Digests | None = None, skim: bool = True) -> int:
    """Append ``path``'s step records (of ``want_rank`` if filtering) to ``out``.

    ``keep_unranked``: records without a ``rank`` field count as ``want_rank``'s
    (a per-rank file; in an interleaved file they belong to no rank).
    With ``digests``, the file's size and sha256 are taken while it is read, on
    a thread (:class:`_Hasher`), when the budget admits it (once per file: a
    second pass over it is not hashed again).

    This loop runs once per logged step, so it keeps per-record work to the
    lookups themselves: no per-record containers, values appended straight
    into the series (and taken back in the rare record that is not a step).
    When filtering, lines that are certainly another rank's records are
    counted without being parsed (``skim``); returns how many.
    """
    out.max_line = max_line
    series = out.series
    nonfinite = out.nonfinite
    keys_used = out.keys_used
    step_app = out.step.append
    counter_app = out.counter.append
    contentless = out.contentless
    tokens_app = out.tokens.append
    token_key, token_key_2 = TOKEN_KEYS
    tok_first, tok_run = out.tokens_first, out.tokens_run
    tok_same = not out.tokens  # still in the leading run of one value
    epochs = out.epochs
    last_step = math.inf  # the first record's epoch is always read
    last_epoch = None  # never equal to a number: the first one read is kept
    v: Any  # a record's value: JSON of any type until proven a number
    counters = tuple(enumerate(COUNTER_KEYS))
    tps_series = series["tps"]
    ignored = out.ignored_throughput
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
    hasher = None
    prev: dict[str, Any] = {}  # the previous step record's metrics, for a repeated step
    try:
        raw = open_regular(path)  # a symlink to /proc/kmsg or a FIFO would block: refused
        size = os.fstat(raw.fileno()).st_size
    except OSError as e:
        raise _read_error(path, e) from None
    if digests is not None and path not in digests:
        if digests.admit(size):
            hasher = _Hasher(raw.fileno())
        else:
            digests[path] = Digest(size, None)
    f = open_metrics(path, raw)  # raw itself, or a gzip reader over it
    out.files_read.append(path)
    lines = iter_lines(f, max_line)
    passed: dict[int, int] = {}  # rank -> records counted unparsed
    # An empty file (rank 0's, when only rank 0 logged nothing) has nothing to skim: the
    # fallback through thousands of them pays for the open alone. A gzip stream is not skimmed.
    if skim and SKIM and filter_rank and type(want_rank) is int and f is raw and size:
        from ezpz_amsc.run.skim import skim_lines  # numpy: loaded only for a file that needs it

        lines = skim_lines(f, max_line, want_rank, passed)
    cut_stream = False  # a gzip stream that ends early: a killed job's compressed file
    read_all = False
    with raw, f:
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
                    if r != want_rank and not (r is None and keep_unranked):
                        if any(_number(v) is not None for v in metrics.values()):
                            other[r] = other.get(r, 0) + 1
                        continue
                get = metrics.get

                step = None
                code = NO_COUNTER
                for i, k in counters:
                    v = get(k)
                    if v is not None:
                        step = _number(v)
                        if step is not None:
                            code = i
                            break

                found = step is not None
                content = 0
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
                    found = content = True
                    if name not in keys_used:
                        keys_used[name] = k
                    if isfinite(v):
                        app(v)
                    else:
                        nonfinite[name] += 1
                        if name == "loss":  # a diverged run's last loss must not look fine
                            out.loss_nonfinite.append(len(out.step))
                        app(nan)
                if not found and not any(_number(v) is not None for v in metrics.values()):
                    for a in arrays:
                        a.pop()  # only NaNs were appended: nothing was found
                    out.not_steps += 1  # e.g. fsdp_tp's all-string precision/* record
                    continue
                here = step if step is not None and isfinite(step) else nan
                step_app(here)
                counter_app(code)
                if not content:
                    contentless.append(len(out.step) - 1)
                # Inline, not a helper call: this runs on every step of every run.
                v = get(token_key)
                if v is None:
                    v = get(token_key_2)
                t = type(v)
                if t is int:
                    try:
                        v = float(v)
                    except OverflowError:  # an int too large for a float
                        v = nan
                elif t is not float:
                    v = nan
                if not tok_same:
                    tokens_app(v)
                elif v == tok_first or (v != v and tok_first != tok_first):
                    tok_run += 1  # (0.0 and -0.0 alike: tokens count only when > 0)
                elif not tok_run:
                    tok_first, tok_run = v, 1
                else:
                    tok_same = False
                    tokens_app(v)
                if not here > last_step:  # a counter that starts again (or no number)
                    if here == last_step:  # one step number twice: an evaluation beside it?
                        _evaluation(out, metrics, prev)
                    epoch = _first_number(get, STEP_EPOCH_KEYS)
                    if not (epoch == last_epoch and math.copysign(1, epoch) == math.copysign(
                            1, last_epoch)) and not (epoch != epoch and last_epoch != last_epoch):
                        epochs[len(out.step) - 1] = last_epoch = epoch
                last_step = here
                if tps_series[-1] != tps_series[-1]:  # no training throughput: say why
                    for k in NOT_TRAINING_THROUGHPUT:
                        if _number(get(k)) is not None:
                            ignored[k] = ignored.get(k, 0) + 1
                ts = _number(rec.get("timestamp"))
                ts_app(ts if ts is not None and isfinite(ts) else nan)
                prev = metrics
            read_all = True
        except EOFError:
            cut_stream = read_all = True
        except OSError as e:
            raise _read_error(path, e) from None
        finally:
            if hasher is not None and not read_all:
                hasher.stop()  # before the file closes: its descriptor number may be reused
        if hasher is not None and digests is not None:
            digests[path] = hasher.digest(path)
    out.tokens_first, out.tokens_run = tok_first, tok_run
    seen = out.counter.tobytes()  # the preferred counter any record carried
    out.step_key = next((k for i, k in counters if bytes((i,)) in seen), None)
    if last_line is not None and not last_ok and not last_line.endswith(b"\n"):
        out.truncated_last_line = True
        out.bad_lines -= 1
    elif cut_stream:
        out.truncated_last_line = True
    for r, n in passed.items():  # each is a record of rank r with a numeric metric
        other[r] = other.get(r, 0) + n
    return sum(passed.values())


def _evaluation(out: Steps, metrics: dict[str, Any], prev: dict[str, Any]) -> None:
    """Of two records with one step number (the last one appended, and ``prev`` before it),
    the one carrying an evaluation key is an evaluation record: its index is kept."""
    for at, m in ((len(out.step) - 1, metrics), (len(out.step) - 2, prev)):
        key = next((k for k in m if type(k) is str and k.startswith(EVAL_PREFIXES)), None)
        if key is not None:
            out.evaluations.append(at)  # listed twice when 3 records share a step: harmless
            out.eval_key = out.eval_key or key
            return


def read_steps(source: MetricsSource, max_line: int = MAX_LINE_BYTES,
               digests: Digests | None = None) -> Steps:
    """Read the records of one rank: rank 0 if it logged, else the lowest that did.

    Per-rank files: only the chosen rank's file is opened (the next one only if
    the chosen file held no step). Every file is filtered by each record's
    ``rank`` when it has one: wrappers that name files by local rank put ranks
    0 and 12 in one ``metrics-0.jsonl``. One interleaved file: records are
    filtered by ``rank``; a second pass happens only when rank 0 logged nothing.
    ``digests``, when given, receives the size and sha256 of every file read.
    """
    if source.scheme == "per-rank":
        ranks = sorted(source.per_rank)
        out = Steps()
        tried: list[Path] = []
        seen_in: dict[int, Path] = {}  # other ranks' records, by the file they were in
        for r in ranks:
            skipped = (out.bad_lines, out.long_lines)  # of files that held no step
            out = Steps(rank=r, files_read=tried)  # one list for all: linear in the ranks
            _read_file(source.per_rank[r], out, r, True, max_line, keep_unranked=True,
                       digests=digests)
            out.bad_lines += skipped[0]
            out.long_lines += skipped[1]
            if len(out):
                break
            for other in out.other_ranks:
                if other is not None:
                    seen_in.setdefault(other, source.per_rank[r])
        if not len(out) and seen_in:  # no file holds its own rank: the lowest rank logged
            chosen = min(seen_in)
            again = Steps(rank=chosen)
            _read_file(seen_in[chosen], again, chosen, True, max_line, digests=digests)
            again.bad_lines, again.long_lines = out.bad_lines, out.long_lines
            # Read again, so last: files_read[-1] is the file the steps came from.
            again.files_read = [*(p for p in tried if p != seen_in[chosen]), seen_in[chosen]]
            out = again
        out.files_not_read = len(ranks) - len(tried)
        return out

    assert source.single is not None
    out = Steps(rank=0)
    if _read_file(source.single, out, 0, True, max_line, digests=digests) and not len(out):
        # The fallback below picks a rank from every other rank's records and
        # reports their counts; rank 0 logged nothing, so pay for a full parse.
        out = Steps(rank=0)
        _read_file(source.single, out, 0, True, max_line, digests=digests, skim=False)
    if len(out) or not out.other_ranks:
        return out
    # Rank 0 logged nothing: the lowest rank that did; records without a rank
    # field (None) only when no record names one.
    ranked = sorted(r for r in out.other_ranks if r is not None)
    lowest = ranked[0] if ranked else None
    again = Steps(rank=lowest)
    _read_file(source.single, again, lowest, True, max_line, digests=digests)
    again.other_ranks = {r: n for r, n in out.other_ranks.items() if r != lowest}
    again.bad_lines, again.long_lines = out.bad_lines, out.long_lines
    again.truncated_last_line = out.truncated_last_line
    return again


# ------------------------------------------------------------------ other passes (rare or tiny)

# How much of a file's end is read for its last record: rank 0's records are ~7 KB
# (with the aggregated keys), other ranks' under 1 KB; up to 1 MiB for very wide records.
TAIL_BYTES = 16 << 10
TAIL_MAX_BYTES = 1 << 20


def last_logged_step(path: Path, counter: str) -> tuple[float, float] | None:
    """``(epoch, step)`` of the last record of ``path`` that carries ``counter`` (epoch
    NaN when not logged), read from the file's end: never the whole file.

    ``None`` when the file cannot be read, is compressed, or its last
    :data:`TAIL_MAX_BYTES` hold no such record.
    """
    if is_gzip(path):
        return None  # a compressed file has no end to seek to
    want = TAIL_BYTES
    try:
        with open_regular(path) as f:
            size = f.seek(0, os.SEEK_END)
            while True:
                start = max(0, size - want)
                f.seek(start)
                lines = f.read(size - start).split(b"\n")
                if start:
                    lines = lines[1:]  # the first one is cut at the seek
                for line in reversed(lines):
                    found = _counter_of(line, counter)
                    if found is not None:
                        return found
                if not start or want >= TAIL_MAX_BYTES:
                    return None
                want *= 4
    except OSError:
        return None


def _counter_of(line: bytes, counter: str) -> tuple[float, float] | None:
    if counter.encode() not in line:
        return None
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError):
        return None  # a truncated last line, or garbage
    metrics = rec.get("metrics") if type(rec) is dict else None
    if type(metrics) is not dict:
        return None
    step = _number(metrics.get(counter))
    if step is None or not math.isfinite(step):
        return None
    return _first_number(metrics.get, STEP_EPOCH_KEYS), step


# A logged checkpoint time: a key naming a checkpoint or a save, and seconds
# (fsdp_tp's train/ckpt_stage_seconds), found by the lines holding one of the needles.
CHECKPOINT_KEY = re.compile(r"(ckpt|checkpoint|save).*(seconds|sec|time|dt|_s)\Z", re.I)
CHECKPOINT_NEEDLES = (b"ckpt", b"checkpoint", b"save")
# A logged restart: a key naming a restart or a resume (fsdp_tp's train/restart_seconds,
# in the first record of a run resumed from a checkpoint).
RESTART_KEY = re.compile(r"restart|resum", re.I)
RESTART_NEEDLES = (b"restart", b"resum", b"Restart", b"Resum")


def values_of_keys(steps: Steps, needles: tuple[bytes, ...], wanted: Callable[[str], bool],
                   window: tuple[float, float]) -> dict[str, list[float]]:
    """The finite numbers of every metric ``wanted`` accepts, in the chosen rank's records
    stamped within ``window``: a second pass over the file the steps came from, with the
    line cap they were read with, for a note's evidence (a rare path), parsing only the
    lines that hold one of ``needles``.
    """
    if not steps.files_read:
        return {}
    path, rank, max_line = steps.files_read[-1], steps.rank, steps.max_line
    out: dict[str, list[float]] = {}
    lo, hi = window
    try:
        with open_metrics(path) as f:
            for line in iter_lines(f, max_line):
                if line is None or not any(n in line for n in needles):
                    continue
                try:
                    rec = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if type(rec) is not dict or type(rec.get("metrics")) is not dict:
                    continue
                r, ts = rec.get("rank"), _number(rec.get("timestamp"))
                if (r is not None and r != rank) or ts is None or not lo <= ts <= hi:
                    continue
                for k, v in rec["metrics"].items():
                    x = _number(v)
                    if x is not None and math.isfinite(x) and wanted(k):
                        out.setdefault(k, []).append(x)
    except (OSError, EOFError):
        return out  # evidence for a note only: what was read is enough
    return out


def epoch_values(steps: Steps) -> array[float]:
    """The epoch of every record: read where it can change the order (the first record,
    and each whose step number does not increase), carried forward in between; NaN
    where none was read.

    A step counter that restarts each epoch restarts exactly where the epoch
    advances; a global counter needs no epoch at all.
    """
    n = len(steps)
    out = array("d", [_NAN]) * n
    at = sorted(k for k in steps.epochs if 0 <= k < n)
    for start, stop in zip(at, [*at[1:], n] if at else [], strict=True):
        out[start:stop] = array("d", [steps.epochs[start]]) * (stop - start)
    return out
