"""A folder of provenance records: their names, writing them all or none, reading them back."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ezpz_amsc.errors import AmscError
from ezpz_amsc.fs.create import create_file, make_folders, remove_folders
from ezpz_amsc.records.record import encode, load_record
from ezpz_amsc.results.append import check_can_create
from ezpz_amsc.results.schema import KEY_COLUMNS

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
        raise AmscError(f"{p}: not a folder; --provenance needs a folder for the records")
    check_can_create(p / "record.json")


@dataclass
class RecordBatch:
    """Records to write into one folder: all of them or none.

    A record whose name is taken is refused (the same run, recorded before),
    unless ``allow_duplicate``: then it is written beside it as ``NAME-2.json``,
    ``NAME-3.json``, ... An existing record is never replaced.
    """

    folder: Path
    records: list[dict[str, Any]]
    allow_duplicate: bool = False
    written: list[Path] = field(default_factory=list)

    def write(self) -> Callable[[], None]:
        """Write every record; on failure remove those written. Returns how to undo it all."""
        made = make_folders(self.folder)
        try:
            for record in self.records:
                self.written.append(self._write_one(record))
        except BaseException:
            self._undo(made)
            raise
        return lambda: self._undo(made)

    def _write_one(self, record: Mapping[str, Any]) -> Path:
        path = self.folder / record_name(record["row"])
        if os.path.lexists(path):
            if not self.allow_duplicate:
                key = ", ".join(record["row"][c] for c in KEY_COLUMNS)
                raise AmscError(f"{path}: a record of this run ({key}) already exists; not "
                                "replacing it (pass --allow-duplicate to keep both)")
            path = _free_name(path)
        create_file(path, encode(record))
        return path

    def _undo(self, made: list[Path]) -> None:
        for p in self.written:
            with contextlib.suppress(OSError):
                os.unlink(p)
        self.written.clear()
        remove_folders(made)


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
        raise AmscError(f"{p}: {what}; --provenance needs the folder of the records")
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
