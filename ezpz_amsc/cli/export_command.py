"""``ezpz-amsc [export] RUN_DIR...``: one CSV row per run directory.

Also the ``ezpz export-amsc`` command a host CLI loads from the
``ezpz.commands`` entry point: this command object exactly, not the group.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import click

from ezpz_amsc.cli import output
from ezpz_amsc.cli.edge import command, option_errors
from ezpz_amsc.cli.params import (
    RECORD_JSON,
    RESULTS_CSV,
    export_options,
    provenance_option,
    quiet_option,
    results_file_options,
    row_options,
    run_dirs_argument,
)
from ezpz_amsc.errors import ExitStatus
from ezpz_amsc.options import CONFIG_EXAMPLE, ExportOptions, PublishOptions
from ezpz_amsc.text import plural

if TYPE_CHECKING:
    from ezpz_amsc.flow.export import ExportResult
    from ezpz_amsc.flow.publish import Published


@command(
    "export",
    short_help="Export finished ezpz run directories as CSV rows, one per run.",
    usages=("RUN_DIR... --config LABEL [OPTIONS]", "--check RESULTS_CSV"),
    sections=(
        ("Row values", ("config", "status", "error", "system", "nodes", "gpus", "timestamp",
                        "wall_time_sec")),
        ("Reducing per-step series", ("warmup", "reducer", "attempt")),
        ("Where rows go", ("append", "no_header", "allow_duplicate", "skip_existing",
                           "lock_timeout", "keep_going", "provenance")),
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
                   "strings (row), the same cells as numbers (values) and the details (jq -s "
                   "reads several as one array); --append still writes CSV.")
@click.option("--explain", is_flag=True,
              help="After the row, report on stderr where its numbers came from.")
@provenance_option("With --append: write one JSON record per row into DIR (cells, options, "
                   "sha256 of the files read, run_info), rows and records together or not at "
                   "all.")
@quiet_option
@click.option("--check", "check_path", type=RESULTS_CSV, metavar="RESULTS_CSV",
              help="Validate a results CSV instead of exporting: the check command.")
@click.option("--reproduce", "reproduce_path", type=RECORD_JSON, metavar="RECORD.json",
              help="Re-export a provenance record's run and compare: the reproduce command.")
@click.pass_context
def export(ctx: click.Context, /, run_dirs: tuple[str, ...], append: str | None, no_header: bool,
           allow_duplicate: bool, skip_existing: bool, lock_timeout: float, keep_going: bool,
           out_format: str, explain: bool, provenance: str | None, quiet: bool,
           check_path: str | None, reproduce_path: str | None, **_row: Any) -> None:
    """Export finished ezpz run directories as AmSC benchmark CSV rows, one per run.

    RUN_DIR is the directory ezpz's History wrote: metrics JSONL, run_info.json
    and a report. Rows go to stdout (or --append PATH) in the order given; notes
    about what was dropped or derived go to stderr.
    """
    if check_path is not None or reproduce_path is not None:
        flag = "--check" if check_path is not None else "--reproduce"
        if run_dirs or (check_path and reproduce_path):
            raise click.UsageError(f"{flag} takes no RUN_DIR" if run_dirs else
                                   "--check and --reproduce are two commands; pass one")
        # The old spellings of two subcommands: run them as the group would.
        from ezpz_amsc.cli.group import COMMANDS, load_command

        if check_path is not None:
            ctx.invoke(load_command(COMMANDS["check"]), paths=(check_path,),
                       provenance=provenance, quiet=quiet)
        else:
            ctx.invoke(load_command(COMMANDS["reproduce"]), records=(reproduce_path,), quiet=quiet,
                       run_dir=None)
        return
    if not run_dirs:
        raise click.UsageError("missing argument 'RUN_DIR'")
    opts = export_options(ctx)
    with option_errors(ctx):
        pub = PublishOptions(append=append, header=not no_header,
                             allow_duplicate=allow_duplicate, skip_existing=skip_existing,
                             lock_timeout=lock_timeout, provenance=provenance)

    from ezpz_amsc.flow.publish import check_targets

    check_targets(pub)  # fail before any work
    batch = len(run_dirs) > 1
    done, failed = _export_all(list(run_dirs), opts, bool(provenance), quiet)
    if failed and not batch:
        raise failed[0][1]
    if failed and not keep_going:
        _report_failures(failed, written=None)
        ctx.exit(ExitStatus.FAILED)
    published = _write_rows([result for _, result in done], opts, pub, out_format)
    # Notes only once the rows are out: a failed command prints its error line alone.
    if explain:  # the report lists every note itself, after the row
        for _, result in done:
            _write_explain(result, quiet)
    else:
        output.notes(output.batch_notes([(d, r.notes) for d, r in done], len(run_dirs)) if batch
                     else [note for _, result in done for note in result.notes], quiet)
    if done:
        output.notes(_append_notes(published, [result for _, result in done], append,
                                   provenance), quiet)
    if failed:
        _report_failures(failed, written=_rows_written(published, len(done), append),
                         append=append)
        ctx.exit(ExitStatus.FAILED)


def _export_all(run_dirs: list[str], opts: ExportOptions, hash_files: bool, quiet: bool
                ) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """Every run exported, with a progress line on a terminal when a batch takes long."""
    from ezpz_amsc.flow.export import export_many

    if len(run_dirs) == 1:  # one run shows no progress line
        return export_many(run_dirs, opts, hash_files=hash_files)
    from ezpz_amsc.cli.progress import Progress

    progress = Progress(len(run_dirs), "runs", "exported", sys.stderr, quiet=quiet)
    try:
        return export_many(run_dirs, opts, hash_files=hash_files, progress=progress.update)
    finally:
        progress.clear()


def _write_rows(results: list[ExportResult], opts: ExportOptions, pub: PublishOptions,
                out_format: str) -> Published:
    """Rows (and records) out; returns what was written besides stdout."""
    from ezpz_amsc.flow.publish import publish

    published = publish(results, opts, pub, out=sys.stdout if out_format == "csv" else None)
    if out_format == "json":
        told = _append_outcomes(published, len(results), pub.append)
        sys.stdout.write("".join(output.json_text({**result.to_data(), **told[i]}) + "\n"
                                 for i, result in enumerate(results)))
        sys.stdout.flush()
    return published


def _append_outcomes(published: Published, count: int, append: str | None
                     ) -> list[dict[str, Any]]:
    """Per row, what ``--append`` did with it, for ``--format json``: ``appended``,
    ``skipped`` (``--skip-existing``: the run is at ``line`` already) or ``completed`` (an
    interrupted export had appended it). Nothing without ``--append``."""
    out: list[dict[str, Any]] = [{} for _ in range(count)]
    done = published.appended
    if append is None or done is None:
        return out
    for i in done.written:
        out[i] = {"append": {"file": append, "outcome": "appended"}}
    for i, existing in done.skipped:
        out[i] = {"append": {"file": append, "outcome": "skipped", "line": existing.line}}
    for i in done.completed:
        out[i] = {"append": {"file": append, "outcome": "completed"}}
    return out


def _append_notes(published: Published, results: list[ExportResult], append: str | None,
                  provenance: str | None) -> list[str]:
    """What the append did: rows skipped (--skip-existing) or finished, rows and records out."""
    from ezpz_amsc.results.schema import HEADER, cells_of, run_key

    out = published.appended
    if out is None:
        return []
    notes = []
    for i, existing in out.skipped:
        row = cells_of(results[i].row)
        differ = [f"{c} {old!r} there, {new!r} now"
                  for c, old, new in zip(HEADER, existing.cells, row, strict=False) if old != new]
        how = "" if not differ else f" with other values ({'; '.join(differ)})"
        notes.append(f"the run ({', '.join(run_key(results[i].row))}) is already at line "
                     f"{existing.line} of {append}{how}; skipped it (--skip-existing)")
    for i in out.completed:
        notes.append(f"the run ({', '.join(run_key(results[i].row))}) was already in {append}, "
                     "appended by an interrupted export; not appended again")
    if out.written:
        notes.append(f"appended {plural(len(out.written), 'row')} to {append}")
    if published.completed:
        notes.append(f"put {plural(len(published.completed), 'provenance record')} of an "
                     f"interrupted export in place in {provenance}")
    if published.records:
        notes.append(f"wrote {plural(len(published.records), 'provenance record')} to "
                     f"{provenance}")
    return notes


def _rows_written(published: Published, exported: int, append: str | None) -> int:
    """How many of the ``exported`` rows went out: all of them on stdout; to a results file,
    those appended (``--skip-existing`` skips some, an interrupted export wrote others)."""
    if not append:
        return exported
    return len(published.appended.written) if published.appended is not None else 0


def _report_failures(failed: list[tuple[str, Any]], written: int | None,
                     append: str | None = None) -> None:
    """An error line per failed run, then one that says what was written: ``written`` rows
    (None: nothing, the batch stopped), to stdout or appended to ``append``."""
    output.errors(failed)
    if written is None:
        outcome = "nothing written (pass --keep-going to write the rows that worked)"
    elif written == 0:
        outcome = "no row written"
    elif append:
        outcome = f"{plural(written, 'row')} appended to {append}"
    else:
        outcome = f"{plural(written, 'row')} written to stdout"
    click.echo(f"error: {plural(len(failed), 'run')} failed; {outcome}", err=True)


def _write_explain(result: Any, quiet: bool) -> None:
    from ezpz_amsc.cli.explain import render
    from ezpz_amsc.cli.output import use_colour

    err = sys.stderr
    err.write(render(result, colour=use_colour(err), quiet=quiet))
    err.flush()
