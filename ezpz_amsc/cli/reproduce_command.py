"""``ezpz-amsc reproduce RECORD.json...`` (also ``ezpz-amsc --reproduce``): re-export the
run of a provenance record and say whether the row is still the same."""

from __future__ import annotations

import click

from ezpz_amsc.cli.edge import command
from ezpz_amsc.cli.params import RECORD_JSON, RUN_DIR
from ezpz_amsc.errors import AmscError, about


@command(
    "reproduce",
    short_help="Re-export provenance records' runs: is each row still the same?",
    usages=("RECORD.json... [--run-dir DIR]",),
    examples=(("results/records/*.json", "every recorded row, re-exported"),
              ("rec.json --run-dir /archive/run", "a run that moved since it was recorded")),
    exit_codes=(("0", "every row re-exported identically"),
                ("1", "a row differs, or a record cannot be read or re-exported"),
                ("2", "bad command line")),
)
@click.argument("records", metavar="RECORD.json...", nargs=-1, required=True, type=RECORD_JSON)
@click.option("--run-dir", type=RUN_DIR, metavar="DIR",
              help="Where the run is now, when it moved since it was recorded (one RECORD only).")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress line on stderr for a long batch (errors still shown).")
def reproduce(records: tuple[str, ...], run_dir: str | None, quiet: bool) -> None:
    """Re-export the run of each provenance record with the options it records.

    RECORD.json is a record written by 'export --provenance DIR'. The row is
    compared cell by cell with the recorded one, and the files it came from by
    sha256; the report goes to stdout. Run directories are found at the
    recorded absolute path: for a run that was moved or copied (another
    machine, an archive) pass --run-dir. Files are compared by their path inside
    the run directory, so a moved run reproduces the same.
    """
    if run_dir is not None and len(records) > 1:
        raise click.UsageError("--run-dir takes one RECORD.json (each record has its own run)")
    reproduce_all(list(records), run_dir, quiet)


def reproduce_all(records: list[str], run_dir: str | None, quiet: bool = False) -> None:
    """Report on every record; an :class:`AmscError` unless every row is identical."""
    import sys

    from ezpz_amsc.errors import plural
    from ezpz_amsc.records.reproduce import render, reproduce
    from ezpz_amsc.render.progress import Progress

    progress = Progress(len(records), "records", "reproduced", sys.stderr,
                        quiet=quiet or len(records) == 1)
    differ = failed = 0
    for n, path in enumerate(records, 1):
        try:
            rep = reproduce(path, run_dir)
        except AmscError as e:
            if len(records) == 1:
                raise
            progress.clear()
            click.echo(f"error: {about(path, e.format_message())}", err=True)
            failed += 1
        else:
            progress.clear()
            click.echo("\n".join(render(rep)))
            differ += not rep.identical
        progress.update(n)
    progress.clear()
    if len(records) == 1 and differ:
        raise AmscError("the re-exported row differs from the record")
    if differ or failed:
        of = plural(len(records), "record")
        what = [f"rows differ for {differ} of {of}"] if differ else []
        what += [f"{failed} of {of} could not be re-exported"] if failed else []
        raise AmscError("; ".join(what))
