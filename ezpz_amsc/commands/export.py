"""``ezpz-amsc [export] RUN_DIR...``: one CSV row per run directory.

Also the ``ezpz export-amsc`` command a host CLI loads from the
``ezpz.commands`` entry point: this command object exactly, not the group.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from ..cli import (
    RESULTS_CSV,
    command,
    export_options,
    option_errors,
    quiet_option,
    results_file_options,
    row_options,
    run_dirs_argument,
)
from ..errors import about
from ..options import CONFIG_EXAMPLE, check_lock_timeout


@command(
    "export",
    short_help="Export finished ezpz run directories as CSV rows, one per run.",
    usages=("RUN_DIR... --config LABEL [OPTIONS]", "--check RESULTS_CSV"),
    sections=(
        ("Row values", ("config", "status", "error", "system", "nodes", "gpus", "timestamp",
                        "wall_time_sec")),
        ("Reducing per-step series", ("warmup", "reducer", "attempt")),
        ("Where rows go", ("append", "no_header", "allow_duplicate", "lock_timeout",
                           "keep_going")),
        ("Reporting", ("out_format", "explain", "quiet")),
    ),
    examples=(
        (f"RUN_DIR --config {CONFIG_EXAMPLE}", "one row, with header, on stdout"),
        ("RUN_DIR --config LABEL --append results.csv", "add it to a results file"),
        ("runs/*/ --config LABEL --append results.csv", "a batch: every row or none"),
        ("RUN_DIR --config LABEL --explain", "where each number came from"),
        ("--check results.csv", "read it as the dashboard does"),
    ),
)
@run_dirs_argument
@row_options
@results_file_options
@click.option("--keep-going", is_flag=True,
              help="With several RUN_DIRs: write the rows that worked, report the others "
                   "(exit status stays 1).")
@click.option("--format", "out_format", type=click.Choice(["csv", "json"]), default="csv",
              show_default=True,
              help="stdout format. json: JSON Lines, one object per run with the row's exact CSV "
                   "strings and the details (jq -s reads several as one array); --append still "
                   "writes CSV.")
@click.option("--explain", is_flag=True,
              help="After the row, report on stderr where its numbers came from.")
@quiet_option
@click.option("--check", "check_path", type=RESULTS_CSV, metavar="RESULTS_CSV",
              help="Validate a results CSV instead of exporting: the check command.")
@click.pass_context
def export(ctx: click.Context, run_dirs: tuple[str, ...], append: str | None, no_header: bool,
           allow_duplicate: bool, lock_timeout: float, keep_going: bool, out_format: str,
           explain: bool, quiet: bool, check_path: str | None, **_row: Any) -> None:
    """Export finished ezpz run directories as AmSC benchmark CSV rows, one per run.

    RUN_DIR is the directory ezpz's History wrote: metrics JSONL, run_info.json
    and a report. Rows go to stdout (or --append PATH) in the order given; notes
    about what was dropped or derived go to stderr.
    """
    if check_path is not None:
        if run_dirs:
            raise click.UsageError("--check takes no RUN_DIR")
        from .check import check_file

        check_file(check_path, quiet)
        return
    if not run_dirs:
        raise click.UsageError("missing argument 'RUN_DIR'")
    opts = export_options(ctx)
    with option_errors(ctx):
        check_lock_timeout(lock_timeout)

    from ..export import export_many
    from ..sink import check_append_target

    if append:
        check_append_target(append)  # fail before any work
    done, failed = export_many(list(run_dirs), opts)
    batch = len(run_dirs) > 1
    if failed and not batch:
        raise failed[0][1]
    if failed and not keep_going:
        _report_failures(failed, written=False)
        ctx.exit(1)
    _write_rows([result for _, result in done], append, no_header, out_format,
                lock_timeout, allow_duplicate)
    # Notes only once the rows are out: a failed command prints its error line alone.
    from ..export import batch_notes, plural

    if explain:  # the report lists every note itself, after the row
        for _, result in done:
            _write_explain(result, quiet)
    elif not quiet:
        notes = (batch_notes([(d, r.notes) for d, r in done], len(run_dirs)) if batch
                 else [note for _, result in done for note in result.notes])
        for note in notes:
            click.echo(f"note: {note}", err=True)
    if append and done and not quiet:
        click.echo(f"note: appended {plural(len(done), 'row')} to {append}", err=True)
    if failed:
        _report_failures(failed, written=True)
        ctx.exit(1)


def _write_rows(results: list[Any], append: str | None, no_header: bool, out_format: str,
                lock_timeout: float, allow_duplicate: bool) -> None:
    from ..sink import append_rows, write_stdout

    rows = [list(result.row.values()) for result in results]
    if rows and append:
        append_rows(append, rows, lock_timeout_sec=lock_timeout, allow_duplicate=allow_duplicate)
    elif rows and out_format == "csv":
        write_stdout(rows, header=not no_header, out=sys.stdout)
    if out_format == "json":
        from ..explain import to_json

        sys.stdout.write("".join(to_json(result) + "\n" for result in results))
        sys.stdout.flush()


def _report_failures(failed: list[tuple[str, Any]], written: bool) -> None:
    for run_dir, err in failed:
        click.echo(f"error: {about(run_dir, err.format_message())}", err=True)
    n = len(failed)
    click.echo(f"error: {n} run{'s' if n > 1 else ''} failed; "
               + ("the other rows were written" if written else
                  "nothing written (pass --keep-going to write the rows that worked)"),
               err=True)


def _write_explain(result: Any, quiet: bool) -> None:
    from ..explain import render, use_colour

    err = sys.stderr
    err.write(render(result, colour=use_colour(err), quiet=quiet))
    err.flush()
