"""Pass over other ranks' lines of a shared metrics file without parsing them.

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
- it holds no backslash and no NUL byte;
- it starts ``{"timestamp": `` and ends with a digit and ``}}``;
- it holds exactly two ``{``, and the second is the end of
  ``"rank": R, "metrics": {``, with ``R`` a plain positive integer of at
  most 7 digits (no sign, no leading zero) that is not the wanted rank.

Why that is certain: without a backslash no string holds a ``"``, so every
``"rank"`` followed by ``:`` is a key. With two ``{`` and the final ``}}``
after a digit, the second object is the record's last member, ``metrics``,
ending in a number; the ``rank`` key just before it is the record's last
``rank`` key, and JSON keeps the last of repeated keys. So a line with these
facts that parses is a record of rank ``R`` with a numeric metric, exactly
what the full parse counts as one; a wanted record never goes unparsed,
whatever the line holds.

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

BLOCK_BYTES = 2 << 20  # one block: ~4,800 hf-sized lines, a few MB of numpy scratch
MAX_RANK_DIGITS = 7
# Below this share of passed-over lines a block is mostly wanted lines (a
# per-rank file): classifying costs more than it saves, so the rest of the
# file is read line by line as before.
MIN_SKIPPED_SHARE = 0.25
# The first read is smaller, so that such a file pays for classifying 64 KB only.
FIRST_READ_BYTES = 64 << 10
_SLACK = 64  # bytes past the data that gathers may read, so no index needs clipping
_MAX_DENSE_RANK = 1 << 16  # ranks counted in an array up to here, in a dict above

_START = b'{"timestamp": '
_KEY = b'"rank": '
_METRICS = b', "metrics": '  # between the rank and the second '{'
_DIGITS = b"0123456789"
_NL, _NUL, _BACKSLASH, _LBRACE, _RBRACE, _ZERO, _NINE = 10, 0, 92, 123, 125, 48, 57


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
    head = body[:body.index(b"{", 1)]
    if not head.endswith(_METRICS):
        return None
    head = head[:-len(_METRICS)]
    digits = len(head) - len(head.rstrip(_DIGITS))
    if not 1 <= digits <= MAX_RANK_DIGITS or head[-digits] == _ZERO:
        return None
    if not head[:-digits].endswith(_KEY):
        return None
    rank = int(head[-digits:])
    return None if rank == want else rank


def _u64(b: bytes) -> int:
    return int.from_bytes(b[:8].ljust(8, b"\0"), "little")


def _mask(nbytes: int) -> int:
    return (1 << (8 * nbytes)) - 1


_START_LO, _START_HI = _u64(_START), _u64(_START[8:])  # bytes 0-7, 8-13
_START_HI_MASK = _mask(len(_START) - 8)
_KEY_U64 = _u64(_KEY)
_METRICS_LO, _METRICS_HI = _u64(_METRICS), _u64(_METRICS[8:])  # bytes 0-7, 8-12
_METRICS_HI_MASK = _mask(len(_METRICS) - 8)
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_GE_ZERO = np.uint64(0x5050505050505050)  # + (0x80 - '0'): top bit set from '0' up
_GE_COLON = np.uint64(0x4646464646464646)  # + (0x80 - ':'): top bit set from ':' up
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


def _words(a: np.ndarray) -> np.ndarray:
    """Unaligned little-endian 8-byte words at every offset: one gather reads 8 bytes."""
    return np.ndarray((a.size - 7,), dtype="<u8", buffer=a, strides=(1,))


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
    braces = _positions(data, _LBRACE)
    paired = _paired_lines(a, data, braces)
    if paired is not None:
        starts, ends, second = paired
        ok = _shape_ok(a, starts, ends, limit)
    else:
        ends = _positions(data, _NL)
        starts = np.empty_like(ends)
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
        first = np.searchsorted(braces, starts)  # each line's first '{' (of all in order)
        ok = _shape_ok(a, starts, ends, limit) & (np.diff(first, append=braces.size) == 2)
        second = braces[np.minimum(first + 1, braces.size - 1)] if braces.size else first
    for bad in (_NUL, _BACKSLASH):
        if buf.find(bad, 0, n) >= 0:  # memchr: costs nothing when absent
            ok[np.searchsorted(ends, np.flatnonzero(data == bad))] = False
    idx = np.flatnonzero(ok)
    ranks = np.zeros(ends.size, dtype=np.int64)
    ok[idx], ranks[idx] = _rank_before(a, second[idx])
    if not -(2**63) <= want < 2**63:
        want = -1  # no rank that passes the checks is negative
    return starts, ends, ok & (ranks != want), ranks


def _paired_lines(a: np.ndarray, data: np.ndarray, braces: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(starts, ends, second '{') when every line holds two ``{``, the first at its start.

    That is the block of an interleaved file without an ``aggregated`` line:
    then the ``{`` alone give the lines, and looking for newlines is a count
    instead of a search. None for any other block.
    """
    if not braces.size or braces.size % 2 or braces[0] != 0:
        return None
    starts = braces[0::2]
    ends = np.empty_like(starts)
    ends[:-1] = starts[1:] - 1
    ends[-1] = data.size - 1
    # Each line ends just before the next one's first '{', and there is no other newline.
    if not (a[ends] == _NL).all() or np.count_nonzero(data == _NL) != ends.size:
        return None
    return starts, ends, braces[1::2]


def _shape_ok(a: np.ndarray, starts: np.ndarray, ends: np.ndarray, limit: int) -> np.ndarray:
    """Lines under ``limit`` that start ``{"timestamp": `` and end with a digit and ``}}``."""
    words = _words(a)
    t3, t2, t1 = a[ends - 3], a[ends - 2], a[ends - 1]
    ok: np.ndarray = ((ends - starts < limit)
            & (words[starts] == _START_LO) & ((words[starts + 8] & _START_HI_MASK) == _START_HI)
            & (t1 == _RBRACE) & (t2 == _RBRACE) & (t3 >= _ZERO) & (t3 <= _NINE))
    return ok


def _rank_before(a: np.ndarray, brace: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Before each ``{``: is it ``"rank": R, "metrics": {``, and R.

    The 8 bytes before ``, "metrics": `` are read as one word, and the digits
    at its end found and decoded with word arithmetic (SWAR): a handful of
    operations for all lines at once.
    """
    words = _words(a)
    end = brace - len(_METRICS)  # just past the digits
    raw = words[end - 8]
    # The top bit of each byte says "not a digit". The low 7 bits of a byte
    # plus a constant below 0x80 cannot carry into the next byte, so every
    # byte is tested on its own.
    low = raw & _LOW7
    digit = (low + _GE_ZERO) & ~(low + _GE_COLON) & ~raw & _HIGH_BITS
    not_digit = ~digit & _HIGH_BITS
    # log2 of the highest flag is 8 * i + 7 for byte i; no flag (8 digits) gives -1.
    last = (np.log2((not_digit | np.uint64(1)).astype(np.float64)).astype(np.int64) - 7) // 8
    count = 7 - last
    start = end - count
    good = ((words[end] == _METRICS_LO)
            & ((words[end + 8] & _METRICS_HI_MASK) == _METRICS_HI)
            & (count >= 1) & (count <= MAX_RANK_DIGITS) & (a[start] != _ZERO)
            & (words[start - 8] == _KEY_U64))
    # The digits with zero bytes below them (leading zeros), then pairs,
    # quads and all eight combined: the decimal value.
    below = (np.uint64(8) - np.clip(count, 1, 8).astype(np.uint64)) * np.uint64(8)
    v = raw & ~((np.uint64(1) << below) - np.uint64(1))
    v = ((v & np.uint64(0x0F0F0F0F0F0F0F0F)) * np.uint64(2561)) >> np.uint64(8)
    v = ((v & np.uint64(0x00FF00FF00FF00FF)) * np.uint64(6553601)) >> np.uint64(16)
    v = ((v & np.uint64(0x0000FFFF0000FFFF)) * np.uint64(42949672960001)) >> np.uint64(32)
    return good, v.astype(np.int64)


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

    def drain_into(self, out: dict[int, int]) -> None:
        """Add the counts to ``out`` (rank -> records) and start again from zero."""
        dense = self._dense
        for r in np.flatnonzero(dense).tolist():
            out[r] = out.get(r, 0) + int(dense[r])
        for r, c in self._sparse.items():
            out[r] = out.get(r, 0) + c
        self._dense = np.zeros(0, dtype=np.int64)
        self._sparse = {}


def skim_lines(f: IO[bytes], limit: int, want: int, passed: dict[int, int],
               block_bytes: int = BLOCK_BYTES) -> Iterator[bytes | None]:
    """The lines of ``f`` the reader must parse, in file order; the others counted.

    Yields what ``lines.iter_lines(f, limit)`` yields (a line, or ``None``
    for a line of ``limit`` bytes or more, drained unread) minus the lines
    that are certainly another rank's records, which are added to ``passed``
    (rank -> records) by the time the iterator is exhausted.
    """
    counts = RankCounts()
    buf = bytearray(block_bytes + _SLACK)
    view = memoryview(buf)
    have = 0  # bytes of buf holding data: a line carried over, then what was read
    drain = False  # inside a line of ``limit`` bytes or more, already yielded as None
    first_read = True
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
        got = f.readinto(view[  # type: ignore[attr-defined]  # every reader passed has it
            have:have + (min(room, FIRST_READ_BYTES) if first_read else room)])
        first_read = False
        if not got:
            break
        have += got
        if drain:
            nl = buf.find(b"\n", 0, have)
            if nl < 0:
                have = 0
                continue
            buf[: have - nl - 1] = bytes(view[nl + 1:have])  # a copy: memcpy must not overlap
            have -= nl + 1
            drain = False
        end = buf.rfind(b"\n", 0, have) + 1
        if not end:
            continue
        lines, passed_over = yield from _block(buf, view, end, want, limit, counts)
        buf[: have - end] = bytes(view[end:have])  # the carried-over line, moved to the front
        have -= end
        if passed_over < MIN_SKIPPED_SHARE * lines and _rewind(f, have):
            counts.drain_into(passed)
            from ezpz_amsc.run.lines import iter_lines

            yield from iter_lines(f, limit)
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
