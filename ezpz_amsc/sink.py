"""Stage 6: write rows — to stdout, or appended to a shared results CSV (SPEC §2.5).

A sweep finishes dozens of jobs within seconds, all appending to one file on a
parallel filesystem. Header check, duplicate check and write therefore happen
under one exclusive ``fcntl`` lock on ``<file>.lock``, and each batch of rows
goes out as a single ``write`` of complete lines, flushed and fsynced. A failed
write cuts the file back to its old size, so a results file is never left
half-written.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import fcntl
import io
import os
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .errors import AmscError
from .row import HEADER

# The identity of a run on the dashboard: a second row with these is a double count.
KEY_COLUMNS = ("timestamp", "system", "config", "nodes", "gpus")
_KEY_IDX = tuple(HEADER.index(c) for c in KEY_COLUMNS)
DEFAULT_LOCK_TIMEOUT_SEC = 60.0


def render_csv(rows: Iterable[Sequence[str]], header: bool = True,
               newline: str = "\n") -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=newline)
    if header:
        w.writerow(HEADER)
    w.writerows(rows)
    return buf.getvalue()


def write_stdout(rows: Iterable[Sequence[str]], header: bool, out: TextIO) -> None:
    out.write(render_csv(rows, header))
    out.flush()


@dataclass
class _FileState:
    has_content: bool
    newline: str  # the file's own line ending, kept when appending
    ends_with_newline: bool


def _read_state(path: Path) -> _FileState:
    """Check the header of an existing file and learn its line-ending style.

    A header that differs only by a UTF-8 BOM or CRLF endings is the same
    header; any other difference (names, order, count) is refused.
    """
    try:
        with open(path, "rb") as f:
            head = f.readline(1 << 20)
            size = f.seek(0, os.SEEK_END)
            last = b""
            if size:
                f.seek(size - 1)
                last = f.read(1)
    except FileNotFoundError:
        return _FileState(False, "\n", True)
    except NotADirectoryError:
        raise _parent_not_a_folder(path) from None
    except IsADirectoryError:
        raise AmscError(f"{path}: is a directory; --append needs a CSV file path") from None
    except OSError as e:
        raise AmscError(f"{path}: cannot read results file: {e.strerror or e}") from None
    if not head.strip(b"\xef\xbb\xbf\r\n \t"):
        if size > len(head):
            raise AmscError(f"{path}: first line is empty; not a results file, refusing to append")
        return _FileState(False, "\n", True)
    # Old Mac / some spreadsheet exports end lines with a bare CR: readline sees
    # no line end there, so cut the header at the first CR or LF ourselves.
    cr, lf = head.find(b"\r"), head.find(b"\n")
    if cr != -1 and (lf == -1 or cr < lf):
        newline = "\r\n" if head[cr:cr + 2] == b"\r\n" else "\r"
        head = head[:cr]
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
        raise AmscError(
            f"{path}: existing header differs from this tool's "
            f"({','.join(found)[:120]!r}); refusing to append — write to a new file"
        )
    return _FileState(True, newline, last in (b"\n", b"\r"))


def _parent_not_a_folder(path: Path) -> AmscError:
    parent = next((q for q in reversed(path.parents) if q.exists() and not q.is_dir()),
                  path.parent)
    return AmscError(f"{parent}: exists and is not a folder; cannot create {path} there")


def check_append_target(path: str | os.PathLike[str]) -> None:
    """Refuse a bad ``--append`` target before any export work is done.

    Only a fast pre-check: the authoritative check runs again under the lock.
    """
    p = Path(path)
    _refuse_non_regular(p)
    _read_state(p)


def _refuse_non_regular(p: Path) -> None:
    if p.is_dir():
        raise AmscError(f"{p}: is a directory; --append needs a CSV file path")
    if p.exists() and not p.is_file():
        # A FIFO would block the header read forever; a device is no results file.
        raise AmscError(f"{p}: not a regular file; --append needs a CSV file path")


@contextlib.contextmanager
def locked(lock_path: Path, timeout_sec: float) -> Iterator[None]:
    """Hold an exclusive ``fcntl`` lock on ``lock_path`` (created if missing).

    POSIX record locks die with their process, so a killed appender never
    leaves a stale lock behind. The lock file itself is never removed:
    unlinking a lock file lets two processes lock two different inodes.
    """
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise AmscError(f"{lock_path}: cannot create lock file: {e.strerror or e}") from None
    try:
        deadline = time.monotonic() + timeout_sec
        delay = 0.005
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EACCES, errno.EAGAIN):
                    raise AmscError(f"{lock_path}: cannot lock: {e.strerror or e} (on Lustre, "
                                    "mount with -o flock)") from None
            if time.monotonic() >= deadline:
                raise AmscError(f"{lock_path}: still locked by another writer after "
                                f"{timeout_sec:g} s; retry, or raise --lock-timeout")
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
        yield
    finally:
        os.close(fd)  # releases the lock


def find_duplicates(path: Path | None, rows: Sequence[Sequence[str]]) -> list[str]:
    """Describe every row whose run key is earlier in ``rows`` or already in ``path``.

    ``path`` is ``None`` when there is no existing content to compare against.
    """
    wanted: dict[tuple[str, ...], int] = {}
    problems: list[str] = []
    for i, r in enumerate(rows):
        key = tuple(r[j] for j in _KEY_IDX)
        if key in wanted:
            problems.append(f"rows {wanted[key] + 1} and {i + 1} of this export are the same run "
                            f"({', '.join(key)})")
        wanted.setdefault(key, i)
    if path is None:
        return problems
    try:
        f = open(path, newline="", encoding="utf-8-sig", errors="replace")  # noqa: SIM115
    except FileNotFoundError:
        return problems
    except OSError as e:
        raise AmscError(f"{path}: cannot read results file: {e.strerror or e}") from None
    with f:
        reader = csv.reader(f)
        next(reader, None)
        for cells in reader:
            if len(cells) < len(HEADER):
                continue
            key = tuple(cells[j] for j in _KEY_IDX)
            if key in wanted:
                problems.append(f"the run ({', '.join(key)}) is already at line "
                                f"{reader.line_num} of {path}")
    return problems


def lock_path_for(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def append_rows(path: str | os.PathLike[str], rows: Sequence[Sequence[str]], *,
                lock_timeout_sec: float = DEFAULT_LOCK_TIMEOUT_SEC,
                allow_duplicate: bool = False) -> None:
    """Append ``rows`` to ``path`` under its lock, creating file and folder as needed."""
    p = Path(path)
    _refuse_non_regular(p)
    new_dirs = [d for d in p.parents if not d.exists()]  # removed again if nothing is written
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise _parent_not_a_folder(p) from None
    except OSError as e:
        raise AmscError(f"{p.parent}: cannot create folder: {e.strerror or e}") from None
    try:
        _append_locked(p, rows, lock_timeout_sec, allow_duplicate)
    except AmscError:
        if new_dirs and not p.exists():
            # Nothing was written: take back the folders made for it. The lock file
            # stays (and so does its folder): another writer may be waiting on it.
            for d in new_dirs:  # deepest first
                with contextlib.suppress(OSError):
                    d.rmdir()
        raise


def _append_locked(p: Path, rows: Sequence[Sequence[str]], lock_timeout_sec: float,
                   allow_duplicate: bool) -> None:
    with locked(lock_path_for(p), lock_timeout_sec):
        state = _read_state(p)
        if not allow_duplicate:
            dups = find_duplicates(p if state.has_content else None, rows)
            if dups:
                raise AmscError(f"{dups[0]}; not appending a double count "
                                "(pass --allow-duplicate to add it anyway)")
        data = render_csv(rows, header=not state.has_content, newline=state.newline)
        if state.has_content and not state.ends_with_newline:
            data = state.newline + data  # a hand-edited file without a final newline
        # A file this call creates is ours to remove again if the write fails.
        creating = not state.has_content and not p.exists()
        flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT | os.O_EXCL if creating else 0)
        try:
            fd = os.open(p, flags, 0o644)
        except IsADirectoryError:
            raise AmscError(f"{p}: is a directory; --append needs a CSV file path") from None
        except OSError as e:
            raise AmscError(f"{p}: cannot open results file: {e.strerror or e}") from None
        try:
            _write_all(fd, p, data.encode("utf-8"))
        except AmscError:
            if creating:
                with contextlib.suppress(OSError):
                    os.unlink(p)
            raise
        finally:
            os.close(fd)


def _write_all(fd: int, path: Path, data: bytes) -> None:
    """One append of complete lines; on failure the file is cut back to its old size."""
    start = os.lseek(fd, 0, os.SEEK_END)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise AmscError(f"{path}: cannot write results file: {e.strerror or e}; "
                        "file left as it was") from None
