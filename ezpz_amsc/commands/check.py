"""``ezpz-amsc check RESULTS_CSV`` (also ``ezpz-amsc --check``): read a results file
the way the dashboard does."""

from __future__ import annotations

import click

from ..cli import RESULTS_CSV, command, quiet_option
from ..errors import AmscError


@command(
    "check",
    short_help="Validate a results CSV the way the dashboard reads it.",
    usages=("RESULTS_CSV",),
    examples=(("results/amsc.csv", "every row readable, no run twice?"),),
    exit_codes=(("0", "the file is clean"),
                ("1", "problems found (listed on stderr), or the file cannot be read"),
                ("2", "bad command line")),
)
@click.argument("path", metavar="RESULTS_CSV", type=RESULTS_CSV)
@quiet_option
def check(path: str, quiet: bool) -> None:
    """Validate a results CSV the way the dashboard reads it.

    RESULTS_CSV is read line by line: its header, the required columns, cells
    that must parse as numbers, and the same run appearing twice. Each problem
    goes to stderr as PATH:LINE: what; a clean file gets one line on stdout.
    Notes say when other members of the file's group could not append to it.
    """
    check_file(path, quiet)


def check_file(path: str, quiet: bool = False) -> None:
    from ..check import check_results_file, sharing_notes
    from ..errors import plural

    rows, problems = check_results_file(path)
    for note in [] if quiet else sharing_notes(path):
        click.echo(f"note: {note}", err=True)
    for p in problems:
        click.echo(p, err=True)
    if problems:
        raise AmscError(f"{path}: {plural(len(problems), 'problem')} in {plural(rows, 'row')}")
    click.echo(f"{path}: {plural(rows, 'row')}, all readable by the dashboard")
