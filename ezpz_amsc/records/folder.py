"""A folder of provenance records: their names, writing them all or none, reading them back.

Everything below the records folder is made, read and removed through folder file
descriptors (``openat``, ``mkdirat``, ``linkat``, ``unlinkat``): a folder is opened with
``O_NOFOLLOW``, a file is looked at with ``lstat`` or opened with ``O_NOFOLLOW``, so a
symbolic link someone planted there is reported, never followed, and nothing outside
the records folder is ever written or removed. The records folder itself is the one
path a user names, and is taken as given.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ezpz_amsc.errors import AmscError, reason
from ezpz_amsc.fs.access import planted_symlink
from ezpz_amsc.fs.create import (
    FILE_MODE,
    FOLDER_MODE,
    check_can_create,
    crash_point,
    create_file,
    make_folders,
    remove_folders,
    write_all,
)
from ezpz_amsc.records.record import encode, load_record
from ezpz_amsc.results.schema import HEADER, KEY_COLUMNS
from ezpz_amsc.text import Text, opt
from ezpz_amsc.version import TOOL

if TYPE_CHECKING:
    from ezpz_amsc.results.append import Existing, RunsInFile

SUFFIX = ".json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_MAX_TRIES = 100


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


def refuse_foreign_link(folder: Path) -> None:
    """Refuse a records folder that is another user's symbolic link in a folder others may
    write in (:func:`~ezpz_amsc.fs.access.planted_symlink`, the kernel's
    ``protected_symlinks`` rule), which a teammate's planted link would otherwise get round."""
    planted = planted_symlink(folder, "a link another user made could send your records "
                              "anywhere you may write; give " + opt("provenance")
                              + " the folder itself")
    if planted is not None:
        raise planted


def check_record_folder(folder: str | os.PathLike[str]) -> None:
    """Refuse a ``--provenance`` folder that cannot take records, before any work."""
    p = Path(folder)
    refuse_foreign_link(p)
    if p.exists() and not p.is_dir():
        raise AmscError(f"{p}: not a folder; " + opt("provenance")
                        + " needs a folder for the records")
    check_can_create(p / "record.json")


# In-flight records, per results file, in the records folder itself:
# DIR/.pending-<tag of the results file>/OFFSET-NAME.json, renamed to DIR/.done-<tag> at the
# commit point. Made and removed only under the results file's lock, so no writer ever
# removes a folder another is using. An older version kept them in DIR/.pending/<tag>.
PENDING = ".pending-"
DONE = ".done-"
OLD_PENDING = ".pending"


def results_tag(results: str | os.PathLike[str]) -> str:
    """16 hex digits naming a results file by its real path."""
    return hashlib.sha256(os.fsencode(os.path.realpath(results))).hexdigest()[:16]


def pending_folder(folder: Path, results: str | os.PathLike[str]) -> Path:
    """Where records wait for their rows, for one results file (named by its real path)."""
    return folder / (PENDING + results_tag(results))


def _refused(shown: Path, dir_fd: int, name: str) -> AmscError:
    """``name`` in ``dir_fd`` is not the folder or file this tool made: say what it is."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return AmscError(f"{shown}: changed while it was read; retry")
    if stat.S_ISLNK(st.st_mode):
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            target = "?"
        return AmscError(f"{shown}: a symbolic link (to {target}), not something {TOOL} made; "
                         "not following it (remove it)")
    return AmscError(f"{shown}: not a folder; {TOOL} keeps its pending records there "
                     "(remove it)")


def _open_dir(dir_fd: int, name: str, shown: Path) -> int | None:
    """The folder ``name`` in ``dir_fd``, never through a symbolic link; None when absent."""
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _refused(shown, dir_fd, name) from None
        raise AmscError(f"{shown}: cannot open: {reason(e)}") from None


def _open_root(folder: Path) -> int | None:
    """The records folder (the path the user gave, as given, unless another user's link:
    :func:`refuse_foreign_link`); None when it does not exist."""
    refuse_foreign_link(folder)
    try:
        return os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise AmscError(f"{folder}: cannot open the records folder: {reason(e)}") from None


def _write_new(dir_fd: int, name: str, data: bytes) -> None:
    """A new file ``name`` in ``dir_fd``, whole: a hidden temporary file, fsynced, linked."""
    tmp = f".{name}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, _NEW, FILE_MODE, dir_fd=dir_fd)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        crash_point("file-linked")
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)


def _lexists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        return True
    except FileNotFoundError:
        return False


def _clear(dir_fd: int, name: str, shown: Path) -> None:
    """Remove the folder ``name`` in ``dir_fd`` and the files in it (never through a link:
    a link there is refused, a link inside it is removed as a link)."""
    fd = _open_dir(dir_fd, name, shown)
    if fd is None:
        return
    try:
        for entry in os.listdir(fd):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(entry, dir_fd=fd)
    except OSError as e:
        raise AmscError(f"{shown}: cannot remove what is in it: {reason(e)}") from None
    finally:
        os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        os.rmdir(name, dir_fd=dir_fd)


@dataclass
class _Waiting:
    """A pending record found by :meth:`RecordBatch.settle`: where it is, and its final name."""

    dir_fd: int
    name: str
    final: str


@dataclass
class RecordBatch:
    """The records of an append's rows, written into one folder with the rows or not at all.

    The append's hooks (:class:`~ezpz_amsc.results.append.AppendHooks`), run under
    the results file's lock. Each record is first written whole as a *pending*
    record, ``DIR/.pending-<tag>/OFFSET-NAME.json`` (OFFSET: the byte where its
    row will land); the rows are written; then each record takes its name
    ``DIR/NAME.json`` (a hard link, so an existing record is never replaced), and
    the pending folder is renamed ``DIR/.done-<tag>``: the commit point.
    A writer killed at any instant leaves pending records at most; the next
    append to the same results file with this folder finishes them: a record
    whose row is in the file takes its name, the others are removed, and so is
    any temporary file. The pending folder is made and removed only under the
    lock, so a writer never removes it under the next. docs/provenance.md tells
    users the same.

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
    made: list[Path] = field(default_factory=list)  # folders made: removed (under the lock)
    _pending: list[tuple[str, str]] = field(default_factory=list)  # (pending, final name)
    _in_file: list[bool] = field(default_factory=list)

    @cached_property
    def _tag(self) -> str:  # one realpath and hash per batch, not per use
        return results_tag(self.results)

    @property
    def _waiting(self) -> Path:
        return self.folder / (PENDING + self._tag)

    @property
    def _done(self) -> Path:
        return self.folder / (DONE + self._tag)

    def settle(self, runs: RunsInFile, rows: Sequence[Sequence[str]],
               found: Sequence[Existing | None]) -> set[int]:
        """Finish what an interrupted append left in the folder; see the class docs."""
        self._in_file = [e is not None for e in found]
        self._pending = []
        root = _open_root(self.folder)
        if root is None:
            return set()
        fds: list[int] = []
        try:
            _clear(root, DONE + self._tag, self._done)  # killed after its commit point
            old = _open_dir(root, OLD_PENDING, self.folder / OLD_PENDING)  # an older version's
            if old is not None:
                fds.append(old)
                _clear(old, self._tag + ".done", self.folder / OLD_PENDING / f"{self._tag}.done")
            finish: list[_Waiting] = []
            done: set[int] = set()
            places = [(root, PENDING + self._tag, self._waiting)]
            if old is not None:
                places.append((old, self._tag, self.folder / OLD_PENDING / self._tag))
            for parent, name, shown in places:
                fd = _open_dir(parent, name, shown)
                if fd is None:
                    continue
                fds.append(fd)
                for entry in sorted(os.listdir(fd)):
                    row = _row_of(fd, entry, shown / entry)
                    if row is None or not _in_file(runs, row, entry):
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(entry, dir_fd=fd)  # a temporary file, or a row never written
                        continue
                    finish.append(_Waiting(fd, entry, entry.partition("-")[2]))
                    mine = next((i for i, r in enumerate(rows)
                                 if i not in done and list(r) == row), None)
                    if mine is not None:
                        done.add(mine)
            self.completed = self._finish(root, finish)
            if old is not None:
                _clear(old, self._tag, self.folder / OLD_PENDING / self._tag)
                with contextlib.suppress(OSError):
                    os.rmdir(OLD_PENDING, dir_fd=root)  # only when empty
            return done
        except OSError as e:
            raise AmscError(f"{self._waiting}: cannot finish an interrupted append's records: "
                            f"{reason(e)}") from None
        finally:
            for fd in fds:
                os.close(fd)
            os.close(root)

    def prepare(self, placed: Sequence[tuple[int, int]]) -> None:
        """Write the pending record of each row, named by the offset its row will land at."""
        root = pend = None
        try:
            root = self._make_root()
            pend = self._make_pending(root)
            for i, offset in placed:
                record = self.records[i]
                final = self._final_name(root, record, self._in_file[i])
                name = f"{offset}-{final}"
                try:
                    _write_new(pend, name, encode(record))
                except OSError as e:
                    raise AmscError(f"{self._waiting / name}: cannot write: "
                                    f"{reason(e)}") from None
                self._pending.append((name, final))
                crash_point("record-pending")
        except BaseException:
            self.undo()
            raise
        finally:
            for fd in (pend, root):
                if fd is not None:
                    os.close(fd)

    def _make_root(self) -> int:
        """The records folder, made as ``mkdir -p`` would if need be, open."""
        for _ in range(_MAX_TRIES):
            self.made.extend(make_folders(self.folder))
            fd = _open_root(self.folder)
            if fd is not None:
                return fd
        raise AmscError(f"{self.folder}: removed {_MAX_TRIES} times while making it; "
                        "is another program removing it?")

    def _make_pending(self, root: int) -> int:
        name = PENDING + self._tag
        try:
            os.mkdir(name, FOLDER_MODE, dir_fd=root)
        except FileExistsError:
            pass  # left by a writer killed before its first record: settle left it empty
        except OSError as e:
            raise AmscError(f"{self._waiting}: cannot create folder: {reason(e)}") from None
        fd = _open_dir(root, name, self._waiting)
        if fd is None:
            raise AmscError(f"{self._waiting}: removed while it was made; retry")
        return fd

    def _final_name(self, root: int, record: Mapping[str, Any], in_file: bool) -> str:
        """The record's name; a taken one is refused unless the run is in the file (then the
        record takes the next free name when it is put in place)."""
        name = record_name(record["row"])
        if not in_file and _lexists(root, name):
            key = ", ".join(record["row"][c] for c in KEY_COLUMNS)
            raise AmscError(f"{self.folder / name}: a record of this run ({key}) exists, but "
                            f"{self.results} holds no row of it; not replacing it (if that row "
                            "was removed on purpose, remove the record too; if the record "
                            "belongs to another results file, give each results file its own "
                            "records folder)")
        return name

    def commit(self) -> None:
        """The rows are in the file: every pending record takes its name."""
        root = _open_root(self.folder)
        try:
            if root is None:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
            pend = _open_dir(root, PENDING + self._tag, self._waiting)
            if pend is None:
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
            try:
                self.written = self._finish(root, [_Waiting(pend, n, f)
                                                   for n, f in self._pending])
            finally:
                os.close(pend)
        except OSError as e:
            raise AmscError(f"{self.folder}: the rows are appended, but their provenance records "
                            f"could not take their names ({reason(e)}); they wait in "
                            f"{self._waiting}, and the next append with "
                            + opt("provenance", self.folder) + " puts them in place") from None
        finally:
            if root is not None:
                os.close(root)
        self._pending = []

    def _finish(self, root: int, pending: Sequence[_Waiting]) -> list[Path]:
        """Give every pending record its name, then clear them all away in one step.

        The pending records stay until every one has its name, then their folder
        is renamed away at once: that rename is the append's commit point. A
        writer killed before it leaves every pending record for the next append
        to finish (a name already given is recognised); after it, nothing is
        left to finish, and what remains of the folder is removed by the next.
        """
        if not pending:
            with contextlib.suppress(OSError):
                os.rmdir(PENDING + self._tag, dir_fd=root)  # only when empty
            return []
        finals = []
        for w in pending:
            finals.append(self.folder / _link(w, root))
            crash_point("record-linked")
        with contextlib.suppress(FileNotFoundError):  # none: an older version's, finished here
            os.rename(PENDING + self._tag, DONE + self._tag, src_dir_fd=root, dst_dir_fd=root)
        crash_point("committed")
        _clear(root, DONE + self._tag, self._done)
        return finals

    def undo(self) -> None:
        """Take back the pending records of this batch (its rows were not written), and the
        folders it made (under the lock: no writer of this results file is using them)."""
        root = _open_root(self.folder)
        if root is not None:
            try:
                pend = _open_dir(root, PENDING + self._tag, self._waiting)
                if pend is not None:
                    for name, _ in self._pending:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(name, dir_fd=pend)
                    os.close(pend)
                with contextlib.suppress(OSError):
                    os.rmdir(PENDING + self._tag, dir_fd=root)  # only when empty
            finally:
                os.close(root)
        self._pending = []
        remove_folders(self.made)
        self.made = []


def _row_of(dir_fd: int, name: str, shown: Path) -> list[str] | None:
    """The row of a whole pending record, in header order; None for anything else."""
    if name.startswith(".") or not name.endswith(SUFFIX):
        return None
    try:
        rec = load_record(name, dir_fd, shown)
    except AmscError:
        return None
    return [rec["row"][c] for c in HEADER]


def _in_file(runs: RunsInFile, row: list[str], name: str) -> bool:
    """Whether the pending record ``name``'s row is in the results file, at the offset its
    name gives (an equal row elsewhere may be another's: ``--allow-duplicate``)."""
    offset = name.partition("-")[0]
    return offset.isdigit() and len(offset) < 20 and runs.row_at(int(offset)) == row


def _link(w: _Waiting, root: int) -> str:
    """A second name in the records folder for the pending record: its final name, or the
    next free one."""
    final = w.final
    while True:
        try:
            os.link(w.name, final, src_dir_fd=w.dir_fd, dst_dir_fd=root, follow_symlinks=False)
            return final
        except FileExistsError:
            mine = os.stat(w.name, dir_fd=w.dir_fd, follow_symlinks=False)
            there = os.stat(final, dir_fd=root, follow_symlinks=False)
            if (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino):
                return final  # given before a crash
            final = _free_name(root, w.final)


def _free_name(root: int, name: str) -> str:
    stem = name[:-len(SUFFIX)]
    n = 2
    while _lexists(root, candidate := f"{stem}-{n}{SUFFIX}"):
        n += 1
    return candidate


def write_record_file(path: Path, record: Mapping[str, Any]) -> None:
    """One record at a fixed name (the hook's ``amsc.json``), replacing an earlier one whole."""
    create_file(path, encode(record), replace=True)


# ------------------------------------------------------------------ reading


def iter_records(folder: str | os.PathLike[str]) -> Iterator[tuple[Path, dict[str, Any] | None,
                                                                   str | None]]:
    """``(path, record, None)`` or ``(path, None, why not)`` for each ``*.json`` in ``folder``.

    Hidden files (an interrupted write's temporary file) are not records; a symbolic
    link is reported, never followed.
    """
    p = Path(folder)
    root = _open_root(p) if p.is_dir() else None
    if root is None:  # (a folder removed between the two looks is no such folder)
        what = "not a folder" if p.exists() and not p.is_dir() else "no such folder"
        raise AmscError(f"{p}: {what}; " + opt("provenance")
                        + " needs the folder of the records")
    try:
        try:
            names = sorted(n for n in os.listdir(root)
                           if n.endswith(SUFFIX) and not n.startswith("."))
        except OSError as e:
            raise AmscError(f"{p}: cannot list: {reason(e)}") from None
        for name in names:
            try:
                yield p / name, load_record(name, root, p / name), None
            except AmscError as e:
                yield p / name, None, e.format_message()
    finally:
        os.close(root)


def leftovers(folder: str | os.PathLike[str]) -> list[Text]:
    """What interrupted writes left in a records folder, one line each (for ``check``).

    Pending records (``.pending-<tag>/``, or an older version's ``.pending/<tag>/``)
    of an append killed between its records and its rows, which the next append
    finishes; the ``.done-<tag>`` folder of one killed after its commit point; and
    hidden temporary files of a record write killed half-way by an older version,
    which nothing reads. Nothing is followed through a symbolic link.
    """
    p = Path(folder)
    lines: list[Text] = []
    root = None
    with contextlib.suppress(OSError):
        root = _open_root(p)
    if root is None:
        return lines
    waiting: list[Path] = []
    links: list[Path] = []
    try:
        names = sorted(os.listdir(root))
        lines += [f"{p / name}: a temporary file of a record write that was killed; remove it"
                  for name in names if name.startswith(".") and name.endswith(".tmp")]
        for name in names:
            if not name.startswith((PENDING, DONE)) and name != OLD_PENDING:
                continue
            try:
                fd = _open_dir(root, name, p / name)
            except AmscError:
                links.append(p / name)
                continue
            if fd is None:
                continue
            try:
                inside = sorted(os.listdir(fd))
                if name == OLD_PENDING:
                    for tag in inside:
                        with contextlib.suppress(AmscError, OSError):
                            sub = _open_dir(fd, tag, p / name / tag)
                            if sub is not None:
                                waiting += [p / name / tag / n for n in sorted(os.listdir(sub))]
                                os.close(sub)
                else:
                    waiting += [p / name / n for n in inside]
            finally:
                os.close(fd)
    except OSError:
        pass
    finally:
        os.close(root)
    lines += [f"{path}: left by an interrupted append; the next append to its results file "
              "with " + opt("provenance", p) + " finishes or removes it"
              for path in sorted(waiting)]
    lines += [f"{path}: not a folder {TOOL} made (a symbolic link or a file); an append "
              "with " + opt("provenance", p) + " refuses to follow it; remove it"
              for path in links]
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
