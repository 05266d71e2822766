"""``ezpz-amsc check RESULTS_CSV`` (also ``ezpz-amsc --check``): read a results file
the way the dashboard does."""

from __future__ import annotations

import click

from ezpz_amsc.cli.edge import command
from ezpz_amsc.cli.params import RESULTS_CSV, provenance_option, quiet_option
from ezpz_amsc.errors import AmscError


@command(
    "check",
    short_help="Validate a results CSV the way the dashboard reads it.",
    usages=("RESULTS_CSV... [--provenance DIR]",),
    examples=(("results/amsc.csv", "every row readable, no run twice?"),
              ("results/amsc.csv --provenance records/", "and a record for every row?")),
    exit_codes=(("0", "the files are clean (and every row matches its record)"),
                ("1", "problems found (listed on stderr), or a file cannot be read"),
                ("2", "bad command line")),
)
@click.argument("paths", metavar="RESULTS_CSV...", nargs=-1, required=True, type=RESULTS_CSV)
@provenance_option("Also match the rows with the provenance records in DIR: rows without a "
                   "record, records without a row, records whose row differs from the line "
                   "(one RESULTS_CSV only).")
@quiet_option
def check(paths: tuple[str, ...], provenance: str | None, quiet: bool) -> None:
    """Validate a results CSV the way the dashboard reads it.

    RESULTS_CSV is read line by line: its header, the required columns, cells
    that must parse as numbers, each column's bounds, and the same run
    appearing twice. Each problem goes to stderr as PATH:LINE: what; a clean
    file gets one line on stdout. Notes say when other members of the file's
    group could not append to it, and when a datapackage.json beside it gives
    another schema. Several files are checked one by one (a pre-commit hook).
    """
    if provenance is not None and len(paths) > 1:
        raise click.UsageError("--provenance takes one RESULTS_CSV (its records are its own)")
    if len(paths) == 1:
        check_file(paths[0], quiet, provenance)
        return
    from ezpz_amsc.errors import about, plural

    failed = 0
    for path in paths:
        try:
            check_file(path, quiet)
        except AmscError as e:
            click.echo(f"error: {about(path, e.format_message())}", err=True)
            failed += 1
    if failed:
        raise AmscError(f"{failed} of {plural(len(paths), 'file')} not clean")


def check_file(path: str, quiet: bool = False, provenance: str | None = None) -> None:
    from ezpz_amsc.errors import plural
    from ezpz_amsc.records.pairing import record_problems
    from ezpz_amsc.results.package import package_notes
    from ezpz_amsc.results.validate import check_results_file, sharing_notes

    cells: list[tuple[int, dict[str, str]]] = []
    rows, problems = check_results_file(
        path, on_cells=(lambda line, row: cells.append((line, row))) if provenance else None)
    records = 0
    notes = [] if quiet else sharing_notes(path)
    if provenance:
        from ezpz_amsc.records.folder import leftovers, sharing_note

        records, more = record_problems(path, cells, provenance)
        problems += more + leftovers(provenance)
        notes += [] if quiet else [n for n in [sharing_note(provenance, path)] if n]
    notes += [] if quiet else package_notes(path)
    for note in notes:
        click.echo(f"note: {note}", err=True)
    for p in problems:
        click.echo(p, err=True)
    with_records = f" and {plural(records, 'record')}" if provenance else ""
    if problems:
        raise AmscError(f"{path}: {plural(len(problems), 'problem')} in {plural(rows, 'row')}"
                        f"{with_records}")
    click.echo(f"{path}: {plural(rows, 'row')}, all readable by the dashboard"
               + (f"; {plural(records, 'record')} in {provenance}, one per row"
                  if provenance else ""))
