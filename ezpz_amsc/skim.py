"""Stage 2a: pass over other ranks' lines of a shared metrics file without parsing them.

``minimal``, ``vit``, ``test`` and ``hf`` write one ``metrics.jsonl`` that every
rank appends to: at 1,024 ranks, one line in 1,024 is rank 0's. Parsing every
line costs several times a plain read of the file; this stage reads it in
blocks, classifies all lines of a block at once with numpy, and hands the
reader only the lines it must parse. The others are counted per rank.

A line is passed over only when all of these hold (:func:`other_rank` spells
the rule out one line at a time; :func:`classify_block` is the same rule on a
block):

- it ends with a newline (an unterminated last line is always parsed: it is
  how a killed job is recognised) and is shorter than the long-line limit;
- it holds no backslash (so no escaped key can spell ``rank``) and no NUL byte;
- it starts ``{"timestamp": ``; it holds ``"rank"`` exactly once, as
  ``"rank": R, "metrics": {"`` with ``R`` a plain positive integer of at most
  7 digits (no sign, no leading zero) that is not the wanted rank;
- it holds exactly two ``{`` and ends with a digit and ``}}``.

JSON keeps the last of repeated keys, and a string cannot hold a bare ``"``.
So a line with these facts that parses is a record whose only ``rank`` is
``R`` and whose ``metrics`` (its last member) is an object ending in a number:
exactly what the full parse would count as one record of rank ``R``. A wanted
record therefore never goes unparsed, whatever the line holds.

The checks also catch what a killed job or an interrupted append leaves in the
middle of a file: a record cut off and continued by the next one has a third
``{`` (or does not start like a record at all), and a hole of NUL bytes is
refused outright. What no check short of parsing can see is a line that starts
and ends like another rank's record but is broken in between by hand (``"loss":
tru``): it is counted as a record of rank ``R`` rather than as an unparsable
line. Nothing the row holds depends on that count.
"""

from __future__ import annotations

import io
from collections.abc import Generator, Iterator
from typing import IO

import numpy as np

BLOCK_BYTES = 1 << 20  # one block: ~2,800 hf-sized lines, a few MB of numpy scratch
MAX_RANK_DIGITS = 7
# Below this share of passed-over lines a block is mostly wanted lines (a
# per-rank file): classifying costs more than it saves, so the rest of the
# file is read line by line as before.
MIN_SKIPPED_SHARE = 0.25
_SLACK = 64  # bytes past the data that gathers may read, so no index needs clipping
_MAX_DENSE_RANK = 1 << 16  # ranks counted in an array up to here, in a dict above

_START = b'{"timestamp": '
_KEY = b'"rank": '
_AFTER_RANK = b', "metrics": {"'
_DIGITS = b"0123456789"
_NL, _NUL, _BACKSLASH, _QUOTE, _LBRACE, _RBRACE = 10, 0, 92, 34, 123, 125
_K, _N, _A, _R, _ZERO, _NINE = 107, 110, 97, 114, 48, 57


def other_rank(line: bytes, want: int) -> int | None:
    """The rank whose record ``line`` certainly is, when that is not ``want``; else None.

    The rule of this module for one line; :func:`classify_block` applies it to
    many lines at once and must agree with it line for line.
    """
    if not line.endswith(b"\n") or b"\\" in line or b"\0" in line:
        return None
    body = line[:-1]
    if (not body.startswith(_START) or body.count(b"{") != 2
            or body[-2:] != b"}}" or len(body) < 3 or body[-3] not in _DIGITS):
        return None
    key = body.find(b'"rank"')
    if key < 0 or body.find(b'"rank"', key + 1) >= 0:  # also an overlapping '"rank"rank"'
        return None
    if body[key:key + len(_KEY)] != _KEY:
        return None
    value = key + len(_KEY)
    after = value
    while after < len(body) and body[after] in _DIGITS:
        after += 1
    digits = after - value
    if not 1 <= digits <= MAX_RANK_DIGITS or body[value] == _ZERO:
        return None
    if body[after:after + len(_AFTER_RANK)] != _AFTER_RANK:  # it cannot reach the tail:
        return None  # the tail is a digit and '}}', this ends in '{"'
    rank = int(body[value:after])
    return None if rank == want else rank


def _u64(b: bytes) -> int:
    return int.from_bytes(b[:8].ljust(8, b"\0"), "little")


_START_LO, _START_HI = _u64(_START), _u64(_START[8:])  # bytes 0-7, 8-13
_START_HI_MASK = (1 << (8 * (len(_START) - 8))) - 1
_KEY_U64 = _u64(_KEY)
_AFTER_LO, _AFTER_HI = _u64(_AFTER_RANK), _u64(_AFTER_RANK[8:])  # bytes 0-7, 8-14
_AFTER_HI_MASK = (1 << (8 * (len(_AFTER_RANK) - 8))) - 1
_ASCII_ZEROS = np.uint64(0x3030303030303030)
_GT_NINE = np.uint64(0x7676767676767676)  # + 0x76 sets a byte's top bit when it is over 9
_HIGH_BITS = np.uint64(0x8080808080808080)


# For a byte with one bit set, which bit; -1 for any other byte.
_ONE_BIT = np.full(256, -1, dtype=np.int64)
_ONE_BIT[1 << np.arange(8)] = np.arange(8)


def _positions(data: np.ndarray, byte: int) -> np.ndarray:
    """Offsets of ``byte`` in ``data``, ascending.

    ``np.flatnonzero(data == byte)`` walks a bool per byte; packing the mask
    to bits first makes that walk 8x shorter, which pays for sparse bytes
    such as newlines (about half the time of the plain call).
    """
    packed = np.packbits(data == byte, bitorder="little")
    at = np.flatnonzero(packed != 0)
    bits = packed[at]
    bit = _ONE_BIT[bits]
    single = bit >= 0
    if single.all():
        return at * 8 + bit
    rows, cols = np.nonzero(np.unpackbits(bits[~single][:, None], axis=1, bitorder="little"))
    more = at[~single][rows] * 8 + cols
    return np.sort(np.concatenate((at[single] * 8 + bit[single], more)))


def _lines_of(ends: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The index of the line holding each position (lines end at ``ends``)."""
    return np.searchsorted(ends, positions)


def classify_block(buf: bytearray, n: int, want: int, limit: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Apply :func:`other_rank` to every line of ``buf[:n]`` at once.

    ``buf[:n]`` is whole lines (``buf[n - 1]`` is a newline), and ``buf``
    holds at least ``_SLACK`` more bytes, whatever they are: reads past a
    line's end need no bounds checks. Returns ``(starts, ends, skip, ranks)``:
    line ``i`` is ``buf[starts[i]:ends[i] + 1]``; ``skip[i]`` says it is
    certainly a record of rank ``ranks[i]``, not ``want``, and shorter than
    ``limit``.
    """
    a = np.frombuffer(buf, dtype=np.uint8)
    data = a[:n]
    ends = _positions(data, _NL)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    ok = _shape_ok(a, starts, ends, limit)
    key_line, key_at = _rank_keys(a, n, ends)
    ok &= np.bincount(key_line, minlength=ends.size) == 1
    for bad in (_NUL, _BACKSLASH):
        if buf.find(bad, 0, n) >= 0:  # memchr: costs nothing when absent
            ok[_lines_of(ends, np.flatnonzero(data == bad))] = False
    ranks = np.zeros(ends.size, dtype=np.int64)
    idx = np.flatnonzero(ok)
    key = np.zeros(ends.size, dtype=np.int64)
    key[key_line] = key_at
    ok[idx], ranks[idx] = _rank_values(a, key[idx])
    _two_braces(buf, data, starts, ends, ok)
    if not -(2**63) <= want < 2**63:
        want = -1  # no rank that passes the checks is negative
    return starts, ends, ok & (ranks != want), ranks


def _words(a: np.ndarray) -> np.ndarray:
    """Unaligned little-endian 8-byte words at every offset: one gather reads 8 bytes."""
    return np.ndarray((a.size - 7,), dtype="<u8", buffer=a, strides=(1,))


def _shape_ok(a: np.ndarray, starts: np.ndarray, ends: np.ndarray, limit: int) -> np.ndarray:
    """Lines under ``limit`` that start ``{"timestamp": `` and end with a digit and ``}}``."""
    words = _words(a)
    t3, t2, t1 = a[ends - 3], a[ends - 2], a[ends - 1]
    return ((ends - starts < limit)
            & (words[starts] == _START_LO) & ((words[starts + 8] & _START_HI_MASK) == _START_HI)
            & (t1 == _RBRACE) & (t2 == _RBRACE) & (t3 >= _ZERO) & (t3 <= _NINE))


def _rank_keys(a: np.ndarray, n: int, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every ``"rank"`` in ``a[:n]``: (its line, its offset)."""
    k = _positions(a[:n], _K)
    k = k[k >= 4]
    k = k[a[k + 1] == _QUOTE]
    k = k[(a[k - 1] == _N) & (a[k - 2] == _A) & (a[k - 3] == _R) & (a[k - 4] == _QUOTE)]
    return _lines_of(ends, k), k - 4


def _rank_values(a: np.ndarray, key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """At each ``"rank"`` offset: is it ``"rank": R, "metrics": {"``, and R.

    The 8 bytes from the value on are read as one word and decoded with word
    arithmetic (SWAR), a handful of operations for all lines at once.
    """
    words = _words(a)
    value = key + len(_KEY)
    raw = words[value]
    # Bytes 0-9 after subtracting '0'; the lowest byte that is not becomes a
    # flag, the first non-digit. Borrows and carries only run upwards, past it.
    shifted = raw - _ASCII_ZEROS
    not_digit = ((shifted + _GT_NINE) | shifted) & _HIGH_BITS
    first = not_digit & (~not_digit + np.uint64(1))  # lowest flag; 0 if 8 digits
    # log2 of the flag is 8 * count + 7; no flag (8 digits) gives -1, refused below.
    count = (np.log2((first | np.uint64(1)).astype(np.float64)).astype(np.int64) - 7) // 8
    after = value + count
    good = ((words[key] == _KEY_U64) & (count >= 1) & ((raw & np.uint64(0xFF)) != _ZERO)
            & (words[after] == _AFTER_LO)
            & ((words[after + 8] & _AFTER_HI_MASK) == _AFTER_HI))
    # The digits, moved to the top of the word (leading zeros below), then
    # pairs, quads and all eight combined: the decimal value.
    keep = np.maximum(count, 1).astype(np.uint64) * np.uint64(8)
    v = (raw & ((np.uint64(1) << keep) - np.uint64(1))) << (np.uint64(64) - keep)
    v = ((v & np.uint64(0x0F0F0F0F0F0F0F0F)) * np.uint64(2561)) >> np.uint64(8)
    v = ((v & np.uint64(0x00FF00FF00FF00FF)) * np.uint64(6553601)) >> np.uint64(16)
    v = ((v & np.uint64(0x0000FFFF0000FFFF)) * np.uint64(42949672960001)) >> np.uint64(32)
    return good, v.astype(np.int64)


def _two_braces(buf: bytearray, data: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                ok: np.ndarray) -> None:
    """Clear ``ok`` for lines with a ``{`` beyond the two already checked.

    Every ``ok`` line has at least those two, so when the block's total is two
    per ``ok`` line plus what the other lines hold, none has more. Only when
    that fails, or most lines are not ``ok``, are braces counted line by line.
    """
    rest = np.flatnonzero(~ok)
    if rest.size <= 64:
        total = int(np.count_nonzero(data == _LBRACE))
        others = sum(buf.count(b"{", s, e) for s, e in
                     zip(starts[rest].tolist(), ends[rest].tolist(), strict=True))
        if total == 2 * (ends.size - rest.size) + others:
            return
    per_line = np.bincount(_lines_of(ends, np.flatnonzero(data == _LBRACE)),
                           minlength=ends.size)
    ok &= per_line == 2


class RankCounts:
    """Records passed over, per rank: a numpy tally for small ranks, a dict above."""

    def __init__(self) -> None:
        self._dense = np.zeros(0, dtype=np.int64)
        self._sparse: dict[int, int] = {}

    def add(self, ranks: np.ndarray) -> None:
        if not ranks.size:
            return
        top = int(ranks.max())
        if top < _MAX_DENSE_RANK:
            tally = np.bincount(ranks, minlength=self._dense.size)
            tally[: self._dense.size] += self._dense
            self._dense = tally
            return
        values, counts = np.unique(ranks, return_counts=True)
        for r, c in zip(values.tolist(), counts.tolist(), strict=True):
            self._sparse[r] = self._sparse.get(r, 0) + c

    def total(self) -> int:
        return int(self._dense.sum()) + sum(self._sparse.values())

    def drain_into(self, out: dict[int, int]) -> None:
        """Add the counts to ``out`` (rank -> records) and start again from zero."""
        dense = self._dense
        for r in np.flatnonzero(dense).tolist():
            out[r] = out.get(r, 0) + int(dense[r])
        for r, c in self._sparse.items():
            out[r] = out.get(r, 0) + c
        self.__init__()


def skim_lines(f: IO[bytes], limit: int, want: int, passed: dict[int, int],
               block_bytes: int = BLOCK_BYTES) -> Iterator[bytes | None]:
    """The lines of ``f`` the reader must parse, in file order; the others counted.

    Yields what ``steps._iter_lines(f, limit)`` yields (a line, or ``None``
    for a line of ``limit`` bytes or more, drained unread) minus the lines
    that are certainly another rank's records, which are added to ``passed``
    (rank -> records) by the time the iterator is exhausted.
    """
    counts = RankCounts()
    buf = bytearray(block_bytes + _SLACK)
    view = memoryview(buf)
    have = 0  # bytes of buf holding data: a line carried over, then what was read
    drain = False  # inside a line of ``limit`` bytes or more, already yielded as None
    while True:
        room = len(buf) - _SLACK - have
        if not room:  # one line fills the buffer
            if have >= limit:
                yield None
                have, drain = 0, True
                continue
            view.release()
            buf.extend(bytes(len(buf)))  # grow: lines up to ``limit`` are held whole
            view = memoryview(buf)
            continue
        got = f.readinto(view[have:have + room])
        if not got:
            break
        have += got
        if drain:
            nl = buf.find(b"\n", 0, have)
            if nl < 0:
                have = 0
                continue
            buf[: have - nl - 1] = view[nl + 1:have]
            have -= nl + 1
            drain = False
        end = buf.rfind(b"\n", 0, have) + 1
        if not end:
            continue
        lines, passed_over = yield from _block(buf, view, end, want, limit, counts)
        buf[: have - end] = view[end:have]
        have -= end
        if passed_over < MIN_SKIPPED_SHARE * lines and _rewind(f, have):
            counts.drain_into(passed)
            from .steps import _iter_lines

            yield from _iter_lines(f, limit)
            return
    if have and not drain:
        yield None if have >= limit else bytes(view[:have])
    counts.drain_into(passed)


def _block(buf: bytearray, view: memoryview, end: int, want: int, limit: int,
           counts: RankCounts) -> Generator[bytes | None, None, tuple[int, int]]:
    """Yield the lines of ``buf[:end]`` to parse; return (lines, lines passed over)."""
    starts, ends, skip, ranks = classify_block(buf, end, want, limit)
    counts.add(ranks[skip])
    keep = np.flatnonzero(~skip)
    for s, e in zip(starts[keep].tolist(), ends[keep].tolist(), strict=True):
        yield None if e - s >= limit else bytes(view[s:e + 1])
    return ends.size, ends.size - keep.size


def _rewind(f: IO[bytes], carried: int) -> bool:
    """Step back over the carried-over bytes so a plain reader can go on; False if it can't."""
    try:
        f.seek(-carried, io.SEEK_CUR)
    except (OSError, ValueError):
        return False
    return True
