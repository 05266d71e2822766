"""``ezpz-amsc reproduce RECORD.json...`` (also ``ezpz-amsc --reproduce``): re-export the
run of a provenance record and say whether the row is still the same."""

from __future__ import annotations

import click

from ezpz_amsc.cli import output
from ezpz_amsc.cli.edge import command
from ezpz_amsc.cli.params import RECORD_JSON, RUN_DIR
from ezpz_amsc.errors import AmscError, ExitStatus


@command(
    "reproduce",
    short_help="Re-export provenance records' runs: is each row still the same?",
    usages=("RECORD.json... [--run-dir DIR] [-q] [--format json]",),
    examples=(("results/records/*.json", "every recorded row, re-exported"),
              ("rec.json --run-dir /archive/run", "a run that moved since it was recorded"),
              ("results/records/*.json --run-dir /archive", "runs moved into one folder"),
              ("results/records/*.json -q", "only the rows that differ")),
    exit_codes={ExitStatus.OK: "every row re-exported identically",
                ExitStatus.FAILED: "a row differs, or a record cannot be read or re-exported",
                ExitStatus.USAGE: "bad command line"},
)
@click.argument("records", metavar="RECORD.json...", nargs=-1, required=True, type=RECORD_JSON)
@click.option("--run-dir", type=RUN_DIR, metavar="DIR",
              help="Where the runs are now, when they moved since they were recorded: the run "
                   "directory itself (one record), or the folder that holds the moved runs "
                   "under their recorded names (DIR/NAME, tried first).")
@click.option("-q", "--quiet", is_flag=True,
              help="Print only the records whose row differs, and no progress line on stderr "
                   "for a long batch (errors still shown).")
@click.option("--format", "out_format", type=click.Choice(["text", "json"]), default="text",
              show_default=True,
              help="json: JSON Lines, one object per record re-exported (identical, the cells "
                   "that differ, the source files that changed).")
def reproduce(records: tuple[str, ...], run_dir: str | None, quiet: bool = False,
              out_format: str = "text") -> None:
    """Re-export the run of each provenance record with the options it records.

    RECORD.json is a record written by 'export --provenance DIR'. The row is
    compared cell by cell with the recorded one, and the files it came from by
    sha256; the report goes to stdout. Run directories are found at the
    recorded absolute path: for runs that were moved or copied (another
    machine, an archive) pass --run-dir. Files are compared by their path inside
    the run directory, so a moved run reproduces the same.
    """
    reproduce_all(list(records), run_dir, quiet, out_format)


def reproduce_all(records: list[str], run_dir: str | None, quiet: bool = False,
                  out_format: str = "text") -> None:
    """Report on every record; an :class:`AmscError` unless every row is identical."""
    import sys

    from ezpz_amsc.cli.progress import Progress
    from ezpz_amsc.flow.reproduce import render, reproduce
    from ezpz_amsc.text import plural

    progress = Progress(len(records), "records", "reproduced", sys.stderr,
                        quiet=quiet or len(records) == 1)
    differ = failed = 0
    several = len(records) > 1
    for n, path in enumerate(records, 1):
        try:
            rep = reproduce(path, run_dir, runs_in=several)
        except AmscError as e:
            if not several:
                raise
            progress.clear()
            output.errors([(path, e)])
            failed += 1
        else:
            progress.clear()
            if out_format == "json":
                click.echo(output.json_text(rep.to_data()))
            elif not (quiet and rep.identical):
                click.echo("\n".join(render(rep)))
            differ += not rep.identical
        progress.update(n)
    progress.clear()
    if not several and differ:
        raise AmscError("the re-exported row differs from the record")
    if differ or failed:
        of = plural(len(records), "record")
        what = [f"rows differ for {differ} of {of}"] if differ else []
        what += [f"{failed} of {of} could not be re-exported"] if failed else []
        raise AmscError("; ".join(what))
