"""``describe``: write or update the ``datapackage.json`` beside a results file.

The package's content (the resource, its Table Schema, reading and encoding the file)
is :mod:`ezpz_amsc.results.package`; this workflow checks the results file, lists the
provenance records of its rows as the resource's sources, and writes the file when
what it says has changed (docs/results-files.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ezpz_amsc.errors import AmscError
from ezpz_amsc.fs.create import create_file
from ezpz_amsc.records.folder import iter_records
from ezpz_amsc.results.package import (
    PACKAGE_FILE,
    RECORDS_FOLDER,
    encode,
    load_package,
    package_path,
    update_resource,
)
from ezpz_amsc.results.schema import HEADER, cells_of
from ezpz_amsc.results.validate import check_results_file
from ezpz_amsc.text import opt, plural


@dataclass
class Description:
    """What :func:`describe` did: the package, and what it lists."""

    path: Path  # datapackage.json
    resource: str  # the results file's name in it
    rows: int
    records: Path | None  # the folder whose records are listed, if any
    sources: int  # records listed
    written: bool  # False: the file already said exactly this
    notes: list[str] = field(default_factory=list)


def describe(results: str | os.PathLike[str],
             provenance: str | os.PathLike[str] | None = None) -> Description:
    """Write or update ``datapackage.json`` beside ``results``; refuse a file ``check`` refuses.

    ``provenance`` is the folder of the rows' records; without it, ``records/``
    beside the results file is used when it is a folder. Records whose row is
    a line of the file are listed as the resource's sources.
    """
    csv_path = Path(results)
    if csv_path.is_dir():
        raise AmscError(f"{csv_path}: is a directory; describe needs a results CSV")
    rows: list[dict[str, str]] = []
    checked = check_results_file(
        csv_path, lambda _line, cells, _offset: rows.append(dict(zip(HEADER, cells, strict=True))))
    count, problems = checked.rows, checked.problems
    if problems:
        raise AmscError(f"{csv_path}: {plural(len(problems), 'problem')} in "
                        f"{plural(count, 'row')}; 'ezpz-amsc check {csv_path}' lists them: "
                        f"a data package must not describe a file check refuses")
    target = package_path(csv_path)
    old_bytes, package = load_package(target)
    folder = records_folder(csv_path, provenance)
    notes: list[str] = []
    sources = [] if folder is None else record_sources(rows, folder, target.parent, notes)
    resource = update_resource(package, csv_path.name, sources,
                               None if folder is None else _rel(folder, target.parent))
    data = encode(package)
    written = data != old_bytes
    if written:
        create_file(target, data, replace=True, what="datapackage.json")
    return Description(target, resource, count, folder, len(sources), written, notes)


# ------------------------------------------------------------------ the records


def records_folder(results: Path, given: str | os.PathLike[str] | None) -> Path | None:
    """The records folder: the one given, else ``records/`` beside the results file if any.

    A data package names its files by relative paths below its own folder, so
    the records must be inside the results file's folder.
    """
    if given is None:
        found = results.parent / RECORDS_FOLDER
        return found if found.is_dir() else None
    folder = Path(given)
    if not folder.is_dir():
        what = "not a folder" if folder.exists() else "no such folder"
        raise AmscError(f"{folder}: {what}; " + opt("provenance")
                        + " needs the folder of the records")
    home = results.parent
    if _rel(folder, home) is None:
        raise AmscError(f"{folder}: not a folder below {home.absolute()}, where {results.name} "
                        f"and its {PACKAGE_FILE} are: a data package lists files by their path "
                        "below its own folder")
    return folder


def _rel(path: Path, home: Path) -> str | None:
    """``path`` relative to ``home``, POSIX-style; None when it is not below ``home``."""
    rel = os.path.relpath(path.resolve(), home.resolve())
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return Path(rel).as_posix()


def record_sources(rows: list[dict[str, str]], folder: Path, home: Path,
                   notes: list[str]) -> list[dict[str, str]]:
    """The sources entry of each record whose row is a line of the file, in line order.

    What is not listed is noted: files that are not records, records without
    their row in the file, rows without a record.
    """
    line_of = {tuple(cells_of(row)): i for i, row in enumerate(rows)}
    found: dict[int, Path] = {}
    unpaired = 0
    for path, record, why in iter_records(folder):
        if record is None:
            notes.append(f"not listed: {why}")
            continue
        i = line_of.get(tuple(cells_of(record["row"])))
        if i is None or i in found:
            unpaired += 1
        else:
            found[i] = path
    if unpaired:
        notes.append(f"{plural(unpaired, 'record')} in {folder} not listed: no line of the "
                     "results file holds its row")
    missing = len(rows) - len(found)
    if missing:
        notes.append(f"{plural(missing, 'row')} without a record in {folder}")
    sources = []
    for i in sorted(found):
        row = rows[i]
        sources.append({"title": f"provenance record: {row['config']} on {row['system']}, "
                                 f"{_count(row['nodes'], 'node')}, {_count(row['gpus'], 'gpu')}, "
                                 f"{row['timestamp']}",
                        "path": f"{_rel(found[i].parent, home)}/{found[i].name}"})
    return sources


def _count(cell: str, what: str) -> str:
    return f"{cell} {what}" + ("" if cell == "1" else "s")
