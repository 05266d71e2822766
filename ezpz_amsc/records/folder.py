"""A folder of provenance records: their names, writing them all or none, reading them back."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ezpz_amsc.errors import AmscError
from ezpz_amsc.fs.create import (
    check_can_create,
    crash_point,
    create_file,
    make_folders,
    remove_folders,
)
from ezpz_amsc.records.record import encode, load_record
from ezpz_amsc.results.schema import HEADER, KEY_COLUMNS
from ezpz_amsc.text import Text, opt

if TYPE_CHECKING:
    from ezpz_amsc.results.append import Existing, RunsInFile

SUFFIX = ".json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


def _slug(text: str, limit: int) -> str:
    return _UNSAFE.sub("-", text).strip("-.")[:limit].strip("-.") or "x"


def record_name(row: Mapping[str, str]) -> str:
    """The file name of a row's record: its run identity, readable and filesystem-safe.

    ``20261129T221843Z_Aurora_agpt-2b-bs1-seq2048-tp1_2n-24g_b042ccb2.json``: the
    start time, system, a slug of the config, nodes and gpus, and 8 hex digits
    of the exact identity, so that two configs with the same slug ("a/b",
    "a b"), or names differing only in case, never share a file.
    """
    key = "\0".join(row[c] for c in KEY_COLUMNS)
    tag = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    stamp = row["timestamp"].replace("-", "").replace(":", "")
    return (f"{_slug(stamp, 20)}_{_slug(row['system'], 40)}_{_slug(row['config'], 80)}_"
            f"{_slug(row['nodes'], 8)}n-{_slug(row['gpus'], 8)}g_{tag}{SUFFIX}")


def check_record_folder(folder: str | os.PathLike[str]) -> None:
    """Refuse a ``--provenance`` folder that cannot take records, before any work."""
    p = Path(folder)
    if p.exists() and not p.is_dir():
        raise AmscError(f"{p}: not a folder; " + opt("provenance")
                        + " needs a folder for the records")
    check_can_create(p / "record.json")


# In-flight records, per results file: DIR/.pending/<tag of the results file>/OFFSET-NAME.json
PENDING = ".pending"


def pending_folder(folder: Path, results: str | os.PathLike[str]) -> Path:
    """Where records wait for their rows, for one results file (named by its real path)."""
    tag = hashlib.sha256(os.fsencode(os.path.realpath(results))).hexdigest()[:16]
    return folder / PENDING / tag


@dataclass
class RecordBatch:
    """The records of an append's rows, written into one folder with the rows or not at all.

    The append's hooks (:class:`~ezpz_amsc.results.append.AppendHooks`), run under
    the results file's lock. Each record is first written whole as a *pending*
    record, ``DIR/.pending/<tag>/OFFSET-NAME.json`` (OFFSET: the byte where its
    row will land); the rows are written; then each record takes its name
    ``DIR/NAME.json`` (a hard link, so an existing record is never replaced).
    A writer killed at any instant leaves pending records at most; the next
    append to the same results file with this folder finishes them: a record
    whose row is in the file takes its name, the others are removed, and so is
    any temporary file. docs/provenance.md tells users the same.

    A record whose name is taken is refused when its row is not in the file
    (a row removed by hand, or a folder shared with another results file);
    with ``allow_duplicate`` and the run in the file, it is written beside the
    other as ``NAME-2.json``, ``NAME-3.json``, ...
    """

    folder: Path
    records: list[dict[str, Any]]
    results: Path
    allow_duplicate: bool = False
    written: list[Path] = field(default_factory=list)  # records put in place
    completed: list[Path] = field(default_factory=list)  # of them, an interrupted append's
    made: list[Path] = field(default_factory=list)  # folders made: removed once empty
    _pending: list[tuple[Path, Path]] = field(default_factory=list)  # (pending, final name)
    _in_file: list[bool] = field(default_factory=list)

    @property
    def _waiting(self) -> Path:
        return pending_folder(self.folder, self.results)

    def settle(self, runs: RunsInFile, rows: Sequence[Sequence[str]],
               found: Sequence[Existing | None]) -> set[int]:
        """Finish what an interrupted append left in the folder; see the class docs."""
        self._in_file = [e is not None for e in found]
        self._pending = []
        _remove_tree(self._done)  # an append killed after its commit point: all in place
        try:
            names = sorted(os.listdir(self._waiting))
        except FileNotFoundError:
            return set()
        except OSError as e:
            raise AmscError(f"{self._waiting}: cannot list: {e.strerror or e}") from None
        finish, done = [], set()
        for name in names:
            path = self._waiting / name
            row = self._row_of(path)
            if row is None or not _in_file(runs, row, name):
                _remove(path)  # a temporary file, or a record whose row never made it
                continue
            finish.append((path, self.folder / name.partition("-")[2]))
            mine = next((i for i, r in enumerate(rows) if i not in done and list(r) == row), None)
            if mine is not None:
                done.add(mine)
        self.completed = self._finish(finish)
        return done

    def _row_of(self, path: Path) -> list[str] | None:
        """The row of a whole pending record, in header order; None for anything else."""
        if path.name.startswith(".") or not path.name.endswith(SUFFIX):
            return None
        try:
            rec = load_record(path)
        except AmscError:
            return None
        return [rec["row"][c] for c in HEADER]

    def prepare(self, placed: Sequence[tuple[int, int]]) -> None:
        """Write the pending record of each row, named by the offset its row will land at."""
        try:
            self.made.extend(make_folders(self._waiting))
            for i, offset in placed:
                record = self.records[i]
                final = self._final_name(record, self._in_file[i])
                path = self._waiting / f"{offset}-{final.name}"
                create_file(path, encode(record), parents=False)
                self._pending.append((path, final))
                crash_point("record-pending")
        except BaseException:
            self.undo()
            raise

    def _final_name(self, record: Mapping[str, Any], in_file: bool) -> Path:
        """The record's name; a taken one is refused unless the run is in the file (then the
        record takes the next free name when it is put in place)."""
        path = self.folder / record_name(record["row"])
        if not in_file and os.path.lexists(path):
            key = ", ".join(record["row"][c] for c in KEY_COLUMNS)
            raise AmscError(f"{path}: a record of this run ({key}) exists, but {self.results} "
                            "holds no row of it; not replacing it (if that row was removed on "
                            "purpose, remove the record too; if the record belongs to another "
                            "results file, give each results file its own records folder)")
        return path

    def commit(self) -> None:
        """The rows are in the file: every pending record takes its name."""
        try:
            self.written = self._finish(self._pending)
        except OSError as e:
            raise AmscError(f"{self.folder}: the rows are appended, but their provenance records "
                            f"could not take their names ({e.strerror or e}); they wait in "
                            f"{self._waiting}, and the next append with "
                            + opt("provenance", self.folder) + " puts them in place") from None
        self._pending = []

    @property
    def _done(self) -> Path:
        return self._waiting.with_name(self._waiting.name + ".done")

    def _finish(self, pending: Sequence[tuple[Path, Path]]) -> list[Path]:
        """Give every pending record its name, then clear them all away in one step.

        The pending records stay until every one has its name, then their folder
        is renamed away at once: that rename is the append's commit point. A
        writer killed before it leaves every pending record for the next append
        to finish (a name already given is recognised); after it, nothing is
        left to finish, and what remains of the folder is removed by the next.
        """
        if not pending:
            _drop_empty(self._waiting)
            return []
        finals = []
        for path, final in pending:
            finals.append(_link(path, final))
            crash_point("record-linked")
        os.rename(self._waiting, self._done)
        crash_point("committed")
        _remove_tree(self._done)
        _drop_empty(self._waiting)
        return finals

    def undo(self) -> None:
        """Take back the pending records of this batch (its rows were not written)."""
        for path, _ in self._pending:
            _remove(path)
        self._pending = []
        _drop_empty(self._waiting)

    def remove_made(self) -> None:
        """Folders this batch made, if still empty: after the results file's lock is released."""
        remove_folders(self.made)
        self.made = []


def _in_file(runs: RunsInFile, row: list[str], name: str) -> bool:
    """Whether the pending record ``name``'s row is in the results file, at the offset its
    name gives (an equal row elsewhere may be another's: ``--allow-duplicate``)."""
    offset = name.partition("-")[0]
    return offset.isdigit() and runs.row_at(int(offset)) == row


def _link(path: Path, final: Path) -> Path:
    """A second name for the pending record ``path``: ``final``, or the next free one."""
    while True:
        try:
            os.link(path, final)
            return final
        except FileExistsError:
            if os.path.samefile(path, final):
                return final  # given before a crash
            final = _free_name(final)


def _remove(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def _remove_tree(folder: Path) -> None:
    """A folder of pending records (and temporary files), and the folder."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in names:
        _remove(folder / name)
    with contextlib.suppress(FileNotFoundError):
        folder.rmdir()
    _drop_empty(folder)


def _drop_empty(waiting: Path) -> None:
    for d in (waiting, waiting.parent):
        with contextlib.suppress(OSError):
            d.rmdir()  # only when empty; a writer that needs it makes it again


def _free_name(path: Path) -> Path:
    stem = path.name[:-len(SUFFIX)]
    n = 2
    while os.path.lexists(candidate := path.with_name(f"{stem}-{n}{SUFFIX}")):
        n += 1
    return candidate


def write_record_file(path: Path, record: Mapping[str, Any]) -> None:
    """One record at a fixed name (the hook's ``amsc.json``), replacing an earlier one whole."""
    create_file(path, encode(record), replace=True)


# ------------------------------------------------------------------ reading


def iter_records(folder: str | os.PathLike[str]) -> Iterator[tuple[Path, dict[str, Any] | None,
                                                                   str | None]]:
    """``(path, record, None)`` or ``(path, None, why not)`` for each ``*.json`` in ``folder``.

    Hidden files (an interrupted write's temporary file) are not records.
    """
    p = Path(folder)
    if not p.is_dir():
        what = "not a folder" if p.exists() else "no such folder"
        raise AmscError(f"{p}: {what}; " + opt("provenance")
                        + " needs the folder of the records")
    try:
        names = sorted(e.name for e in os.scandir(p)
                       if e.name.endswith(SUFFIX) and not e.name.startswith("."))
    except OSError as e:
        raise AmscError(f"{p}: cannot list: {e.strerror or e}") from None
    for name in names:
        try:
            yield p / name, load_record(p / name), None
        except AmscError as e:
            yield p / name, None, e.format_message()


def leftovers(folder: str | os.PathLike[str]) -> list[Text]:
    """What interrupted writes left in a records folder, one line each (for ``check``).

    Pending records (``.pending/``) of an append killed between its records and
    its rows, which the next append finishes; and hidden temporary files of a
    record write killed half-way by an older version, which nothing reads.
    """
    p = Path(folder)
    lines: list[Text] = []
    with contextlib.suppress(OSError):
        lines += [f"{p / name}: a temporary file of a record write that was killed; remove it"
                  for name in sorted(e.name for e in os.scandir(p)
                                     if e.name.startswith(".") and e.name.endswith(".tmp"))]
    waiting: list[Path] = []
    with contextlib.suppress(OSError):
        for tag in os.scandir(p / PENDING):
            with contextlib.suppress(OSError):
                waiting += [Path(tag.path) / name for name in os.listdir(tag.path)]
    lines += [f"{path}: left by an interrupted append; the next append to its results file "
              "with " + opt("provenance", p) + " finishes or removes it"
              for path in sorted(waiting)]
    return lines


def sharing_note(folder: str | os.PathLike[str],
                 results: str | os.PathLike[str]) -> str | None:
    """A note when the results file's folder is shared (group-writable) but the records
    folder beside it is not: a teammate's append with ``--provenance`` would fail there."""
    from ezpz_amsc.fs.access import describe, group_name

    try:
        shared = os.stat(Path(results).absolute().parent)
        st = os.stat(folder)
    except OSError:
        return None
    if not shared.st_mode & stat.S_IWGRP or st.st_mode & stat.S_IWGRP:
        return None
    return (f"{folder}: other members of group {group_name(st.st_gid)} cannot add provenance "
            f"records to it ({describe(st)}), though they may append to {results}; to share "
            f"it: chmod g+w{'s' if shared.st_mode & stat.S_ISGID else ''} {folder}")
