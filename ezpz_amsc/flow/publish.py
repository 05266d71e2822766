"""Where exported rows go: stdout, a results file, or the run's own folder, each with its
provenance records.

The one publish path of the command line (``export``) and the finalize hook: both hand
their export results and :class:`~ezpz_amsc.options.PublishOptions` to :func:`publish`,
so a row becomes cells, and cells a line, in one way only, behind one last guard
(:func:`~ezpz_amsc.results.schema.unsafe_cells`), and rows always go out before the
records that tell of them.

With a results file, records and rows are written together or not at all: the records
go out under the results file's lock, after its header and duplicate checks, as pending
records that take their names once the rows are in the file (records/folder.py), so
that even a crash between the two leaves nothing the next append does not finish. In
the run's own folder, ``amsc.csv`` (header and row) is written, then ``amsc.json``; if
the record cannot be written, the row is taken back.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ezpz_amsc.errors import AmscError
from ezpz_amsc.results.schema import cells_of, render_csv, unsafe_cells

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ezpz_amsc.flow.export import ExportResult
    from ezpz_amsc.options import ExportOptions, PublishOptions
    from ezpz_amsc.records.folder import RecordBatch
    from ezpz_amsc.results.append import Appended

# The finalize hook's files in the run directory, when no results file is named.
ROW_FILE = "amsc.csv"
RECORD_FILE = "amsc.json"


@dataclass
class Published:
    """What :func:`publish` wrote besides stdout."""

    appended: Appended | None = None  # rows appended, skipped, completed (None: stdout)
    records: list[Path] = field(default_factory=list)  # records written for this export
    completed: list[Path] = field(default_factory=list)  # an interrupted append's, now in place
    row_file: Path | None = None  # the run folder's amsc.csv, when that was the target


def check_targets(pub: PublishOptions) -> None:
    """Refuse a results file or records folder that cannot take rows, before any export."""
    if pub.append:  # the append machinery (the lock, the file's checks) only to append
        from ezpz_amsc.results.append import check_append_target

        check_append_target(pub.append)
    if pub.provenance:
        from ezpz_amsc.records.folder import check_record_folder

        check_record_folder(pub.provenance)


def publish(results: Sequence[ExportResult], opts: ExportOptions, pub: PublishOptions,
            out: TextIO | None = None) -> Published:
    """Write the rows where ``pub`` says: appended to ``pub.append`` (with one record each
    in ``pub.provenance``), beside the run in ``pub.run_folder``, else (CSV) to ``out`` when
    given. Nothing is written when one row fails the last guard."""
    for result in results:  # the last guard: every source of a cell checks it before
        unsafe = unsafe_cells(result.row)
        if unsafe:
            raise AmscError(f"{result.details.run_dir}: the row's {unsafe[0]}; not publishing it")
    rows = [cells_of(result.row) for result in results]
    if pub.run_folder is not None:
        return _into_run_folder(results, opts, Path(pub.run_folder))
    if not pub.append:
        if rows and out is not None:
            out.write(render_csv(rows, pub.header))
            out.flush()
        return Published()
    if not rows:
        return Published()
    # The lock, the header check and the duplicate search: loaded only to append.
    from ezpz_amsc.results.append import append_rows

    records = _records(results, opts, pub) if pub.provenance else None
    # The records' folders are made and taken back under the results file's lock only.
    appended = append_rows(pub.append, rows, lock_timeout_sec=pub.lock_timeout,
                           allow_duplicate=pub.allow_duplicate,
                           skip_existing=pub.skip_existing, hooks=records)
    if records is None:
        return Published(appended)
    return Published(appended, records.written, records.completed)


def _records(results: Sequence[ExportResult], opts: ExportOptions,
             pub: PublishOptions) -> RecordBatch:
    # Imported only with records to write: hashing loads OpenSSL into the process.
    from ezpz_amsc.records.folder import RecordBatch
    from ezpz_amsc.records.record import build_record

    assert pub.provenance is not None and pub.append is not None
    return RecordBatch(Path(pub.provenance), [build_record(r, opts, pub.append) for r in results],
                       Path(pub.append), pub.allow_duplicate)


def _into_run_folder(results: Sequence[ExportResult], opts: ExportOptions,
                     run_dir: Path) -> Published:
    """``amsc.csv`` (header + row), then ``amsc.json`` in the run directory, each whole.

    Each replaces an earlier file of its name. If the record cannot be written, the row
    just written is removed again: a row there always has its record beside it.
    """
    from ezpz_amsc.fs.create import create_file
    from ezpz_amsc.records.folder import write_record_file
    from ezpz_amsc.records.record import build_record

    if len(results) != 1:
        raise ValueError("a run folder takes the row of its own run")
    result = results[0]
    row_path, record_path = run_dir / ROW_FILE, run_dir / RECORD_FILE
    record = build_record(result, opts, str(row_path))
    create_file(row_path, render_csv([cells_of(result.row)], header=True).encode("utf-8"),
                replace=True)
    try:
        write_record_file(record_path, record)
    except BaseException:
        with contextlib.suppress(OSError):
            row_path.unlink()
        raise
    return Published(row_file=row_path, records=[record_path])
