"""Stage 6: write rows — to stdout, or appended to a results CSV (SPEC §2.5)."""

from __future__ import annotations

import contextlib
import csv
import io
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TextIO

from .errors import AmscError
from .row import HEADER


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


def _existing_state(path: Path) -> tuple[bool, str, bool]:
    """(has content, line ending, ends with newline) after checking the header.

    A header that differs only by a UTF-8 BOM or CRLF endings is the same
    header; any other difference (names, order, count) is refused.
    """
    try:
        with open(path, "rb") as f:
            head = f.readline(1 << 20)
            f.seek(0, os.SEEK_END)
            size = f.tell()
            last = b""
            if size:
                f.seek(size - 1)
                last = f.read(1)
    except IsADirectoryError:
        raise AmscError(f"{path}: is a directory; --append needs a CSV file path") from None
    except OSError as e:
        raise AmscError(f"{path}: cannot read results file: {e.strerror or e}") from None
    if not head.strip(b"\xef\xbb\xbf\r\n \t"):
        if size > len(head):
            raise AmscError(f"{path}: first line is empty; not a results file, refusing to append")
        return False, "\n", True
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
    return True, newline, last in (b"\n", b"\r")


def append_rows(path: str | os.PathLike[str], rows: Sequence[Sequence[str]]) -> None:
    """Append ``rows`` to ``path``, creating it (and its folder) with the header."""
    p = Path(path)
    new_dirs: list[Path] = []  # folders this call creates, removed again if the write fails
    if p.exists() or p.is_symlink():
        if p.exists() and not p.is_dir() and not p.is_file():
            # A FIFO would block the header read forever; a device is no results file.
            raise AmscError(f"{p}: not a regular file; --append needs a CSV file path")
        has_content, newline, ends_nl = _existing_state(p)
    else:
        has_content, newline, ends_nl = False, "\n", True
        new_dirs = [d for d in p.parents if not d.exists()]
        try:
            p.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise AmscError(f"{p.parent}: cannot create folder: {e.strerror or e}") from None
    data = render_csv(rows, header=not has_content, newline=newline)
    if has_content and not ends_nl:
        data = newline + data  # a hand-edited file without a final newline
    flags = os.O_WRONLY | os.O_APPEND | (os.O_CREAT | os.O_EXCL if not has_content and
                                         not p.exists() else 0)
    try:
        fd = os.open(p, flags, 0o644)
    except IsADirectoryError:
        raise AmscError(f"{p}: is a directory; --append needs a CSV file path") from None
    except OSError as e:
        _remove_dirs(new_dirs)
        raise AmscError(f"{p}: cannot open results file: {e.strerror or e}") from None
    try:
        _write_all(fd, data.encode("utf-8"))
    except AmscError:
        if flags & os.O_EXCL:  # the file is ours: leave no empty results file behind
            with contextlib.suppress(OSError):
                os.unlink(p)
            _remove_dirs(new_dirs)
        raise
    finally:
        os.close(fd)


def _remove_dirs(created: list[Path]) -> None:
    """Remove folders made for a results file that was never written (deepest first)."""
    for d in created:
        with contextlib.suppress(OSError):
            d.rmdir()


def _write_all(fd: int, data: bytes) -> None:
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
        raise AmscError(f"cannot write results file: {e.strerror or e}; file left as it was") \
            from None
