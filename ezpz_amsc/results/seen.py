"""The runs a reading has seen, in about 30 bytes a run: how ``check`` and ``report`` find a
run twice in a file of millions of rows without keeping its rows.

A run identity (:data:`~ezpz_amsc.results.schema.KEY_COLUMNS`) is kept as an 8-byte
digest with the line it was first seen at and the byte offset of its record, in flat
arrays and an open-addressing table of their positions. A digest says only "maybe the
same run": when one matches, the first record is read again from the file (at its
offset) and the identities are compared whole, so a duplicate is never reported wrongly
(two runs whose digests collide) nor missed (a probe goes on past every mismatch).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable

RunKey = tuple[str, ...]
_FIRST_SLOTS = 1 << 10  # a power of two: a digest's first slot is its low bits
_digest = hash  # of a str: 64 bits of SipHash, keyed anew in each process


def _released(_where: int, _offset: int) -> RunKey | None:
    raise RuntimeError("the runs seen were released")


class SeenRuns:
    """Where each run identity was first seen (the duplicate rule of ``check`` and ``report``).

    ``key_at(where, offset)`` reads again the identity of the record at ``offset``
    (first seen at ``where``): what a matching digest is confirmed with; None when
    no such record is there any more.
    """

    def __init__(self, key_at: Callable[[int, int], RunKey | None]) -> None:
        self._key_at = key_at
        self._digests = array("q")
        self._where = array("I")  # 4 bytes while they fit (see _widen)
        self._offsets = array("I")
        self._slots = array("I", bytes(4 * _FIRST_SLOTS))  # entry number + 1; 0: empty
        self._mask = _FIRST_SLOTS - 1

    def __len__(self) -> int:
        return len(self._digests)

    def first(self, text: str, where: int, offset: int, key: RunKey | None = None) -> int | None:
        """Record the run ``text`` as seen at ``where`` (its record at byte ``offset``);
        return where it was seen first, if earlier.

        ``text`` is the identity's cells joined by commas; ``key`` the identity itself,
        needed only when a cell holds a comma (else it is ``text`` split at its commas).
        """
        digest = _digest(text)
        slots, mask, digests = self._slots, self._mask, self._digests
        i = digest & mask
        n = slots[i]
        while n:
            if digests[n - 1] == digest:
                if key is None:
                    key = tuple(text.split(","))
                if self._key_at(self._where[n - 1], self._offsets[n - 1]) == key:
                    return self._where[n - 1]
            i = (i + 1) & mask
            n = slots[i]
        try:
            self._where.append(where)
            self._offsets.append(offset)
        except OverflowError:  # past 4 GiB, or line 4,294,967,295
            self._widen(where, offset)
        digests.append(digest)
        slots[i] = len(digests)
        if 2 * len(digests) > mask:
            self._grow()
        return None

    def release(self) -> None:
        """Let go of ``key_at``, which refers back to the reader that holds this index: that
        cycle would keep the runs (tens of MB a million rows) until the garbage collector
        runs. Nothing is looked up afterwards."""
        self._key_at = _released

    def _widen(self, where: int, offset: int) -> None:
        """Lines and offsets in 8 bytes from now on (``where`` and ``offset`` appended)."""
        del self._where[len(self._digests):]  # the one appended before the other overflowed
        self._where, self._offsets = array("q", self._where), array("q", self._offsets)
        self._where.append(where)
        self._offsets.append(offset)

    def _grow(self) -> None:
        """Twice the slots (at most half of them used: short probes), filled again."""
        mask = 2 * self._mask + 1
        code = "I" if len(self._digests) < 0xFFFFFFFF else "q"
        slots = array(code, bytes(array(code).itemsize * (mask + 1)))
        for n, digest in enumerate(self._digests, 1):
            i = digest & mask
            while slots[i]:
                i = (i + 1) & mask
            slots[i] = n
        self._slots, self._mask = slots, mask
