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
from ezpz_amsc.fs.access import describe, group_has_others, group_name
from ezpz_amsc.fs.read import open_regular
from ezpz_amsc.results.fields import bound_problems
from ezpz_amsc.results.rows import read_records
from ezpz_amsc.results.schema import (
    HEADER,
    MFU_ZERO_MEANS,
    REQUIRED,
    RunIndex,
    dashboard_problems,
    header_difference,
    run_key,
    unsafe_cells,
    zero_mfu,
)

# Bytes that are not UTF-8, as the surrogateescape decoder keeps them: such a line is
# reported by number and the reading goes on (a strict decoder would stop the whole file).
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
HEADER_PROBLEM = "header differs from this tool's"  # read by name: a problem, not a refusal
# Still read by the report (as an unknown mfu), but a problem: the dashboard would publish 0.
ZERO_MFU_PROBLEM = (f"mfu {{!r}} is zero, which is not a measurement ({MFU_ZERO_MEANS}, e.g. "
                    "on CPU); empty the cell (not measured)")


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
        raise AmscError(
            f"{p}: is a directory; check needs a results CSV file{_csv_in(p)}") from None
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
                problems.append(f"{p}:1: {HEADER_PROBLEM} ({header_difference(header)})")
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
                if zero_mfu(row):  # readable, but it would publish a made-up number
                    problems.append(f"{p}:{line}: {ZERO_MFU_PROBLEM.format(row['mfu'])}")
                if on_row is not None and not found:
                    on_row(line, row)
        except OSError as e:
            raise AmscError(f"{p}: cannot read: {e.strerror or e}") from None
    return rows, problems


def _csv_in(folder: Path) -> str:
    """``, e.g. FOLDER/runs.csv`` when the folder holds a CSV file (the first by name)."""
    try:
        names = sorted(e.name for e in os.scandir(folder)
                       if e.name.endswith(".csv") and e.is_file())
    except OSError:
        return ""
    return f", e.g. {folder / names[0]}" if names else ""


def sharing_notes(path: str | os.PathLike[str]) -> list[str]:
    """What keeps other members of the group from appending to a results file: one note.

    Said only where it can matter: the file's (or its folder's) group has
    members besides its owner, or the folder is group-writable or setgid (set
    up for sharing). A file one person keeps in a personal group and folder is
    fine as it is, whatever the umask made of it. Judged by the mode bits of
    the file and of its folder, each for its own group: a file needs group
    write, its folder group search (to reach the file), group write (to create
    results files there) and setgid, or a file a teammate creates there gets the
    teammate's own primary group, which the others may not be in.
    """
    p = Path(path)
    folder = p.absolute().parent
    try:
        st, folder_st = os.stat(p), os.stat(folder)
    except OSError:
        return []
    shared_folder = folder_st.st_mode & (stat.S_IWGRP | stat.S_ISGID)
    if not (shared_folder or group_has_others(st.st_gid, st.st_uid)
            or group_has_others(folder_st.st_gid, folder_st.st_uid)):
        return []
    why, fixes = [], []
    if not st.st_mode & stat.S_IWGRP:
        why.append(f"other members of group {group_name(st.st_gid)} cannot append to it "
                   f"({describe(st)})")
        fixes.append(f"chmod g+w {p}")
    group, bits = group_name(folder_st.st_gid), ""
    if not folder_st.st_mode & stat.S_IXGRP:
        why.append(f"other members of group {group} cannot reach the files in {folder} "
                   f"({describe(folder_st)})")
        bits = "rwx"
    elif not folder_st.st_mode & stat.S_IWGRP:
        why.append(f"other members of group {group} cannot create results files in {folder} "
                   f"({describe(folder_st)})")
        bits = "w"
    if not folder_st.st_mode & stat.S_ISGID:
        if not bits:
            why.append(f"{folder} is not setgid ({describe(folder_st)}): a results file a "
                       f"teammate creates in it gets the teammate's own group, not {group}")
        bits += "s"
    if not why:
        return []
    fixes += [f"chmod g+{bits} {folder}"] if bits else []
    return [f"{p}: {'; '.join(why)}; to share it: {' && '.join(fixes)}"]
