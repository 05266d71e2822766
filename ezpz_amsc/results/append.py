"""Write rows: to stdout, or appended to a shared results CSV under its lock.

A sweep finishes dozens of jobs within seconds, all appending to one file on a
parallel filesystem, and the jobs may belong to several people of a team.
Header check, duplicate check and write happen under one exclusive lock
on the results file itself: whoever may write the file may lock it, and no
lock file ever appears beside it. Each batch of rows goes out as a single
``write`` of complete lines, flushed and fsynced. A failed write cuts the file
back to its old size, so a results file is never left half-written.

The protocol, step by step (docs/results-files.md tells users the same):

1. Open the file read-write for appending; create it when missing (0666
   masked by the umask, as ``touch`` does), with ``O_EXCL`` so that exactly
   one writer knows it created it.
2. Lock it exclusively (``fcntl`` record lock on the whole file), polling
   until ``--lock-timeout``.
3. Check that the locked file is still the one at the path. A writer whose
   first write failed removes the file it created, and a writer that had
   opened it meanwhile would hold a lock on a removed file: it starts over.
4. Read the header through the same descriptor, and find the rows' runs: each run's
   timestamp cell is searched for as bytes over the whole file *before* the lock is
   taken; under the lock only what was appended since is searched (the whole file
   again only when it changed other than by growth), and each line found is parsed
   to confirm it holds the run. The lock is held in proportion to what was appended.
5. Append, fsync, and check where the bytes landed: a program that ignores the
   lock may have truncated, replaced or removed the file meanwhile. Then the
   bytes are taken back and the append starts over on the file now at the
   path; a row is never reported appended that is not in that file.
6. On failure cut the file back; a file this writer created and left empty
   is removed, while the lock is still held. Folders made for it are removed
   (if still empty) once the lock is released.

Record locks rather than ``flock``: NFS, Lustre (mounted ``-o flock``) and
GPFS all keep ``fcntl`` locks coherent across nodes. A record lock belongs to
the process and is dropped when the process closes *any* descriptor of the
file, so while it is held the file is read only through the locked descriptor.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ezpz_amsc.errors import AmscError, reason
from ezpz_amsc.fs.access import permission_error, planted_symlink
from ezpz_amsc.fs.create import (
    FILE_MODE,
    check_can_create,
    crash_point,
    make_folders,
    not_a_folder,
    remove_folders,
    write_all,
)
from ezpz_amsc.fs.read import NotRegularFile, open_regular, refuse_non_regular
from ezpz_amsc.results.rows import record_at
from ezpz_amsc.results.schema import (
    CONFLICT_FIX,
    CONFLICT_OPEN,
    HEADER,
    LOCK_TIMEOUT_SEC,
    RunIndex,
    RunKey,
    cells_key,
    conflict_marker,
    foreign_format,
    header_difference,
    render_csv,
    shown_header,
)
from ezpz_amsc.text import opt, wrap_at_commas

# A header is a few hundred bytes: a longer first line is no results file, and
# reading it whole could cost a line's worth of memory.
_HEAD_MAX_BYTES = 1 << 20
_NEEDS_A_FILE = opt("append") + " needs a CSV file path"
_HEAD_FIRST_BYTES = 4096  # a header fits: read more only when it does not
_BOM = b"\xef\xbb\xbf"


@dataclass
class _FileState:
    has_content: bool
    newline: str  # the file's own line ending, kept when appending
    ends_with_newline: bool
    size: int  # bytes when the header was read


def _read_state(fd: int, path: Path) -> _FileState:
    """Check the header of the open results file and learn its line-ending style.

    A header that differs only by a UTF-8 BOM or CRLF endings is the same
    header; any other difference (names, order, count) is refused. Read with
    ``pread`` through ``fd`` itself: closing any other descriptor of the file
    would drop the record lock held through ``fd``.
    """
    try:
        size = os.fstat(fd).st_size
        head = os.pread(fd, _HEAD_FIRST_BYTES, 0)
        if b"\n" not in head and len(head) == _HEAD_FIRST_BYTES:
            head = os.pread(fd, _HEAD_MAX_BYTES, 0)
        last = b""
        if size:
            last = os.pread(fd, 1, size - 1)
    except OSError as e:
        raise _read_error(path, e) from None
    end = head.find(b"\n")
    head = head[:end + 1] if end != -1 else head
    if head in (b"", _BOM):  # empty, or only a byte-order mark: a new file
        return _FileState(False, "\n", True, size)
    # Whitespace alone is refused too: the header would go after it, and every
    # later append would find an empty or foreign first line.
    if not head.strip(_BOM + b"\r\n \t"):
        raise AmscError(f"{path}: first line is empty; not a results file, refusing to append")
    # Old Mac / some spreadsheet exports end lines with a bare CR: readline sees
    # no line end there, so cut the header at the first CR ourselves. (readline
    # stops at the first LF, so a CR in ``head`` always comes before any LF.)
    cr = head.find(b"\r")
    if cr != -1:
        newline = "\r\n" if head[cr:] == b"\r\n" else "\r"
        head = head[:cr]
    elif len(head) == _HEAD_MAX_BYTES and not head.endswith(b"\n"):
        raise AmscError(f"{path}: first line is longer than 1 MiB; not a results file, "
                        "refusing to append")
    else:
        newline = "\n"
    foreign = foreign_format(head)
    if foreign is not None:  # a spreadsheet's save: its cause, not "header differs"
        raise AmscError(f"{path}: {foreign}; refusing to append")
    try:
        text = head.decode("utf-8-sig").rstrip("\r\n")
        found = next(csv.reader([text]), [])
    except UnicodeDecodeError:
        raise AmscError(f"{path}: header is not UTF-8; refusing to append") from None
    except csv.Error as e:
        raise AmscError(f"{path}: header is not CSV ({e}); refusing to append") from None
    if tuple(found) != HEADER:
        # Both headers, one under the other, so that they can be compared; of the file's,
        # only names that look like column names (no file's secrets in a message).
        lines = [*wrap_at_commas("  the file's:  ", shown_header(found, len(HEADER) + 2)),
                 *wrap_at_commas("  this tool's: ", ",".join(HEADER))]
        raise AmscError(
            f"{path}: existing header differs from this tool's ({header_difference(found)}); "
            "refusing to append — write to a new file\n" + "\n".join(lines))
    return _FileState(True, newline, last in (b"\n", b"\r"), size)


def check_append_target(path: str | os.PathLike[str]) -> None:
    """Refuse a bad ``--append`` target before any export work is done.

    Only a fast pre-check (header, permissions): the authoritative checks run
    again under the lock. Opening the file read-write changes nothing in it.
    """
    p = checked_path(path)
    _refuse_target(p)
    try:
        fd = os.open(p, _APPEND_FLAGS | os.O_NONBLOCK)  # as the append will (an append-only file)
    except FileNotFoundError:
        check_can_create(p)
        return
    except OSError as e:
        raise _open_error(p, e, creating=False) from None
    try:
        _refuse_opened(fd, p)
        _read_state(fd, p)
    finally:
        os.close(fd)


def checked_path(path: str | os.PathLike[str]) -> Path:
    """``path`` as a :class:`Path`, refusing what names no results file: ``-`` (stdout is
    the default, not a file) and a path ending in ``/`` (a folder)."""
    text = os.fspath(path)
    if text == "-":
        raise AmscError(opt("append", "-") + ": rows go to stdout without " + opt("append")
                        + "; to append to a file named -, pass ./-")
    if text.endswith(os.sep):
        raise AmscError(f"{text}: ends with {os.sep}, so it names a folder; " + _NEEDS_A_FILE)
    return Path(text)


def _refuse_target(p: Path) -> None:
    """Refuse, before anything is opened, a path that names no results file: a symlink
    another user planted in a shared folder, a folder, a FIFO, a device, a socket, a
    ``/proc`` or ``/sys`` file (whose read would block, never end, or echo secrets)."""
    planted = planted_symlink(p)
    if planted is not None:
        raise planted
    try:
        st = os.stat(p)
    except PermissionError:
        raise  # below a folder you may not search: the command line's edge says so
    except OSError:
        return  # nothing there (it is created), or trouble the open names
    _refuse_stat(st, p)


def _refuse_stat(st: os.stat_result, p: Path) -> None:
    try:
        refuse_non_regular(st, p)
    except IsADirectoryError:
        raise AmscError(f"{p}: is a directory; " + _NEEDS_A_FILE) from None
    except NotRegularFile as e:
        raise AmscError(f"{p}: {e.strerror}; " + _NEEDS_A_FILE) from None


def _refuse_opened(fd: int, p: Path) -> None:
    """What was opened is a regular file (a FIFO swapped in meanwhile is not read)."""
    _refuse_stat(os.fstat(fd), p)


@dataclass
class Locked:
    """A results file open for appending, its lock held."""

    fd: int
    created: bool  # by this writer, who may remove it again if it stays empty


@contextlib.contextmanager
def locked(path: str | os.PathLike[str], timeout_sec: float,
           made: list[Path] | None = None) -> Iterator[Locked]:
    """Open ``path`` for appending (created if missing) and hold an exclusive lock on it.

    Folders made for it are added to ``made``. A record lock dies with its
    process, so a killed appender never blocks the next one.
    """
    p = Path(path)
    deadline = time.monotonic() + timeout_sec
    made = [] if made is None else made
    while True:
        fd, created = _open_for_append(p, made)
        try:
            crash_point("opened")
            _wait_for_lock(fd, p, deadline, timeout_sec)
            if _still_at(fd, p):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # removed or replaced while we waited: lock the file there now
    try:
        yield Locked(fd, created)
    finally:
        os.close(fd)  # releases the lock


_APPEND_FLAGS = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC


def _open_for_append(p: Path, made: list[Path]) -> tuple[int, bool]:
    """Open ``p`` for appending, creating it (and its folders) when missing.

    Returns the descriptor and whether this call created the file. The file or
    its folder can vanish between two calls (a writer whose first write failed
    takes back what it made), hence the retries.
    """
    for _ in range(100):
        planted = planted_symlink(p)
        if planted is not None:
            raise planted
        created = True
        try:
            fd = os.open(p, _APPEND_FLAGS | os.O_CREAT | os.O_EXCL, FILE_MODE)
        except FileExistsError:
            created = False
        except FileNotFoundError:  # a folder on the way is missing
            made.extend(make_folders(p.parent, p))
            continue
        except OSError as e:
            raise _open_error(p, e, creating=True) from None
        if not created:
            try:
                fd = os.open(p, _APPEND_FLAGS)
            except FileNotFoundError:
                if p.is_symlink():
                    raise AmscError(f"{p}: a symlink to {os.readlink(p)}, which does not "
                                    "exist; " + opt("append") + " needs a file path") from None
                continue
            except OSError as e:
                raise _open_error(p, e, creating=False) from None
        try:
            _refuse_opened(fd, p)
        except BaseException:
            os.close(fd)
            raise
        return fd, created
    raise AmscError(f"{p}: appeared and disappeared 100 times while opening it; "
                    "is another program removing it?")


def _open_error(p: Path, e: OSError, creating: bool) -> AmscError:
    if isinstance(e, IsADirectoryError):
        return AmscError(f"{p}: is a directory; " + _NEEDS_A_FILE)
    if isinstance(e, NotADirectoryError):
        return not_a_folder(p)
    if e.errno == errno.EPERM and not creating:  # EACCES is the mode's; EPERM the inode's flags
        return AmscError(f"{p}: cannot open results file: operation not permitted (an immutable "
                         "file? see lsattr)")
    if isinstance(e, PermissionError):
        if creating:
            return permission_error(p.parent, "wx", f"cannot create {p.name} there")
        return permission_error(p, "rw")
    what = "create" if creating else "open"
    return AmscError(f"{p}: cannot {what} results file: {reason(e)}")


def _read_error(p: Path, e: OSError) -> AmscError:
    return AmscError(f"{p}: cannot read results file: {reason(e)}")


def _wait_for_lock(fd: int, p: Path, deadline: float, timeout_sec: float) -> None:
    delay = 0.005
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise AmscError(f"{p}: cannot lock: {reason(e)} (on Lustre, "
                                "mount with -o flock)") from None
        if time.monotonic() >= deadline:
            raise AmscError(f"{p}: still locked by another writer after "
                            f"{timeout_sec:g} s; retry, or raise " + opt("lock_timeout"))
        time.sleep(delay)
        delay = min(delay * 2, 0.25)


def _still_at(fd: int, p: Path) -> bool:
    """Whether the file open as ``fd`` is still the one at ``p`` (not removed or replaced)."""
    held = os.fstat(fd)
    try:
        now = os.stat(p)
    except FileNotFoundError:
        return False
    return held.st_nlink > 0 and (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


def find_duplicates(rows: Sequence[Sequence[str]]) -> list[str]:
    """Describe every row whose run is an earlier row's of the same batch."""
    wanted = RunIndex()
    problems: list[str] = []
    for i, r in enumerate(rows, 1):
        key = cells_key(r)
        earlier = wanted.first(key, i)
        if earlier is not None:
            problems.append(f"rows {earlier} and {i} of this export are the same run "
                            f"({', '.join(key)})")
    return problems


@dataclass
class Existing:
    """A run already in the results file: the first line holding it."""

    line: int
    offset: int  # byte offset of that line
    cells: list[str]


_SEARCH_BYTES = 8 << 20  # read at a time by the search for timestamp cells
_TAIL_BYTES = 4096  # compared, under the lock, just before where the search stopped
_MARKER = CONFLICT_OPEN.encode()  # a conflict starts with it: found by its first byte
_LF, _CR, _QUOTE = 0x0A, 0x0D, 0x22


class _Search:
    """A search of a results file's bytes for lines that start with a timestamp cell of
    the runs wanted (as written, or quoted), and for git's conflict markers.

    The file is read a block at a time with ``pread`` (a file cut short under a memory
    map would kill the process), each block searched with ``bytes.find``: a million
    rows (96 MB) in tens of milliseconds from the page cache. A line found is parsed,
    and kept when it holds a run wanted: ``found`` is each run's first line and offset.
    Lines are counted (LF, CRLF and CR each end one, as ``check`` numbers them) only up
    to a run found or a marker: most searches find neither, and count nothing.
    """

    def __init__(self, fd: int, wanted: Sequence[RunKey]) -> None:
        self.fd = fd
        self.wanted = set(wanted)
        self.stamps = sorted({k[0].encode("utf-8", "surrogateescape") for k in wanted if k[0]})
        # A line a run wanted starts is longer than its cell, a comma and a byte: the
        # search stops that far short of the end (the rest is searched once it grows).
        self.reach = max(map(len, [*self.stamps, _MARKER])) + 2
        self.found: dict[RunKey, tuple[int, int]] = {}  # run: (line, offset), the first
        self.marker: tuple[int, int] | None = None  # (line, offset) of the first marker
        st = os.fstat(fd)
        self.ident = (st.st_dev, st.st_ino)
        self.to = 0  # searched up to here (every line starting before it)
        self.counted_to, self.lines = 0, 0  # line ends before ``counted_to``
        self.size = 0  # the file's size when last searched
        self.tail = b""  # the bytes before ``size`` then

    def run(self, size: int) -> None:
        """Search on from where the last search stopped to ``size``."""
        fd, pos, end = self.fd, self.to, max(self.to, size - self.reach)
        # One buffer read into again and again: a new one per block costs its page faults.
        data = bytearray(min(size, end - pos + self.reach + 2, _SEARCH_BYTES + self.reach + 2))
        while pos < end:
            lo = max(0, pos - 2)  # the two bytes before: a line end, a quote
            stop = min(end, pos + _SEARCH_BYTES)
            want = min(size, stop + self.reach) - lo
            with memoryview(data) as view, view[:want] as part:
                got = os.preadv(fd, [part], lo)
            if got < stop - lo:
                raise OSError(errno.EIO, "the file got shorter while it was read")
            del data[got:]  # the last block: the buffer holds nothing but what was read
            for start, stamp in sorted(self._hits(data, lo, pos, stop)):
                self._take(data, lo, start, stamp)
            pos = stop
        self.to = pos
        self.size = size
        self.tail = os.pread(fd, min(_TAIL_BYTES, size), max(0, size - _TAIL_BYTES))

    def _hits(self, data: bytearray, lo: int, pos: int, stop: int
              ) -> Iterator[tuple[int, bytes | None]]:
        """``(offset of the line, stamp)`` of each line in ``[pos, stop)`` that starts
        with a stamp (after a quote, or the file's BOM); stamp None: a conflict marker."""
        for stamp in self.stamps:
            i = data.find(stamp, pos - lo)
            while i != -1 and lo + i < stop:
                start = _line_start(data, lo, i)
                if start is not None:
                    yield start, stamp
                i = data.find(stamp, i + 1)
        if self.marker is not None:
            return
        i = data.find(b"<", pos - lo)  # memchr: rare in a results file, and fast
        while i != -1 and lo + i < stop:
            # (the search stops short of the end: a byte follows the marker)
            if data.startswith(_MARKER, i) and _opens_conflict(data, i):
                start = _line_start(data, lo, i)
                if start == lo + i:
                    yield start, None
                    return
            i = data.find(b"<", i + 1)

    def _take(self, data: bytearray, lo: int, start: int, stamp: bytes | None) -> None:
        if stamp is None:
            if self.marker is None:
                self.marker = (self.line_of(start), start)
            return
        cells = _cells_in(data, start - lo)
        if cells is None:  # quoted, or longer than the block: read the record itself
            cells = record_at(self.fd, start)
        if cells is not None and len(cells) >= len(HEADER):
            key = cells_key(cells)
            if key in self.wanted and key not in self.found:
                self.found[key] = (self.line_of(start), start)

    def line_of(self, offset: int) -> int:
        """The number of the line starting at ``offset`` (not before the last one counted)."""
        at = self.counted_to
        while at < offset:
            lo = max(0, at - 1)  # the byte before: the CR of a CRLF, counted already
            data = os.pread(self.fd, min(offset, at + _SEARCH_BYTES) - lo, lo)
            if len(data) <= at - lo:
                raise OSError(errno.EIO, "the file got shorter while it was read")
            self.lines += _line_ends(data, at - lo, len(data))
            at = lo + len(data)
        self.counted_to = offset
        return self.lines + 1

    def describes(self, fd: int) -> bool:
        """Whether the open file ``fd`` is the one searched, changed only by growth since:
        the same inode, not shorter, the same bytes just before where the search ended."""
        st = os.fstat(fd)
        return ((st.st_dev, st.st_ino) == self.ident and st.st_size >= self.size
                and os.pread(fd, len(self.tail), self.size - len(self.tail)) == self.tail)


def _opens_conflict(data: bytes | bytearray, i: int) -> bool:
    """Whether ``data[i:]`` (a byte after the marker's seven) starts git's conflict marker
    as :func:`~ezpz_amsc.results.schema.conflict_marker` reads a line."""
    head = bytes(data[i:i + 8]).split(b"\n", 1)[0].split(b"\r", 1)[0]
    return conflict_marker(head.decode("latin-1")) == CONFLICT_OPEN


def _line_start(data: bytes | bytearray, lo: int, i: int) -> int | None:
    """The offset of the line that ``data[i:]`` starts, written as is or quoted; None when
    something else comes before it on its line. (The file's first line is its header,
    read before: a UTF-8 BOM is never in front of a run.)"""
    at = lo + i
    if at == 0 or data[i - 1] in (_LF, _CR):
        return at
    if data[i - 1] == _QUOTE and (at == 1 or data[i - 2] in (_LF, _CR)):
        return at - 1
    return None


def _line_ends(data: bytes, a: int, b: int) -> int:
    """Line ends in ``data[a:b]``, ``a < b`` (LF, CR, CRLF: one each; a CRLF whose CR is
    before ``a`` was counted with its CR)."""
    n = data.count(b"\n", a, b)
    cr = data.count(b"\r", a, b)
    if cr:
        n += cr - data.count(b"\r\n", a, b)
    if a and data[a] == _LF and data[a - 1] == _CR:
        n -= 1
    return n


def _cells_in(data: bytes | bytearray, i: int) -> list[str] | None:
    """The cells of the line at ``data[i:]`` when it is plain (no quote, ended within
    ``data``): its text split at the commas, as the csv module reads it. Else None."""
    end = data.find(b"\n", i)
    cr = data.find(b"\r", i, end if end != -1 else len(data))
    end = cr if cr != -1 else end
    if end == -1:
        return None
    raw = bytes(data[i:end])
    if b'"' in raw or b"\0" in raw:
        return None
    return raw.decode("utf-8", "surrogateescape").split(",")


class RunsInFile:
    """The runs of a batch already in a results file, found without reading its rows.

    A run's identity starts with its timestamp cell, which is rare in a file: the
    file's bytes are searched for it (:class:`_Search`) before the lock is taken
    (:meth:`search`); under the lock (:meth:`locked`) only what was appended since is
    searched, or the whole file again when it changed other than by growth. Nothing
    is kept outside the results file. Every line a run is found at is parsed again
    under the lock before a row is refused or skipped for it.
    """

    def __init__(self, path: Path, keys: Sequence[RunKey]) -> None:
        self.path = path
        self.keys = list(dict.fromkeys(keys))
        self.fd = -1
        self._search: _Search | None = None
        self._held: dict[RunKey, Existing] = {}  # the runs found, each line parsed under the lock
        self.searched_whole_under_lock = False  # what the tests look at

    def search(self) -> None:
        """Before the lock: search the file as it is now (appenders only add to it)."""
        try:
            with open_regular(self.path) as f:
                search = _Search(f.fileno(), self.keys)
                search.run(os.fstat(f.fileno()).st_size)
                search.fd = -1
        except OSError:
            return  # a new file, or trouble the locked open names
        self._search = search

    def locked(self, fd: int) -> None:
        """Under the lock of ``fd``: search what was appended since (or the whole file)."""
        self.fd = fd
        try:
            search = self._search
            if search is None or not search.describes(fd):
                self._whole()
                return
            search.fd = fd
            search.run(os.fstat(fd).st_size)
            if not self._confirm(search):
                self._whole()  # edited in place: a line no longer holds its run
        except OSError as e:
            raise _read_error(self.path, e) from None

    def _whole(self) -> None:
        self.searched_whole_under_lock = True
        search = self._search = _Search(self.fd, self.keys)
        search.run(os.fstat(self.fd).st_size)
        if not self._confirm(search):
            raise AmscError(f"{self.path}: changed while it was read; retry")

    def _confirm(self, search: _Search) -> bool:
        """Parse each line the search found a run at, under the lock: whether every one
        still holds its run (kept for :meth:`find`)."""
        self._held = {}
        for key, (line, offset) in search.found.items():
            cells = self.row_at(offset)
            if cells is None or len(cells) < len(HEADER) or cells_key(cells) != key:
                return False
            self._held[key] = Existing(line, offset, cells)
        return True

    def conflict(self) -> AmscError | None:
        """The refusal of a file holding git's conflict markers, if it holds them."""
        marker = self._search.marker if self._search is not None else None
        if marker is None:
            return None
        return AmscError(f"{self.path}: holds git merge conflict markers (from line "
                         f"{marker[0]}); refusing to append until the merge is resolved: "
                         f"{CONFLICT_FIX}; then: ezpz-amsc check {self.path}")

    def find(self, key: RunKey) -> Existing | None:
        """Where the run ``key`` (one of the batch's) is in the file, if it is: as found
        and parsed under the lock (:meth:`locked`)."""
        return self._held.get(key)

    def row_at(self, offset: int) -> list[str] | None:
        """The cells of the line at byte ``offset`` (None if none is readable there)."""
        try:
            return record_at(self.fd, offset)
        except OSError as e:
            raise _read_error(self.path, e) from None


class AppendHooks(Protocol):
    """What else an append writes under the results file's lock (provenance records)."""

    def settle(self, runs: RunsInFile, rows: Sequence[Sequence[str]],
               found: Sequence[Existing | None]) -> set[int]:
        """Before anything is written: finish or take back what an interrupted append left.

        Returns the rows of this batch an interrupted append already wrote
        (with its records now complete): they are not written again.
        """

    def prepare(self, placed: Sequence[tuple[int, int]]) -> None:
        """Before the rows are written: ``(row index, byte offset it will land at)``."""

    def commit(self) -> None:
        """Once the rows are in the file (fsynced)."""

    def undo(self) -> None:
        """The rows could not be written: take back what :meth:`prepare` wrote."""


@dataclass
class Appended:
    """What an append did, row by row (indices into the rows given)."""

    written: list[int] = field(default_factory=list)
    skipped: list[tuple[int, Existing]] = field(default_factory=list)  # already in the file
    completed: list[int] = field(default_factory=list)  # written by an interrupted append


class _Changed(Exception):
    """The file changed under the append (not through the lock): start over."""


_MAX_RESTARTS = 10


def append_rows(path: str | os.PathLike[str], rows: Sequence[Sequence[str]], *,
                lock_timeout_sec: float = LOCK_TIMEOUT_SEC,
                allow_duplicate: bool = False, skip_existing: bool = False,
                hooks: AppendHooks | None = None) -> Appended:
    """Append ``rows`` to ``path`` under its lock, creating file and folders as needed.

    Never changes an existing file's mode, owner or group. On failure nothing
    is left that was not there before, except when the lock itself cannot be
    taken right after creating the file: then an empty file stays, which the
    next append treats as new. A row whose run is already in the file is
    refused, or with ``skip_existing`` skipped (and reported in the result).
    ``hooks`` write what goes with the rows (records), under the same lock.
    """
    p = checked_path(path)
    _refuse_target(p)
    runs = RunsInFile(p, [cells_key(r) for r in rows])
    runs.search()  # the whole file read, before the lock is taken
    made: list[Path] = []
    carried = False
    try:
        for _ in range(_MAX_RESTARTS):
            with locked(p, lock_timeout_sec, made) as held:
                try:
                    return _append_locked(held.fd, p, rows, allow_duplicate, skip_existing,
                                          hooks, carried, runs)
                except _Changed:
                    carried = True  # our rows may have been copied into the file now there
                except BaseException:
                    if held.created and os.fstat(held.fd).st_size == 0:
                        with contextlib.suppress(OSError):
                            os.unlink(p)  # ours, empty, and still locked: nobody writes to it
                    raise
        raise AmscError(f"{p}: replaced, truncated or removed {_MAX_RESTARTS} times during this "
                        "append by a program that does not take its lock; nothing appended")
    except BaseException:
        if made and not p.exists():
            remove_folders(made)  # the lock is released: a writer that needs them remakes them
        raise


def _append_locked(fd: int, p: Path, rows: Sequence[Sequence[str]], allow_duplicate: bool,
                   skip_existing: bool, hooks: AppendHooks | None, carried: bool,
                   runs: RunsInFile) -> Appended:
    state = _read_state(fd, p)
    found: list[Existing | None] = [None] * len(rows)
    if state.has_content:
        runs.locked(fd)
        conflict = runs.conflict()
        if conflict is not None:
            raise conflict
        found = [runs.find(cells_key(r)) for r in rows]
    else:
        runs.fd = fd
    done = hooks.settle(runs, rows, found) if hooks is not None else set()
    # Rows this append wrote into a file that was then replaced by a copy of it: in the
    # file now, and still without their records.
    copied = {i: e for i, e in enumerate(found) if carried and i not in done
              and e is not None and e.cells == list(rows[i])}
    out = Appended(completed=sorted(done | set(copied)))
    for i, row in enumerate(rows):
        if i in done or i in copied:
            continue
        e = found[i]
        if e is not None and not allow_duplicate:
            if not skip_existing:
                raise AmscError(f"the run ({', '.join(cells_key(row))}) is already at line "
                                f"{e.line} of {p}; not appending a double count (pass "
                                + opt("skip_existing") + " to skip it, "
                                + opt("allow_duplicate") + " to add it anyway)")
            out.skipped.append((i, e))
            continue
        out.written.append(i)
    todo = [rows[i] for i in out.written]
    dups = [] if allow_duplicate else find_duplicates(todo)
    if dups:
        raise AmscError(f"{dups[0]}; not appending a double count")
    if todo or (copied and hooks is not None):
        _write_rows(fd, p, todo, out.written, state, hooks,
                    [(i, e.offset) for i, e in copied.items()])
    return out


def _write_rows(fd: int, p: Path, todo: Sequence[Sequence[str]], which: list[int],
                state: _FileState, hooks: AppendHooks | None,
                present: list[tuple[int, int]]) -> None:
    """Write the rows at the end, with what goes with them; check they are in the file.

    ``present``: rows already in the file at these offsets that still need what
    goes with them.
    """
    lead = state.newline if state.has_content and not state.ends_with_newline else ""
    header = render_csv([], header=not state.has_content, newline=state.newline)
    lines = [render_csv([row], header=False, newline=state.newline).encode("utf-8")
             for row in todo]
    offset = state.size + len(lead.encode()) + len(header.encode())
    placed = list(present)
    for i, line in zip(which, lines, strict=True):
        placed.append((i, offset))
        offset += len(line)
    if os.fstat(fd).st_size != state.size:
        raise _Changed  # written to since the header was read, by a program that ignores the lock
    if hooks is not None:
        hooks.prepare(placed)
    crash_point("rows")
    try:
        if lines:
            _write_all(fd, p, (lead + header).encode("utf-8") + b"".join(lines), state.size)
    except BaseException:
        if hooks is not None:
            hooks.undo()  # also when the file changed: the next try prepares afresh
        raise
    crash_point("rows-written")
    if hooks is not None:
        hooks.commit()


def _write_all(fd: int, path: Path, data: bytes, size: int) -> None:
    """One append of complete lines, fsynced, then checked to be in the file at ``path``.

    On failure the file is cut back to its old size. If the bytes did not land
    where the file ended (``size``: it was truncated meanwhile), are no longer
    all there (truncated since), or the path no longer names this file
    (replaced or removed), they are taken back and :class:`_Changed` is raised:
    the caller starts over on the file now at the path.
    """
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except OSError as e:
        _cut_back(fd, path, start, f"cannot write results file: {reason(e)}")
    crash_point("rows-synced")
    end = os.lseek(fd, 0, os.SEEK_CUR)  # O_APPEND: the end of what this write put there
    landed = end - len(data)
    now = os.fstat(fd).st_size
    if landed < size or now < end or not _still_at(fd, path):
        _cut_back(fd, path, min(landed, now), None)  # never longer than it is now
        raise _Changed


def _cut_back(fd: int, path: Path, size: int, why: str | None) -> None:
    """Cut the file back to ``size``; raise :class:`AmscError` saying ``why`` (if any)."""
    try:
        os.ftruncate(fd, size)
    except OSError as e:  # an append-only (chattr +a) file, or the disk gone
        raise AmscError(f"{path}: {why or 'changed during the append'}; cutting the file back "
                        f"failed too ({reason(e)}): it may end in a partial line after "
                        f"byte {size}; check it with: ezpz-amsc check {path}") from None
    if why is not None:
        raise AmscError(f"{path}: {why}; file left as it was")
