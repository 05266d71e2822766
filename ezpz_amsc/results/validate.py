"""Validate a results file: read it the way the dashboard does, line by line, and say
what would keep a teammate from appending to it (the ``check`` command)."""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

from ezpz_amsc.errors import AmscError, reason
from ezpz_amsc.fs.access import describe, group_has_others, group_name
from ezpz_amsc.fs.read import open_regular
from ezpz_amsc.results.fields import bound_problems
from ezpz_amsc.results.rows import Plain, Record, read_blocks, read_records
from ezpz_amsc.results.schema import (
    CONFLICT_CLOSE,
    CONFLICT_FIX,
    CONFLICT_MIDDLE,
    CONFLICT_OPEN,
    HEADER,
    KEY_COLUMNS,
    MAX_CELL_CHARS,
    MAX_PROBLEMS,
    MFU_MAX_PCT,
    MFU_ZERO_MEANS,
    REQUIRED,
    conflict_marker,
    dashboard_problems,
    foreign_format,
    header_difference,
    unsafe_cells,
    zero_mfu,
)
from ezpz_amsc.results.seen import SeenRuns

# Bytes that are not UTF-8, as the surrogateescape decoder keeps them: such a line is
# reported by number and the reading goes on (a strict decoder would stop the whole file).
_NOT_UTF8 = re.compile("[\udc80-\udcff]")
HEADER_PROBLEM = "header differs from this tool's"  # a problem, not a refusal
# Still read by the report (as an unknown mfu), but a problem: the dashboard would publish 0.
ZERO_MFU_PROBLEM = (f"mfu {{!r}} is zero, which is not a measurement ({MFU_ZERO_MEANS}, e.g. "
                    "on CPU); empty the cell (not measured)")


_T = TypeVar("_T")
# The rows of a run of clean lines: (their texts, the first one's line, the indexes dropped).
OnClean = Callable[[list[str], int, list[int]], None]


class Capped(list[_T]):
    """A list that keeps its first :data:`~ezpz_amsc.results.schema.MAX_PROBLEMS` items
    and counts the rest (``more``): a hostile file's ten million bad lines cost a
    thousand messages and a number, not gigabytes."""

    def __init__(self, limit: int = MAX_PROBLEMS) -> None:
        super().__init__()
        self.limit, self.more = limit, 0

    def append(self, item: _T) -> None:
        if len(self) < self.limit:
            super().append(item)
        else:
            self.more += 1

    def extend(self, items: Iterable[_T]) -> None:
        for item in items:
            self.append(item)


def more_problems(path: str | os.PathLike[str], more: int) -> list[str]:
    """The line that stands for the problems not kept (none when all were)."""
    if not more:
        return []
    return [f"{os.fspath(path)}: {more:,} more problem{'s' if more != 1 else ''} not listed "
            f"(at most {MAX_PROBLEMS:,} a file are)"]


@dataclass
class Checked:
    """What reading a results file found: its data rows, and its problems as
    ``PATH:LINE: what`` (none: clean), at most :data:`MAX_PROBLEMS` of them."""

    rows: int
    problems: list[str]
    # The header is not this tool's (the first problem, which is in no row).
    header_differs: bool
    more: int  # problems found beyond those listed
    conflicts: list[str]  # git's conflicts: "3-9"


def check_results_file(
    path: str | os.PathLike[str],
    on_row: Callable[[int, list[str], int], None] | None = None,
    on_cells: Callable[[int, list[str], int], None] | None = None,
    on_clean: OnClean | None = None,
) -> Checked:
    """Read a results file the way the dashboard does: :class:`Checked`.

    ``on_row(line, cells, offset)`` is called for each row without a problem, so a
    reader (the report) sees exactly the rows ``--check`` passes; ``on_cells`` for
    every row that has a cell for each column, problems or not. ``cells`` are in
    :data:`HEADER`'s order, empty for a column the file lacks; ``offset`` is the byte
    offset of the row's record. ``on_clean(texts, line, dropped)`` (with ``on_row``,
    without ``on_cells``) takes instead the rows of a run of consecutive lines that
    each match the clean-row pattern (so their text split at the commas is the row,
    in :data:`HEADER`'s order): ``texts`` the lines, from line number ``line``;
    ``dropped`` the indexes into ``texts`` of the runs seen before (not passed). A run
    is handed over before any later row, so the two callbacks together see the rows
    in the file's order. Only a regular file is read, a block at a time
    (:mod:`ezpz_amsc.results.rows`): a FIFO or a device is refused, and a line past
    the cap is a problem, not a hang. Memory does not grow with the rows, but for the
    run identities (:class:`~ezpz_amsc.results.seen.SeenRuns`) and the problems.
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
        raise AmscError(f"{p}: cannot read: {reason(e)}") from None
    with f:
        check = _Check(p, f, on_row, on_cells, on_clean if on_cells is None else None)
        try:
            check.read()
        except OSError as e:
            raise AmscError(f"{p}: cannot read: {reason(e)}") from None
        finally:
            check.close()
    return Checked(check.rows, check.problems, check.header_differs, check.problems.more,
                   check.conflicts)


def _clean_row_pattern() -> re.Pattern[str]:
    """A line of :data:`HEADER`'s columns in which ``check`` can find no problem (but a
    run seen before): the common row, told apart in one match. Narrower than the rules
    (a row it does not match is judged cell by cell), never wider: every timestamp it
    takes is a date :func:`~ezpz_amsc.results.schema.parse_timestamp` takes, every number
    is finite and within its column's bounds, no cell is long, blank where required, or
    starts like a formula, and mfu is not zero."""
    # starts with neither a space nor a formula sign; at most MAX_CELL_CHARS long
    text = rf'[A-Za-z0-9_][^,"\x00]{{0,{MAX_CELL_CHARS - 1}}}'
    count = r"[1-9][0-9]{0,17}"
    number = r"[0-9]{1,300}(?:\.[0-9]{1,300})?"  # finite: at most 300 digits before the point
    mfu = r"(?:100(?:\.0{1,300})?|[1-9][0-9]?(?:\.[0-9]{1,300})?|0?\.(?=[0-9]*[1-9])[0-9]{1,300})"
    day = (r"(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)"
           r"|(?:0[13578]|1[02])-31)")  # 29 February goes the long way (a leap year?)
    stamp = rf"(?!0000)[0-9]{{4}}-{day}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|6[01])Z"
    cells = {"timestamp": stamp, "system": text, "config": text, "nodes": count,
             "gpus": count, "status": "(?:pass|fail)", "wall_time_sec": number,
             "throughput_tokens_per_sec": f"(?:{number})?",
             "throughput_tokens_per_sec_per_gpu": f"(?:{number})?", "mfu": f"(?:{mfu})?",
             "tflops": f"(?:{number})?", "final_loss": f"(?:-?{number})?",
             "steps": f"(?:{count})?", "error": f"(?:{text})?"}
    key = ",".join(cells[c] for c in KEY_COLUMNS)
    rest = ",".join(cells[c] for c in HEADER[len(KEY_COLUMNS):])
    assert HEADER[:len(KEY_COLUMNS)] == KEY_COLUMNS and set(cells) == set(HEADER)
    assert MFU_MAX_PCT == 100  # the mfu pattern spells its bound out: change both together
    return re.compile(f"({key}),{rest}")


class _Check:
    """One results file being checked: what ``check_results_file`` keeps while it reads."""

    def __init__(self, path: Path, f: BinaryIO,
                 on_row: Callable[[int, list[str], int], None] | None,
                 on_cells: Callable[[int, list[str], int], None] | None,
                 on_clean: OnClean | None = None) -> None:
        self.path, self.f, self.on_row, self.on_cells = path, f, on_row, on_cells
        self.on_clean = on_clean
        self.rows = 0
        self.problems: Capped[str] = Capped()
        self.conflicts: list[str] = []  # line ranges of git's conflicts
        self._conflict: int | None = None  # the first line of a conflict not yet ended
        self.header: list[str] = []
        self.header_differs = False
        self.index: dict[str, int] = {}
        self.key_index: tuple[int, ...] = ()
        self.in_order = False  # the header is HEADER: a row's cells are in HEADER's order
        self.seen = SeenRuns(self._key_at)
        self._again: BinaryIO | None = None  # the file opened again, to confirm a duplicate

    def close(self) -> None:
        if self._again is not None:
            self._again.close()
        self.seen.release()

    def read(self) -> None:
        p = self.path
        blocks = read_blocks(self.f)
        first = next(blocks, None)
        if first is None:
            raise AmscError(f"{p}: empty file, no header")
        assert isinstance(first, Record)  # the first record is always read the exact way
        header = first.cells
        if header is None:
            raise AmscError(f"{p}:1: the header cannot be read: {first.problem}")
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            foreign = foreign_format(os.pread(self.f.fileno(), 4096, 0))
            if foreign is not None:  # a spreadsheet's save: its cause
                raise AmscError(f"{p}: {foreign}")
            what = "column" if len(missing) == 1 else "columns"
            raise AmscError(f"{p}: header lacks required {what} {', '.join(missing)}")
        if tuple(header) != HEADER:
            self.header_differs = True
            self.problems.append(f"{p}:1: {HEADER_PROBLEM} ({header_difference(header)})")
        self.header = header
        self.index = {c: header.index(c) for c in HEADER if c in header}
        self.key_index = tuple(header.index(c) for c in KEY_COLUMNS)
        self.in_order = tuple(header) == HEADER
        clean = _CLEAN_ROW.fullmatch if self.in_order else None
        for block in blocks:
            if isinstance(block, Plain):
                self._plain(block, clean)
            elif block.cells is None:
                self.rows += 1
                self.problems.append(f"{p}:{block.last_line}: {block.problem}")
            else:
                self._row(block.last_line, block.offset, block.cells)
        if self._conflict is not None:
            line = self._conflict
            self.conflicts.append(f"{line}-")
            self.problems.append(f"{p}:{line}: a git merge conflict starts here ({CONFLICT_OPEN})"
                                 f" and never ends ({CONFLICT_CLOSE}): {CONFLICT_FIX}")

    def _marker(self, line: int, marker: str) -> None:
        """A line of git's conflict markers: the conflict is one problem, named when it ends."""
        p = self.path
        if marker == CONFLICT_OPEN and self._conflict is None:
            self._conflict = line
            return
        if self._conflict is None:
            self.problems.append(f"{p}:{line}: a git merge conflict marker ({marker}) outside "
                                 f"a conflict: delete the line")
            return
        start = self._conflict
        if marker == CONFLICT_OPEN:  # a second opening: the first never ended
            self.conflicts.append(f"{start}-{line - 1}")
            self.problems.append(f"{p}:{start}: a git merge conflict starts here "
                                 f"({CONFLICT_OPEN}) and never ends ({CONFLICT_CLOSE}): "
                                 f"{CONFLICT_FIX}")
            self._conflict = line
        elif marker == CONFLICT_CLOSE:
            self._conflict = None
            self.conflicts.append(f"{start}-{line}")
            self.problems.append(f"{p}:{start}-{line}: a git merge conflict (marker lines "
                                 f"{CONFLICT_OPEN}, {CONFLICT_MIDDLE}, {CONFLICT_CLOSE}): "
                                 f"{CONFLICT_FIX}")
        # ======= or diff3's ||||||| inside a conflict: part of it

    def _plain(self, block: Plain, clean: Callable[[str], re.Match[str] | None] | None) -> None:
        """Lines read as they stand: a clean row (the common case) in one match, the others
        cell by cell."""
        line, offset, wide = block.line, block.offset, not block.ascii
        if clean is None:  # a header of its own: every row cell by cell
            for text in block.texts:
                self._row(line, offset, text.split(",") if text else [])
                offset += 1 + len(text.encode() if wide else text)
                line += 1
            return
        if self.on_clean is not None:
            self._runs(block, clean, self.on_clean)
            return
        first, problems, on_row, on_cells = (self.seen.first, self.problems, self.on_row,
                                              self.on_cells)
        told, where, rows = on_row is not None or on_cells is not None, f"{self.path}:", 0
        for text in block.texts:
            m = clean(text)
            if m is None:
                self._row(line, offset, text.split(",") if text else [])
            else:
                rows += 1
                seen_at = first(m[1], line, offset)
                if told:
                    cells = text.split(",")
                    if on_cells is not None:
                        on_cells(line, cells, offset)
                    if on_row is not None and seen_at is None:
                        on_row(line, cells, offset)
                if seen_at is not None:
                    problems.append(_same_run(where, line, seen_at))
            offset += 1 + len(text.encode() if wide else text)
            line += 1
        self.rows += rows

    def _runs(self, block: Plain, clean: Callable[[str], re.Match[str] | None],
              on_clean: OnClean) -> None:
        """:meth:`_plain` for a reader of runs of clean rows: each run handed over whole."""
        texts, line0, offset, wide = block.texts, block.line, block.offset, not block.ascii
        first, problems, where = self.seen.first, self.problems, f"{self.path}:"
        start, rows = 0, 0
        dropped: list[int] = []  # the run so far: texts[start:], less these
        for i, text in enumerate(texts):
            m = clean(text)
            if m is None:
                if start < i:
                    on_clean(texts[start:i], line0 + start, dropped)
                    dropped = []
                start = i + 1
                self._row(line0 + i, offset, text.split(",") if text else [])
            else:
                rows += 1
                seen_at = first(m[1], line0 + i, offset)
                if seen_at is not None:
                    dropped.append(i - start)
                    problems.append(_same_run(where, line0 + i, seen_at))
            offset += 1 + len(text.encode() if wide else text)
        if start < len(texts):
            on_clean(texts[start:], line0 + start, dropped)
        self.rows += rows

    def _row(self, line: int, offset: int, cells: list[str]) -> None:
        """One record, every rule applied to each cell."""
        p = self.path
        if not any(c.strip() for c in cells):
            return
        # A marker line's first cell starts with its marker, and a branch named after it
        # may hold commas (more cells): the line is judged whole.
        if conflict_marker(cells[0][:8]) is not None:
            marker = conflict_marker(",".join(cells))
            if marker is not None:
                self._marker(line, marker)
                return
        self.rows += 1
        if _NOT_UTF8.search("".join(cells)):
            self.problems.append(f"{p}:{line}: not UTF-8 text")
            return
        if len(cells) != len(self.header):
            self.problems.append(f"{p}:{line}: {len(cells)} cells, header has "
                                 f"{len(self.header)}")
            return
        row = {c: cells[i] for c, i in self.index.items()}
        ordered = cells if self.in_order else [row.get(c, "") for c in HEADER]
        if self.on_cells is not None:
            self.on_cells(line, ordered, offset)
        found = [f"{p}:{line}: {what}" for what in dashboard_problems(row) + bound_problems(row)]
        found += [f"{p}:{line}: {what}" for what in unsafe_cells(row)]
        key = tuple(cells[i] for i in self.key_index)
        first_seen = self.seen.first(",".join(key), line, offset, key)
        if first_seen is not None:
            found.append(_same_run(f"{p}:", line, first_seen))
        self.problems.extend(found)
        if zero_mfu(row):  # readable, but it would publish a made-up number
            self.problems.append(f"{p}:{line}: {ZERO_MFU_PROBLEM.format(row['mfu'])}")
        if self.on_row is not None and not found:
            self.on_row(line, ordered, offset)

    def _key_at(self, _where: int, offset: int) -> tuple[str, ...] | None:
        """The run identity of the record at ``offset``, read again (a digest matched)."""
        if self._again is None:
            again = open_regular(self.path)
            if os.fstat(again.fileno())[:3] != os.fstat(self.f.fileno())[:3]:
                again.close()
                raise AmscError(f"{self.path}: replaced while it was read; check it again")
            self._again = again
        rec = next(read_records(self._again, offset), None)
        cells = rec.cells if rec is not None else None
        if cells is None or len(cells) != len(self.header):
            return None
        return tuple(cells[i] for i in self.key_index)


_CLEAN_ROW = _clean_row_pattern()


def _same_run(where: str, line: int, first: int) -> str:
    """The problem of a run seen before: ``where`` is ``PATH:``."""
    return f"{where}{line}: same run as line {first}"


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
