"""Where exported rows go: stdout, or a results file, with their provenance records.

The one publish path of the command line (``export``) and the finalize hook:
both hand their export results and :class:`~ezpz_amsc.options.PublishOptions`
here, so a row becomes cells, and cells a line, in one way only.

With a results file, records and rows are written together or not at all:
the records go out under the results file's lock, after its header and
duplicate checks, and are taken back if the rows cannot be written.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ezpz_amsc.results.schema import cells_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ezpz_amsc.export import ExportResult
    from ezpz_amsc.options import ExportOptions, PublishOptions
    from ezpz_amsc.records.folder import RecordBatch

# The finalize hook's files in the run directory, when no results file is named.
ROW_FILE = "amsc.csv"
RECORD_FILE = "amsc.json"


def publish(results: Sequence[ExportResult], opts: ExportOptions, pub: PublishOptions,
            out: TextIO | None = None) -> list[Path]:
    """Append the rows to ``pub.append``, else write them (CSV) to ``out`` when given.

    With ``pub.provenance``, one record per row goes into that folder. Returns
    the record files written.
    """
    from ezpz_amsc.results.append import append_rows, write_stdout

    rows = [cells_of(result.row) for result in results]
    records = _records(results, opts, pub) if pub.provenance and results else None
    if rows and pub.append:
        # Under the results file's lock, after its checks: records, then rows, or neither.
        append_rows(pub.append, rows, lock_timeout_sec=pub.lock_timeout,
                    allow_duplicate=pub.allow_duplicate,
                    before_write=records.write if records is not None else None)
    elif records is not None:
        records.write()
    if rows and not pub.append and out is not None:
        write_stdout(rows, header=pub.header, out=out)
    return records.written if records is not None else []


def _records(results: Sequence[ExportResult], opts: ExportOptions,
             pub: PublishOptions) -> RecordBatch:
    # Imported only with records to write: hashing loads OpenSSL into the process.
    from ezpz_amsc.records.folder import RecordBatch
    from ezpz_amsc.records.record import build_record

    assert pub.provenance is not None
    return RecordBatch(Path(pub.provenance), [build_record(r, opts, pub.append) for r in results],
                       pub.allow_duplicate)


def publish_into_run_dir(result: ExportResult, opts: ExportOptions, run_dir: Path) -> Path:
    """``amsc.json``, then ``amsc.csv`` (header + row) in the run directory, each whole.

    Each replaces an earlier file of its name. If the row cannot be written,
    the record just written is removed again: a record always has its row
    beside it. Returns the row's file.
    """
    from ezpz_amsc.fs.create import create_file
    from ezpz_amsc.records.folder import write_record_file
    from ezpz_amsc.records.record import build_record
    from ezpz_amsc.results.schema import render_csv

    row_path, record_path = run_dir / ROW_FILE, run_dir / RECORD_FILE
    write_record_file(record_path, build_record(result, opts, str(row_path)))
    try:
        create_file(row_path, render_csv([cells_of(result.row)], header=True).encode("utf-8"),
                    replace=True)
    except BaseException:
        with contextlib.suppress(OSError):
            record_path.unlink()
        raise
    return row_path
