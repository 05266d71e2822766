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
4. Read the header and the runs already there through the same descriptor,
   append, fsync.
5. On failure cut the file back; a file this writer created and left empty
   is removed, while the lock is still held. That is the only removal, so a
   file is never removed under a writer that holds its lock.

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
import io
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO

from ezpz_amsc.errors import AmscError
from ezpz_amsc.fs.access import permission_error
from ezpz_amsc.fs.create import FILE_MODE, make_folders, not_a_folder, remove_folders, write_all
from ezpz_amsc.options import PublishOptions, default_of
from ezpz_amsc.render.terminal import wrap_at_commas
from ezpz_amsc.results.schema import HEADER, RunIndex, cells_key, header_difference, render_csv

DEFAULT_LOCK_TIMEOUT_SEC: float = default_of(PublishOptions, "lock_timeout")
# A header is a few hundred bytes: a longer first line is no results file, and
# reading it whole could cost a line's worth of memory.
_HEAD_MAX_BYTES = 1 << 20
_HEAD_SHOWN = 1000  # characters of a foreign header an error shows (a real one is ~200)
_BOM = b"\xef\xbb\xbf"


def write_stdout(rows: Iterable[Sequence[str]], header: bool, out: TextIO) -> None:
    out.write(render_csv(rows, header))
    out.flush()


@dataclass
class _FileState:
    has_content: bool
    newline: str  # the file's own line ending, kept when appending
    ends_with_newline: bool


def _reader(fd: int) -> BinaryIO:
    """The open file from its start, read through ``fd`` itself.

    Closing the reader leaves ``fd`` open: closing any descriptor of the file
    would drop the record lock held through ``fd``.
    """
    f = open(fd, "rb", closefd=False)  # noqa: SIM115 (the caller closes it)
    f.seek(0)
    return f


def _read_state(fd: int, path: Path) -> _FileState:
    """Check the header of the open results file and learn its line-ending style.

    A header that differs only by a UTF-8 BOM or CRLF endings is the same
    header; any other difference (names, order, count) is refused.
    """
    try:
        with _reader(fd) as f:
            head = f.readline(_HEAD_MAX_BYTES)
            size = f.seek(0, os.SEEK_END)
            last = b""
            if size:
                f.seek(size - 1)
                last = f.read(1)
    except OSError as e:
        raise AmscError(f"{path}: cannot read results file: {e.strerror or e}") from None
    if head in (b"", _BOM):  # empty, or only a byte-order mark: a new file
        return _FileState(False, "\n", True)
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
    try:
        text = head.decode("utf-8-sig").rstrip("\r\n")
        found = next(csv.reader([text]), [])
    except UnicodeDecodeError:
        raise AmscError(f"{path}: header is not UTF-8; refusing to append") from None
    except csv.Error as e:
        raise AmscError(f"{path}: header is not CSV ({e}); refusing to append") from None
    if tuple(found) != HEADER:
        # Both headers whole, one under the other, so that they can be compared.
        shown = (text if len(text) <= _HEAD_SHOWN else
                 f"{text[:_HEAD_SHOWN]}... ({len(text)} characters)")
        lines = [*wrap_at_commas("  the file's:  ", shown),
                 *wrap_at_commas("  this tool's: ", ",".join(HEADER))]
        raise AmscError(
            f"{path}: existing header differs from this tool's ({header_difference(found)}); "
            "refusing to append — write to a new file\n" + "\n".join(lines))
    return _FileState(True, newline, last in (b"\n", b"\r"))


def check_append_target(path: str | os.PathLike[str]) -> None:
    """Refuse a bad ``--append`` target before any export work is done.

    Only a fast pre-check (header, permissions): the authoritative checks run
    again under the lock. Opening the file read-write changes nothing in it.
    """
    p = Path(path)
    _refuse_non_regular(p)
    try:
        fd = os.open(p, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        check_can_create(p)
        return
    except OSError as e:
        raise _open_error(p, e, creating=False) from None
    try:
        _read_state(fd, p)
    finally:
        os.close(fd)


_EFFECTIVE_IDS = os.access in os.supports_effective_ids  # judge as open() will: euid, egid


def check_can_create(p: Path) -> None:
    """The nearest existing folder above a new file ``p`` must let us create in it."""
    below, folder = p, p.parent
    while not os.path.isdir(folder):
        if os.path.lexists(folder):
            raise not_a_folder(p)
        below, folder = folder, folder.parent
    if not os.access(folder, os.W_OK | os.X_OK, effective_ids=_EFFECTIVE_IDS):
        raise permission_error(folder, "wx", f"cannot create {below.name} there")


def _refuse_non_regular(p: Path) -> None:
    if p.is_dir():
        raise AmscError(f"{p}: is a directory; --append needs a CSV file path")
    if p.exists() and not p.is_file():
        raise _not_regular(p)


def _not_regular(p: Path) -> AmscError:
    # A FIFO would block the header read forever; a device is no results file.
    return AmscError(f"{p}: not a regular file; --append needs a CSV file path")


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
                                    "exist; --append needs a file path") from None
                continue
            except OSError as e:
                raise _open_error(p, e, creating=False) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise _not_regular(p)
        return fd, created
    raise AmscError(f"{p}: appeared and disappeared 100 times while opening it; "
                    "is another program removing it?")


def _open_error(p: Path, e: OSError, creating: bool) -> AmscError:
    if isinstance(e, IsADirectoryError):
        return AmscError(f"{p}: is a directory; --append needs a CSV file path")
    if isinstance(e, NotADirectoryError):
        return not_a_folder(p)
    if isinstance(e, PermissionError):
        if creating:
            return permission_error(p.parent, "wx", f"cannot create {p.name} there")
        return permission_error(p, "rw")
    what = "create" if creating else "open"
    return AmscError(f"{p}: cannot {what} results file: {e.strerror or e}")


def _wait_for_lock(fd: int, p: Path, deadline: float, timeout_sec: float) -> None:
    delay = 0.005
    while True:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise AmscError(f"{p}: cannot lock: {e.strerror or e} (on Lustre, "
                                "mount with -o flock)") from None
        if time.monotonic() >= deadline:
            raise AmscError(f"{p}: still locked by another writer after "
                            f"{timeout_sec:g} s; retry, or raise --lock-timeout")
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


def find_duplicates(existing: TextIO | None, rows: Sequence[Sequence[str]],
                    path: Path | None = None) -> list[str]:
    """Describe every row whose run key is earlier in ``rows`` or already in ``existing``.

    ``existing`` is the results file's text from its header on, or ``None``
    when there is no existing content to compare against; ``path`` names it.
    """
    wanted = RunIndex()
    problems: list[str] = []
    for i, r in enumerate(rows, 1):
        key = cells_key(r)
        earlier = wanted.first(key, i)
        if earlier is not None:
            problems.append(f"rows {earlier} and {i} of this export are the same run "
                            f"({', '.join(key)})")
    if existing is None:
        return problems
    reader = csv.reader(existing)
    next(reader, None)
    for cells in reader:
        if len(cells) < len(HEADER):
            continue
        key = cells_key(cells)
        if key in wanted:
            problems.append(f"the run ({', '.join(key)}) is already at line "
                            f"{reader.line_num} of {path}")
    return problems


# Run under the lock once the rows passed every check, just before they are written
# (provenance records go out here); returns how to take its work back should the write fail.
BeforeWrite = Callable[[], Callable[[], None]]


def append_rows(path: str | os.PathLike[str], rows: Sequence[Sequence[str]], *,
                lock_timeout_sec: float = DEFAULT_LOCK_TIMEOUT_SEC,
                allow_duplicate: bool = False, before_write: BeforeWrite | None = None) -> None:
    """Append ``rows`` to ``path`` under its lock, creating file and folders as needed.

    Never changes an existing file's mode, owner or group. On failure nothing
    is left that was not there before, except when the lock itself cannot be
    taken right after creating the file: then an empty file stays, which the
    next append treats as new. ``before_write`` runs under the lock after the
    header and duplicate checks; if it raises, no row is written, and if the
    write fails, what it did is undone.
    """
    p = Path(path)
    _refuse_non_regular(p)
    made: list[Path] = []
    try:
        with locked(p, lock_timeout_sec, made) as held:
            try:
                _append_locked(held.fd, p, rows, allow_duplicate, before_write)
            except BaseException:
                if held.created and os.fstat(held.fd).st_size == 0:
                    with contextlib.suppress(OSError):
                        os.unlink(p)  # ours, empty, and still locked: nobody writes to it
                raise
    except BaseException:
        if made and not p.exists():
            remove_folders(made)
        raise


def _append_locked(fd: int, p: Path, rows: Sequence[Sequence[str]],
                   allow_duplicate: bool, before_write: BeforeWrite | None = None) -> None:
    state = _read_state(fd, p)
    if not allow_duplicate:
        dups = _duplicates_in(fd, p, rows) if state.has_content else find_duplicates(None, rows)
        if dups:
            raise AmscError(f"{dups[0]}; not appending a double count "
                            "(pass --allow-duplicate to add it anyway)")
    data = render_csv(rows, header=not state.has_content, newline=state.newline)
    if state.has_content and not state.ends_with_newline:
        data = state.newline + data  # a hand-edited file without a final newline
    undo = before_write() if before_write is not None else None
    try:
        _write_all(fd, p, data.encode("utf-8"))
    except BaseException:
        if undo is not None:
            undo()
        raise


def _duplicates_in(fd: int, p: Path, rows: Sequence[Sequence[str]]) -> list[str]:
    try:
        with io.TextIOWrapper(_reader(fd), encoding="utf-8-sig", errors="replace",
                              newline="") as text:
            return find_duplicates(text, rows, p)
    except OSError as e:
        raise AmscError(f"{p}: cannot read results file: {e.strerror or e}") from None


def _write_all(fd: int, path: Path, data: bytes) -> None:
    """One append of complete lines; on failure the file is cut back to its old size."""
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        write_all(fd, data)
        os.fsync(fd)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise AmscError(f"{path}: cannot write results file: {e.strerror or e}; "
                        "file left as it was") from None
