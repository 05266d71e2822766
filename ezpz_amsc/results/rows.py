"""Reading a results file's records: numbered, capped, and never a traceback.

The one reader of results files' rows for ``check``, ``report`` and the
append's duplicate check. A results file is edited by hand and shared, so it
can hold anything: a line of megabytes, a field past the csv module's limit, a
quoted field running over many lines, bytes that are not UTF-8, CR or CRLF line
ends. Each record comes out with the byte offset and number of its first line;
a line longer than :data:`~ezpz_amsc.results.schema.MAX_ROW_BYTES` is skipped
unread (reported, never held in memory), and a record the csv module cannot
read is reported, after which reading goes on at the next line.

:func:`read_blocks` reads the same records faster: a block of whole lines that the
csv module would read as they stand (no quote, no CR, no NUL, valid UTF-8, no line
near a limit) comes out as the lines' text, each line's cells its text split at the
commas; anything else is read by :func:`read_records`.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from ezpz_amsc.results.schema import MAX_ROW_BYTES

_BOM = "\ufeff"
_BLOCK_BYTES = 1 << 16  # read at a time by read_blocks


@dataclass
class Record:
    """One record of a results file: its cells, or why it could not be read."""

    offset: int  # byte offset of its first line
    line: int  # number of its first line, from 1
    last_line: int  # number of its last line (a quoted field can span lines)
    cells: list[str] | None  # None: not read (see ``problem``)
    problem: str | None = None


def read_records(f: BinaryIO, offset: int = 0, line: int = 1) -> Iterator[Record]:
    """The records of ``f`` from byte ``offset``, which starts line number ``line``.

    ``f`` (binary, seekable) is seeked to ``offset`` and read to its end. Cells
    are decoded as UTF-8, with bytes that are not kept as lone surrogates
    (``surrogateescape``), so that a line of another encoding is still
    numbered and can be reported.
    """
    f.seek(offset)
    return _records(_Lines(f, offset, line))


class _Lines:
    """Physical lines (ended by LF, CRLF or CR) with their offsets, each at most the cap.

    A line past the cap is drained unread and ends the current pass, so that
    the csv reader stops; the caller reports it and starts a new pass.
    """

    def __init__(self, f: BinaryIO, offset: int, line: int) -> None:
        self.f, self.offset, self.line = f, offset, line - 1
        self.started: list[tuple[int, int]] = []  # (offset, line) of the current record's lines
        self.long: tuple[int, int] | None = None  # a line past the cap, just skipped
        self.eof = False

    def __iter__(self) -> Iterator[str]:
        readline, started = self.f.readline, self.started
        cap = MAX_ROW_BYTES + 2  # a line of the cap and its line end (CRLF)
        while True:
            raw = readline(cap)
            if not raw:
                self.eof = True
                return
            if b"\r" in raw:  # CRLF, or old Mac line ends (a bare CR): maybe several lines
                raw = self._first_of(raw, cap)
            start = self.offset
            self.line += 1
            self.offset += len(raw)
            end = 2 if raw.endswith(b"\r\n") else 1 if raw.endswith((b"\n", b"\r")) else 0
            if len(raw) - end > MAX_ROW_BYTES:
                if not end:
                    self._drain(cap)
                self.long = (start, self.line)
                return
            started.append((start, self.line))
            text = raw.decode("utf-8", "surrogateescape")
            # A UTF-8 BOM, taken off before the csv module sees it: it would keep the quotes
            # of a quoted first cell ("timestamp") as text.
            yield text[1:] if not start and text.startswith(_BOM) else text

    def _first_of(self, raw: bytes, cap: int) -> bytes:
        """The first line of ``raw``, the rest put back to be read again; a CR that ends
        ``raw`` at the cap takes the LF after it, if one follows."""
        first = raw.splitlines(keepends=True)[0]
        if len(first) < len(raw):
            self.f.seek(len(first) - len(raw), os.SEEK_CUR)
        elif len(raw) == cap and raw.endswith(b"\r"):
            nxt = self.f.read(1)
            if nxt == b"\n":
                return raw + nxt
            if nxt:
                self.f.seek(-1, os.SEEK_CUR)
        return first

    def _drain(self, cap: int) -> None:
        """Read on to the end of a long line, a cap's worth at a time."""
        readline = self.f.readline
        while True:
            rest = readline(cap)
            cr = rest.find(b"\r")
            if cr != -1 and rest[cr + 1:cr + 2] != b"\n":  # a bare CR ends it: put the rest back
                if cr + 1 == len(rest):  # a CR that ends a cap's worth: the LF after it, if any
                    nxt = self.f.read(1)
                    if nxt == b"\n":
                        self.offset += len(rest) + 1
                        return
                    self.f.seek(-len(nxt), os.SEEK_CUR)
                self.f.seek(cr + 1 - len(rest), os.SEEK_CUR)
                self.offset += cr + 1
                return
            self.offset += len(rest)
            if not rest or rest.endswith(b"\n"):
                return


def _records(lines: _Lines) -> Iterator[Record]:
    started = lines.started
    while not lines.eof:
        reader = csv.reader(lines)
        try:
            for cells in reader:
                (start, first), last = started[0], started[-1][1]
                started.clear()
                yield Record(start, first, last, cells)
        except csv.Error as e:
            start, first = lines.started[0] if lines.started else (lines.offset, lines.line)
            yield Record(start, first, lines.line, None, f"{e}; read on from the next line")
        lines.started.clear()
        if lines.long is not None:
            start, number = lines.long
            lines.long = None
            lines.eof = False
            yield Record(start, number, number, None,
                         f"line longer than {MAX_ROW_BYTES:,} bytes; not read")


@dataclass
class Plain:
    """Whole lines that the csv module reads as their text split at the commas."""

    offset: int  # byte offset of the first line
    line: int  # its number
    texts: list[str]  # each line's text, without its line end ("" for an empty line)
    ascii: bool  # every line's length in bytes is its length in characters


def read_blocks(f: BinaryIO, offset: int = 0, line: int = 1) -> Iterator[Plain | Record]:
    """The records of ``f`` from byte ``offset`` (line number ``line``), as
    :func:`read_records` gives them, with runs of plain lines given as :class:`Plain`.

    A line of a :class:`Plain` is the record ``text.split(",")`` (an empty line:
    ``[]``); its line number and offset follow from the block's by counting.
    The file's first record (a BOM) is always read by :func:`read_records`.
    """
    # Below both the csv module's field limit and the line cap, counted in characters.
    longest = min(csv.field_size_limit(), MAX_ROW_BYTES // 4) - 1
    exact_to = 1 if offset == 0 else 0  # read the records before this offset the exact way
    while True:
        if exact_to > offset:
            f.seek(offset)
            lines = _Lines(f, offset, line)
            for rec in _records(lines):
                yield rec
                if lines.offset >= exact_to:
                    break
            else:
                return
            offset, line = lines.offset, lines.line + 1
        f.seek(offset)
        data = f.read(_BLOCK_BYTES)
        if not data:
            return
        end = data.rfind(b"\n") + 1
        exact_to = offset + (end or len(data))
        if not end or b'"' in data[:end] or b"\r" in data[:end] or b"\0" in data[:end]:
            continue
        chunk = data[:end]
        try:
            texts = chunk.decode().split("\n")
        except UnicodeDecodeError:
            continue
        texts.pop()  # after the last line end
        if max(map(len, texts)) > longest:
            continue
        yield Plain(offset, line, texts, chunk.isascii())
        offset, line = offset + end, line + len(texts)


def record_at(fd: int, offset: int) -> list[str] | None:
    """The cells of the record starting at byte ``offset`` of the open file ``fd``.

    Read with ``pread``: the descriptor's own offset (an append's) is not moved.
    None when no readable record starts there.
    """
    data = os.pread(fd, MAX_ROW_BYTES + 1, offset)
    first = next(read_records(io.BytesIO(data)), None)
    return first.cells if first is not None else None
