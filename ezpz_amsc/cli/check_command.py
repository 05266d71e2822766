"""``ezpz-amsc check RESULTS_CSV`` (also ``ezpz-amsc --check``): read a results file
the way the dashboard does."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from ezpz_amsc.cli import output
from ezpz_amsc.cli.edge import command
from ezpz_amsc.cli.params import RESULTS_CSV, provenance_option, quiet_option
from ezpz_amsc.errors import AmscError, ExitStatus
from ezpz_amsc.text import plural

if TYPE_CHECKING:
    from ezpz_amsc.flow.check import FileCheck


@command(
    "check",
    short_help="Validate a results CSV the way the dashboard reads it.",
    usages=("RESULTS_CSV... [--provenance DIR] [--format text|json]",
            "--results-only CSV_FILE...",),
    examples=(("results/runs.csv", "every row readable, no run twice?"),
              ("results/runs.csv --provenance results/records/", "and a record for every row?"),
              ("--results-only $(git ls-files '*.csv')", "the results files among CSV files")),
    exit_codes={ExitStatus.OK: "the files are clean (and every row matches its record)",
                ExitStatus.FAILED: "problems found (listed on stderr), or a file cannot be read",
                ExitStatus.USAGE: "bad command line"},
)
@click.argument("paths", metavar="RESULTS_CSV...", nargs=-1, required=True, type=RESULTS_CSV)
@provenance_option("Also match the rows with the provenance records in DIR: rows without a "
                   "record, records without a row, records whose row differs from the line "
                   "(one RESULTS_CSV only).")
@quiet_option
@click.option("--format", "out_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True,
              help="json: one object per file on stdout (rows, records, problems, notes, "
                   "clean), also when there are problems; stderr as with text.")
@click.option("--results-only", is_flag=True,
              help="Check only the results files among the files given (named runs.csv or "
                   "amsc.csv, or whose header names the dashboard's columns) and pass over "
                   "other CSV files; say so when none is one. For a pre-commit hook, which is "
                   "given every staged .csv.")
def check(paths: tuple[str, ...], provenance: str | None, quiet: bool,
          out_format: str = "text", results_only: bool = False) -> None:
    """Validate a results CSV the way the dashboard reads it.

    RESULTS_CSV is read line by line: its header, the required columns, cells
    that must parse as numbers, each column's bounds, and the same run
    appearing twice. Each problem goes to stderr as PATH:LINE: what; a clean
    file gets one line on stdout (not with -q). Notes say when other members of
    the file's group could not append to it (only for a group with other
    members, or a shared folder), and when a datapackage.json beside it gives
    another schema. Several files are checked one by one (a pre-commit hook).
    """
    if results_only:
        from ezpz_amsc.flow.check import is_results_file

        given = len(paths)
        paths = tuple(p for p in paths if is_results_file(p))
        if not paths:
            if not quiet:
                click.echo(f"no results file among the {plural(given, 'file')} given (none is "
                           "named runs.csv or amsc.csv or has the dashboard's columns); "
                           "nothing to check")
            return
    if provenance is not None and len(paths) > 1:
        raise click.UsageError("--provenance takes one RESULTS_CSV (its records are its own)")
    if len(paths) == 1:
        check_file(paths[0], quiet, provenance, out_format)
        return
    failed = 0
    for path in paths:
        try:
            check_file(path, quiet, out_format=out_format)
        except AmscError as e:
            output.errors([(path, e)])  # where it belongs, between the files' lines
            failed += 1
    if failed:
        raise AmscError(f"{failed} of {plural(len(paths), 'file')} not clean")


def check_file(path: str, quiet: bool = False, provenance: str | None = None,
               out_format: str = "text") -> None:
    """Check one file and say what was found; an :class:`AmscError` unless it is clean."""
    from ezpz_amsc.flow.check import check_file as check

    found = check(path, provenance)
    output.notes(found.notes, quiet)
    problems = [output.say(p) for p in found.listed]
    for p in problems:
        click.echo(p, err=True)
    if out_format == "json":  # the data on stdout, whatever the verdict
        click.echo(output.json_text({
            "file": path, "rows": found.rows, "records": found.records if provenance else None,
            "provenance": provenance, "clean": found.clean, "problems": problems,
            "notes": found.notes}))
    if not found.clean:
        raise AmscError(f"{path}: {_problems_text(found)}")
    if out_format == "text" and not quiet:
        click.echo(f"{path}: {plural(found.rows, 'row')}, all readable by the dashboard"
                   + (f"; {plural(found.records, 'record')} in {provenance}, one per row"
                      if provenance else ""))


def _problems_text(found: FileCheck) -> str:
    """``3 problems in 10 rows``; a header problem is named apart (it is in no row)."""
    with_records = f" and {plural(found.records, 'record')}" if found.provenance else ""
    in_rows = f"in {plural(found.rows, 'row')}{with_records}"
    if not found.header_differs:
        return f"{plural(found.count, 'problem')} {in_rows}"
    if found.count == 1:
        return f"the header differs from this tool's (no other problem {in_rows})"
    more = plural(found.count - 1, "problem")
    return f"the header differs from this tool's, and {more} {in_rows}"
