"""``check``: read a results file the way the dashboard does, and, with a records folder,
pair its rows with their provenance records.

Returns what was found as data (:class:`FileCheck`); the command line decides how to say
it (``ezpz_amsc.cli.check_command``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ezpz_amsc.flow.publish import ROW_FILE
from ezpz_amsc.results.package import RESULTS_FILE, package_notes
from ezpz_amsc.results.schema import HEADER, REQUIRED
from ezpz_amsc.results.validate import check_results_file, more_problems, sharing_notes
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
    more: int = 0  # problems found beyond those listed (results/schema.py MAX_PROBLEMS)

    @property
    def count(self) -> int:
        """Every problem found, listed or not."""
        return len(self.problems) + self.more

    @property
    def listed(self) -> list[Text]:
        """The problems as shown: those kept, and a line for the rest."""
        return [*self.problems, *more_problems(self.path, self.more)]

    @property
    def clean(self) -> bool:
        return not self.problems


# Names that make a file a results file whatever its first line holds: the layout's, and the
# one the end-of-training hook writes beside a run.
RESULTS_NAMES = (RESULTS_FILE, ROW_FILE)
_HEAD_BYTES = 64 << 10  # a header is a few hundred bytes


def is_results_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a results file to check among other CSV files (a pre-commit hook
    is given every staged one): named :data:`RESULTS_NAMES`, or its first line names the
    columns the dashboard requires. A file that cannot be read is one, so that check says
    why."""
    if os.path.basename(path) in RESULTS_NAMES:
        return True
    import csv

    from ezpz_amsc.fs.read import open_regular

    try:
        with open_regular(path) as f:
            head = f.read(_HEAD_BYTES).split(b"\n", 1)[0]
    except OSError:
        return True
    try:
        header = next(csv.reader([head.decode("utf-8-sig").rstrip("\r")]), [])
    except (UnicodeDecodeError, csv.Error):
        return False
    return set(REQUIRED) <= set(header)


def check_file(path: str | os.PathLike[str], provenance: str | None = None) -> FileCheck:
    """Check one results file (and its records in ``provenance``, when given)."""
    cells: list[tuple[int, dict[str, str]]] = []
    checked = check_results_file(
        path, on_cells=(lambda line, row, _offset: cells.append(
            (line, dict(zip(HEADER, row, strict=True))))) if provenance else None)
    found = FileCheck(os.fspath(path), checked.rows, list(checked.problems), checked.header_differs,
                      sharing_notes(path), provenance, more=checked.more)
    if provenance:
        from ezpz_amsc.records.folder import leftovers, sharing_note
        from ezpz_amsc.records.pairing import record_problems

        found.records, more = record_problems(path, cells, provenance)
        found.problems += more + leftovers(provenance)
        found.notes += [n for n in [sharing_note(provenance, path)] if n]
    found.notes += package_notes(path)
    return found
