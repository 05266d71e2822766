"""``check``: read a results file the way the dashboard does, and, with a records folder,
pair its rows with their provenance records.

Returns what was found as data (:class:`FileCheck`); the command line decides how to say
it (``ezpz_amsc.cli.check_command``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ezpz_amsc.results.package import package_notes
from ezpz_amsc.results.schema import HEADER
from ezpz_amsc.results.validate import check_results_file, sharing_notes
from ezpz_amsc.text import Text


@dataclass
class FileCheck:
    """One results file checked: its rows, problems (``PATH:LINE: what``) and notes."""

    path: str
    rows: int
    problems: list[Text]
    header_differs: bool  # the first problem is the header's (it is in no row)
    notes: list[str] = field(default_factory=list)
    provenance: str | None = None  # the records folder paired with the rows
    records: int = 0  # records read from it

    @property
    def clean(self) -> bool:
        return not self.problems


def check_file(path: str | os.PathLike[str], provenance: str | None = None) -> FileCheck:
    """Check one results file (and its records in ``provenance``, when given)."""
    cells: list[tuple[int, dict[str, str]]] = []
    checked = check_results_file(
        path, on_cells=(lambda line, row, _offset: cells.append(
            (line, dict(zip(HEADER, row, strict=True))))) if provenance else None)
    found = FileCheck(os.fspath(path), checked.rows, list(checked.problems), checked.header_differs,
                      sharing_notes(path), provenance)
    if provenance:
        from ezpz_amsc.records.folder import leftovers, sharing_note
        from ezpz_amsc.records.pairing import record_problems

        found.records, more = record_problems(path, cells, provenance)
        found.problems += more + leftovers(provenance)
        found.notes += [n for n in [sharing_note(provenance, path)] if n]
    found.notes += package_notes(path)
    return found
