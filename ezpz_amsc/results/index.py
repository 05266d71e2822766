"""The run index of a results file: where each run identity is, without reading the file.

Refusing a double count needs every run identity already in the file. Read
from the file under its lock, that costs time in proportion to the file (1.3 s
a million rows), and every writer waits for it. The index keeps, per results
file, the first line of each run identity (a 16-byte digest of it, the line's
number and byte offset), and how far the file was indexed: its inode, size,
modification time, and digests of its first and last 4 KiB indexed. An append
then costs the same at a thousand rows and at a million.

It is a cache, never trusted blindly:

- **Validated** on every use, under the results file's lock: the same inode,
  not shorter than indexed, the same first and last 4 KiB where indexing
  stopped, and the same modification time if the size is the same. A file that
  only grew (appended to by anyone) is indexed on from where it stopped; any
  other change (edited, truncated, replaced) rebuilds the index from the file.
- **Refusals are checked against the file**: a run the index says is at line
  N is refused only if the record at that byte offset really holds it (see
  :mod:`ezpz_amsc.results.append`); otherwise the index is rebuilt.
- **Crash-safe**: it is an SQLite database, changed in transactions, and only
  after the rows it describes are in the file; a writer killed before it
  updated the index leaves the file longer than indexed, which the next
  writer indexes on.

It lives in the user's cache (``$XDG_CACHE_HOME/ezpz-amsc/runs``, by default
``~/.cache/ezpz-amsc/runs``), one database per results file (named by a digest
of its real path): nothing appears next to the results file, and no results
folder needs to be writable for it. Whoever cannot keep it (no home, a full
disk) reads the whole file instead, as before. docs/results-files.md states the
guarantees and the windows that remain.

Everything here runs under the results file's lock; SQLite's own locking is
therefore off (``unix-none``), which also keeps it working on file systems
whose locks SQLite cannot use.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, cast

from ezpz_amsc.fs.read import open_regular
from ezpz_amsc.results.rows import read_records
from ezpz_amsc.results.schema import HEADER, RunKey, cells_key

try:  # CPython's own BLAKE2: hashlib would load OpenSSL (~3.8 MB) into a training job's hook
    from _blake2 import blake2b
except ImportError:  # pragma: no cover (another Python)
    from hashlib import blake2b

VERSION = 1
_EDGE_BYTES = 4096  # how much of the file's start and of its indexed end is compared
# An index behind the file by at most this much is caught up under the lock (about
# 15,000 rows: milliseconds); further behind, it is rebuilt before the lock is taken.
_CATCH_UP_BYTES = 1 << 20
_STALE_SEC = 86400
# One writer (re)builds an index before the lock; the others wait for it, at most this
# long, instead of each reading the whole file at once (64 jobs ending together onto a
# million rows would read it 64 times, on the same cores). Past it, they build their own.
_BUILD_WAIT_SEC = 60.0
_FOLDER = ("ezpz-amsc", "runs")


def key_digest(key: RunKey) -> bytes:
    """A run identity as 16 bytes: what the index stores and looks up."""
    text = "\0".join(key).encode("utf-8", "surrogatepass")
    return blake2b(text, digest_size=16).digest()


def cache_folder() -> Path | None:
    """Where indexes live: ``$XDG_CACHE_HOME/ezpz-amsc/runs``, else under ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    if not base:
        try:
            base = os.path.join(Path.home(), ".cache")
        except (KeyError, RuntimeError):  # no home directory (a bare container)
            return None
    if not os.path.isabs(base):
        return None  # the XDG rule: a relative path is ignored
    return Path(base, *_FOLDER)


def index_path(results: Path) -> Path | None:
    """The index database of the results file ``results`` (None: no cache folder)."""
    folder = cache_folder()
    if folder is None:
        return None
    real = os.path.realpath(results)
    name = blake2b(os.fsencode(real), digest_size=16).hexdigest()
    return folder / f"{name}.sqlite"


class RunIndexFile:
    """An open run index, validated against the open results file ``fd`` and caught up."""

    def __init__(self, db: sqlite3.Connection, fd: int) -> None:
        self.db, self.fd = db, fd
        self.rebuilt = False  # whether opening it had to read the whole file

    # ------------------------------------------------------------ opening

    @classmethod
    def open(cls, results: Path, fd: int) -> RunIndexFile | None:
        """The index of the results file open (and locked) as ``fd``, up to date with it.

        None when no index can be kept; the caller then reads the whole file.
        """
        path = index_path(results)
        if path is None:
            return None
        try:
            return cls._opened(path, fd)
        except (OSError, sqlite3.Error):
            _remove(path)  # broken, or not ours to use: made again once
        try:
            return cls._opened(path, fd)
        except (OSError, sqlite3.Error):
            return None

    @classmethod
    def _opened(cls, path: Path, fd: int) -> RunIndexFile:
        idx = cls(_connect(path), fd)
        try:
            idx._catch_up()
        except BaseException:
            idx.close()
            raise
        return idx

    @classmethod
    def warm(cls, results: Path) -> None:
        """Before the lock is taken: (re)build the index if it is missing, stale or far behind.

        Reading a million rows takes seconds, and no writer should wait for that.
        The index is built from the file as it is now (appenders only add to
        it) into a new database, which then takes the index's name; under the
        lock, :meth:`open` has little or nothing left to catch up. Nothing
        here can fail an append: any error leaves the work to :meth:`open`.
        """
        path = index_path(results)
        if path is None:
            return
        try:
            f = open_regular(results)
        except OSError:
            return  # a new file, or one :func:`append_rows` will name the trouble with
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            if cls._close_enough(path, f.fileno()):
                return
            with _one_builder(path):
                if cls._close_enough(path, f.fileno()):  # built while this one waited
                    return
                _remove_stale(path.parent)
                fresh = cls(_connect(tmp), f.fileno())
                try:
                    fresh.rebuild()
                finally:
                    fresh.close()
                os.replace(tmp, path)
                _remove(path.with_name(path.name + "-journal"))  # of the database replaced
        except (OSError, sqlite3.Error):
            _remove(tmp)
        finally:
            f.close()

    @classmethod
    def _close_enough(cls, path: Path, fd: int) -> bool:
        """Whether the index describes the file but for a short tail (or exactly), or
        cannot be read here: read without the lock (and without SQLite's locking), it may
        be half written by the writer that holds the lock, which keeps it current. Either
        way :meth:`open` finishes the work under the lock (and remakes a broken one)."""
        if not path.exists():
            return False
        db = sqlite3.connect(_uri(path, read_only=True), uri=True)
        try:
            idx = cls(db, fd)
            start = idx._valid_prefix(idx._meta(), os.fstat(fd))
            return start is not None and os.fstat(fd).st_size - start <= _CATCH_UP_BYTES
        except sqlite3.Error:  # not a rebuild of a million rows for a read mid-write
            return True
        finally:
            db.close()

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.db.close()

    def _meta(self) -> dict[str, object]:
        return dict(self.db.execute("SELECT k, v FROM meta").fetchall())

    def _catch_up(self) -> None:
        """Index what the file holds beyond what was indexed; rebuild if it changed otherwise."""
        meta = self._meta()
        st = os.fstat(self.fd)
        start = self._valid_prefix(meta, st)
        if start is None:
            self.rebuild()
            return
        if start < st.st_size:
            self._index_from(start, int(cast(int, meta["lines"])) + 1)

    def _valid_prefix(self, meta: dict[str, object], st: os.stat_result) -> int | None:
        """How many bytes of the file the index still describes; None if it is stale."""
        if meta.get("version") != VERSION or meta.get("ino") != str(st.st_ino):
            return None
        size = meta.get("size")
        if not isinstance(size, int) or st.st_size < size:
            return None
        if st.st_size == size and meta.get("mtime_ns") != str(st.st_mtime_ns):
            return None  # same size, touched: edited in place (or touched by hand)
        if meta.get("ends_line") != 1 and st.st_size > size:
            return None  # indexing stopped inside a line: the new bytes go on with it
        if (meta.get("head"), meta.get("tail")) != _edges(self.fd, size):
            return None
        return size

    # ------------------------------------------------------------ reading and writing

    def find(self, key: RunKey) -> tuple[int, int] | None:
        """``(line, byte offset)`` of the first row of run ``key``, if the index has one."""
        got = self.db.execute("SELECT line, offset FROM runs WHERE digest = ?",
                              (key_digest(key),)).fetchone()
        return (got[0], got[1]) if got else None

    def rebuild(self) -> None:
        """Index the whole file again."""
        self.rebuilt = True
        with self._transaction():
            self.db.execute("DELETE FROM runs")
            self.db.execute("DELETE FROM meta")
            self._index(0, 1)

    def _index_from(self, offset: int, line: int) -> None:
        with self._transaction():
            self._index(offset, line)

    def _index(self, offset: int, line: int) -> None:
        scan = _Scan(self._file(), offset, line)
        self.db.executemany("INSERT OR IGNORE INTO runs (digest, line, offset) VALUES (?, ?, ?)",
                            scan)
        st = os.fstat(self.fd)
        size = scan.end  # what was read: the meta describes exactly that
        head, tail = _edges(self.fd, size)
        last = os.pread(self.fd, 1, size - 1) if size else b"\n"
        self.db.executemany("INSERT OR REPLACE INTO meta (k, v) VALUES (?, ?)", [
            ("version", VERSION), ("ino", str(st.st_ino)), ("size", size),
            ("mtime_ns", str(st.st_mtime_ns)), ("head", head), ("tail", tail),
            ("ends_line", int(last in (b"\n", b"\r"))), ("lines", scan.lines)])

    def caught_up(self) -> None:
        """After rows were appended (or a failed append cut back): index what changed.

        Failures are ignored: the index is then behind the file, and the next
        writer catches up or rebuilds.
        """
        with contextlib.suppress(OSError, sqlite3.Error):
            self._catch_up()

    def _file(self) -> BinaryIO:
        return open(self.fd, "rb", closefd=False)  # noqa: SIM115 (never closes fd: the lock)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        self.db.execute("BEGIN")
        try:
            yield
        except BaseException:
            with contextlib.suppress(sqlite3.Error):
                self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")


class _Scan:
    """``(digest, line, offset)`` of every row from ``offset`` (the header is no row); after
    the pass, ``lines`` is the number of the last line read and ``end`` the offset reached."""

    def __init__(self, f: BinaryIO, offset: int, line: int) -> None:
        self.f, self.offset, self.lines, self.end = f, offset, line - 1, offset

    def __iter__(self) -> Iterator[tuple[bytes, int, int]]:
        width = len(HEADER)
        records = read_records(self.f, self.offset, self.lines + 1)
        for rec in records:
            self.lines = rec.last_line
            if rec.offset == 0 or rec.cells is None or len(rec.cells) < width:
                continue
            yield key_digest(cells_key(rec.cells)), rec.line, rec.offset
        self.end = self.f.tell()


@contextlib.contextmanager
def _one_builder(path: Path) -> Iterator[None]:
    """Hold ``PATH.build``'s lock while building the index ``path``: waits for a writer
    building it already (at most :data:`_BUILD_WAIT_SEC`), then goes on without it."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path.with_name(path.name + ".build"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:  # no lock to share: build as if alone
        yield
        return
    try:
        deadline, delay = time.monotonic() + _BUILD_WAIT_SEC, 0.01
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES) or time.monotonic() >= deadline:
                    break  # no lock here, or held too long: build as if alone
            time.sleep(delay)
            delay = min(delay * 2, 0.25)
        yield
    finally:
        os.close(fd)  # releases the lock


def _edges(fd: int, size: int) -> tuple[str, str]:
    """Digests of the file's first 4 KiB and of the 4 KiB before byte ``size``."""
    head = os.pread(fd, min(_EDGE_BYTES, size), 0)
    tail = os.pread(fd, min(_EDGE_BYTES, size), max(0, size - _EDGE_BYTES))
    return blake2b(head).hexdigest(), blake2b(tail).hexdigest()


def _uri(path: Path, read_only: bool = False) -> str:
    return f"file:{urllib.parse.quote(str(path))}?vfs=unix-none" + ("&mode=ro" if read_only
                                                                    else "")


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(_uri(path), uri=True, isolation_level=None)
    try:
        # A cache: a crash of this process is safe without fsync (the journal is
        # in the page cache); after a power loss a broken index is rebuilt.
        db.execute("PRAGMA synchronous = OFF")
        db.execute("CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v) WITHOUT ROWID")
        db.execute("CREATE TABLE IF NOT EXISTS runs (digest BLOB PRIMARY KEY, line INTEGER, "
                   "offset INTEGER) WITHOUT ROWID")
    except BaseException:
        db.close()
        raise
    return db


def _remove(path: Path) -> None:
    for p in (path, path.with_name(path.name + "-journal")):
        with contextlib.suppress(OSError):
            p.unlink()


def _remove_stale(folder: Path) -> None:
    """Databases half-built by a killed :meth:`RunIndexFile.warm` (a day old: none is in use)."""
    cutoff = time.time() - _STALE_SEC
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if ".tmp" in entry.name and entry.stat().st_mtime < cutoff:
                _remove(Path(entry.path))
