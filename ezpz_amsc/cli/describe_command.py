"""``ezpz-amsc describe RESULTS_CSV``: write ``datapackage.json`` beside a results file
(:mod:`ezpz_amsc.flow.describe`), so that tools other than this one can read and
validate it."""

from __future__ import annotations

import click

from ezpz_amsc.cli import output
from ezpz_amsc.cli.edge import command
from ezpz_amsc.cli.params import RESULTS_CSV, provenance_option, quiet_option
from ezpz_amsc.errors import AmscError, ExitStatus
from ezpz_amsc.text import plural


@command(
    "describe",
    short_help="Write a results CSV's datapackage.json: schema and records.",
    usages=("RESULTS_CSV... [--provenance DIR]",),
    examples=(("results/runs.csv", "results/datapackage.json, listing results/records/"),
              ("aurora/runs.csv polaris/runs.csv", "each folder's datapackage.json"),
              ("runs.csv --provenance records/aurora/", "the records in another folder")),
    exit_codes={ExitStatus.OK: "datapackage.json written, or already up to date",
                ExitStatus.FAILED: ("the results file has problems, or datapackage.json cannot "
                                    "be read or written"),
                ExitStatus.USAGE: "bad command line"},
)
@click.argument("paths", metavar="RESULTS_CSV...", nargs=-1, required=True, type=RESULTS_CSV)
@provenance_option("The folder of the rows' provenance records, below RESULTS_CSV's folder "
                   "(one RESULTS_CSV only). Default: records/ beside each RESULTS_CSV, if it "
                   "exists.")
@quiet_option
def describe(paths: tuple[str, ...], provenance: str | None, quiet: bool) -> None:
    """Describe results CSVs as a Frictionless Data Package: datapackage.json beside each.

    RESULTS_CSV must pass 'check'. The package holds its resource with the
    row's Table Schema (each column's type, unit, bounds and source; an empty
    cell is a value not measured; the run identity is the primary key) and
    lists the provenance records of its rows as the resource's sources. Then
    'frictionless validate datapackage.json', pandas or R read the file without
    this tool. An existing datapackage.json is updated: only this file's
    resource is rewritten, and what people added (title, licenses,
    contributors, other resources) is kept. Files in one folder share its
    package, one resource each.
    """
    if provenance is not None and len(paths) > 1:
        raise click.UsageError("--provenance takes one RESULTS_CSV (its records are its own)")
    if len(paths) == 1:
        _describe(paths[0], provenance, quiet)
        return
    failed = 0
    for path in paths:
        try:
            _describe(path, None, quiet)
        except AmscError as e:
            output.errors([(path, e)])
            failed += 1
    if failed:
        raise AmscError(f"{failed} of {plural(len(paths), 'file')} not described")


def _describe(path: str, provenance: str | None, quiet: bool) -> None:
    from ezpz_amsc.flow.describe import describe as describe_package

    done = describe_package(path, provenance)
    output.notes(done.notes, quiet)
    listed = (f"; {plural(done.sources, 'provenance record')} in {done.records}"
              if done.records is not None else "")
    verb = "wrote" if done.written else "up to date:"
    click.echo(f"{done.path}: {verb} resource {done.resource} ({plural(done.rows, 'row')}"
               f"{listed})")
