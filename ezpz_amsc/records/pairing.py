"""Rows and their provenance records, paired: what ``check --provenance`` reports."""

from __future__ import annotations

import os
from pathlib import Path

from ezpz_amsc.records.folder import iter_records
from ezpz_amsc.results.schema import HEADER, run_key


def record_problems(path: str | os.PathLike[str], rows: list[tuple[int, dict[str, str]]],
                    folder: str | os.PathLike[str]) -> tuple[int, list[str]]:
    """Match a results file's rows with the provenance records in ``folder``.

    Returns (records read, problems): rows without a record, records without a
    row, records whose row differs from the line, files that are no record.
    Rows and records pair up by run identity (timestamp, system, config,
    nodes, gpus); where one identity has several (``--allow-duplicate``), equal
    rows pair first.
    """
    p = Path(path)
    by_key: dict[tuple[str, ...], tuple[list[tuple[int, dict[str, str]]],
                                        list[tuple[Path, dict[str, str]]]]] = {}
    problems: list[str] = []
    records = 0
    for line, row in rows:
        by_key.setdefault(run_key(row), ([], []))[0].append((line, row))
    for rec_path, rec, why in iter_records(folder):
        if rec is None:
            problems.append(str(why))  # names the file itself
            continue
        records += 1
        by_key.setdefault(run_key(rec["row"]), ([], []))[1].append((rec_path, rec["row"]))
    for key, (lines, recs) in by_key.items():
        for line, row in list(lines):  # equal pairs first
            twin = next((r for r in recs if _cells_differ(row, r[1]) == []), None)
            if twin is not None:
                lines.remove((line, row))
                recs.remove(twin)
        for (line, row), (rec_path, rec_row) in zip(lines, recs, strict=False):
            shown = "; ".join(f"{c} {row.get(c, '')!r} in the file, {rec_row[c]!r} in the record"
                              for c in _cells_differ(row, rec_row))
            problems.append(f"{p}:{line}: differs from its record {rec_path}: {shown}")
        for line, _ in lines[len(recs):]:
            problems.append(f"{p}:{line}: no provenance record in {folder}")
        for rec_path, _ in recs[len(lines):]:
            problems.append(f"{rec_path}: no row in {p} for its run ({', '.join(key)})")
    return records, problems


def _cells_differ(row: dict[str, str], rec_row: dict[str, str]) -> list[str]:
    return [c for c in HEADER if row.get(c, "") != rec_row[c]]
