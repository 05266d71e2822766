"""Validate a results file: read it the way the dashboard does, line by line, and say
what would keep a teammate from appending to it (the ``check`` command)."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from ezpz_amsc.errors import AmscError
from ezpz_amsc.fs.access import describe, group_name
from ezpz_amsc.fs.read import open_regular
from ezpz_amsc.results.fields import bound_problems
from ezpz_amsc.results.rows import read_records
from ezpz_amsc.results.schema import (
    HEADER,
    REQUIRED,
    RunIndex,
    dashboard_problems,
    run_key,
    unsafe_cells,
)

# Bytes that are not UTF-8, as the surrogateescape decoder keeps them: such a line is
# reported by number and the reading goes on (a strict decoder would stop the whole file).
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def check_results_file(
    path: str | os.PathLike[str],
    on_row: Callable[[int, dict[str, str]], None] | None = None,
    on_cells: Callable[[int, dict[str, str]], None] | None = None,
) -> tuple[int, list[str]]:
    """Return (data rows read, problems as ``PATH:LINE: what``); empty list = clean.

    ``on_row(line, row)`` is called for each row without a problem, so a reader
    (the report) sees exactly the rows ``--check`` passes; ``on_cells`` for
    every row that has a cell for each column, problems or not. Only a regular
    file is read, a line at a time (:mod:`ezpz_amsc.results.rows`): a FIFO or
    a device is refused, and a line past the cap is a problem, not a hang.
    """
    p = Path(path)
    try:
        f = open_regular(p)
    except FileNotFoundError:
        raise AmscError(f"{p}: no such file") from None
    except IsADirectoryError:
        raise AmscError(f"{p}: is a directory; --check needs a results CSV") from None
    except PermissionError:
        if not os.path.lexists(p):  # below a folder you may not search: the CLI's edge says so
            raise
        raise AmscError(f"{p}: cannot read: {os.strerror(errno.EACCES)}") from None
    except OSError as e:
        raise AmscError(f"{p}: cannot read: {e.strerror or e}") from None
    problems: list[str] = []
    rows = 0
    with f:
        try:
            records = read_records(f)
            first = next(records, None)
            if first is None:
                raise AmscError(f"{p}: empty file, no header")
            header = first.cells
            if header is None:
                raise AmscError(f"{p}:1: the header cannot be read: {first.problem}")
            missing = [c for c in REQUIRED if c not in header]
            if missing:
                what = "column" if len(missing) == 1 else "columns"
                raise AmscError(f"{p}: header lacks required {what} {', '.join(missing)}")
            if tuple(header) != HEADER:
                problems.append(f"{p}:1: header differs from this tool's (order or columns)")
            index = {c: header.index(c) for c in HEADER if c in header}
            seen = RunIndex()
            for rec in records:
                line, cells = rec.last_line, rec.cells
                if cells is None:
                    rows += 1
                    problems.append(f"{p}:{line}: {rec.problem}")
                    continue
                if not any(c.strip() for c in cells):
                    continue
                rows += 1
                if _NOT_UTF8.search("".join(cells)):
                    problems.append(f"{p}:{line}: not UTF-8 text")
                    continue
                if len(cells) != len(header):
                    problems.append(f"{p}:{line}: {len(cells)} cells, header has {len(header)}")
                    continue
                row = {c: cells[i] for c, i in index.items()}
                if on_cells is not None:
                    on_cells(line, row)
                found = [f"{p}:{line}: {what}"
                         for what in dashboard_problems(row) + bound_problems(row)]
                found += [f"{p}:{line}: {what}" for what in unsafe_cells(row)]
                first_seen = seen.first(run_key(row), line)
                if first_seen is not None:
                    found.append(f"{p}:{line}: same run as line {first_seen}")
                problems.extend(found)
                if on_row is not None and not found:
                    on_row(line, row)
        except OSError as e:
            raise AmscError(f"{p}: cannot read: {e.strerror or e}") from None
    return rows, problems


def sharing_notes(path: str | os.PathLike[str]) -> list[str]:
    """What keeps other members of the group from appending to a results file.

    Notes, not problems: a results file kept by one person is fine as it is.
    Judged by the mode bits of the file and of its folder, each for its own
    group; a file needs group write, its folder group search (to reach the
    file) and group write (to create results files there). A group-writable
    folder that is not setgid gives a file a teammate creates there the
    teammate's own primary group, which the others may not be in.
    """
    p = Path(path)
    folder = p.absolute().parent
    try:
        st, folder_st = os.stat(p), os.stat(folder)
    except OSError:
        return []
    notes = []
    if not st.st_mode & stat.S_IWGRP:
        notes.append(f"{p}: other members of group {group_name(st.st_gid)} cannot append to it "
                     f"({describe(st)}); to share it: chmod g+w {p}")
    group = group_name(folder_st.st_gid)
    if not folder_st.st_mode & stat.S_IXGRP:
        notes.append(f"{folder}: other members of group {group} cannot reach the files in it "
                     f"({describe(folder_st)}); to share it: chmod g+rwx {folder}")
    elif not folder_st.st_mode & stat.S_IWGRP:
        notes.append(f"{folder}: other members of group {group} cannot create results files "
                     f"in it ({describe(folder_st)}); to share it: chmod g+w {folder}")
    elif not folder_st.st_mode & stat.S_ISGID:
        notes.append(f"{folder}: not setgid ({describe(folder_st)}): a results file a teammate "
                     f"creates in it gets the teammate's own group, not {group}; "
                     f"to fix: chmod g+s {folder}")
    return notes
