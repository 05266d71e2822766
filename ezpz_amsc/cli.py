"""The ``export-amsc`` click command: a thin layer over :mod:`ezpz_amsc.export`.

This module is what the ``ezpz.commands`` entry point loads on every ``ezpz``
call, so it imports only click; numpy and the pipeline load when the command
actually runs.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from .errors import AmscError, AmscUsageError

REDUCER_NAMES = ("median", "mean", "max", "min", "last")  # mirrors reduce.REDUCERS


class _OneLineErrors(click.Command):
    """Turn click's multi-line usage errors into the one ``error:`` line of SPEC §2.7."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as e:
            if isinstance(e, AmscError):
                raise
            msg = e.format_message()
            raise AmscUsageError(msg[:1].lower() + msg[1:]) from None


@click.command(
    "export-amsc",
    cls=_OneLineErrors,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.argument("run_dirs", metavar="RUN_DIR...", nargs=-1)
@click.option("--config", "config", metavar="LABEL",
              help="Benchmark label for the row, e.g. agpt-2b/bs1/seq2048/tp1 (required).")
@click.option("--system", metavar="NAME", help="Facility name. Default: MACHINE from provenance.")
@click.option("--nodes", type=int, metavar="N",
              help="Nodes used. Default: ceil(ranks / GPUS_PER_NODE), else NUM_NODES.")
@click.option("--gpus", type=int, metavar="N",
              help="GPUs (ranks) used. Default: max(WORLD_SIZE_IN_USE, world_size).")
@click.option("--status", type=click.Choice(["pass", "fail"]), default="pass", show_default=True,
              help="Outcome of the run; it cannot be inferred.")
@click.option("--error", "error_text", default="", metavar="TEXT",
              help="Note for a failed run (the error column).")
@click.option("--warmup", type=int, default=1, show_default=True, metavar="N",
              help="Leading steps dropped before reducing (N >= 0).")
@click.option("--reducer", default="median", show_default=True, metavar="NAME",
              help=f"How per-step series become one number: {', '.join(REDUCER_NAMES)}.")
@click.option("--wall-time-sec", type=float, metavar="SECONDS",
              help="Scheduler's wall time. Default: sum of step times (excludes setup).")
@click.option("--timestamp", metavar="YYYY-MM-DDTHH:MM:SSZ",
              help="Run start in UTC. Default: the first step's timestamp.")
@click.option("--attempt", metavar="last|N",
              help="When the records hold several attempts (a retried or resumed job: step "
                   "numbers start again, or the world size changes), export only this one: "
                   "'last' or its number, 1 = first. Default: refuse and list them.")
@click.option("--append", "append_path", metavar="PATH",
              help="Append the row to this results CSV (created with a header if new).")
@click.option("--no-header", is_flag=True, help="Omit the header line on stdout.")
@click.option("--allow-duplicate", is_flag=True,
              help="Append even if the file already has this run (same timestamp, system, "
                   "config, nodes, gpus).")
@click.option("--lock-timeout", type=float, default=60.0, show_default=True, metavar="SECONDS",
              help="How long --append waits for the results file's lock.")
@click.option("--keep-going", is_flag=True,
              help="With several RUN_DIRs: write the rows that worked, report the others "
                   "(exit status stays non-zero).")
@click.option("--check", "check_path", metavar="PATH",
              help="Validate a results CSV the way the dashboard reads it; no RUN_DIR needed.")
@click.option("--format", "out_format", type=click.Choice(["csv", "json"]), default="csv",
              show_default=True,
              help="stdout format; json: one object per run with the row's exact CSV strings "
                   "and the details. --append always writes CSV.")
@click.option("--explain", is_flag=True,
              help="After the row, report on stderr where its numbers came from.")
@click.option("-q", "--quiet", is_flag=True, help="No notes on stderr (errors still shown).")
@click.pass_context
def export_amsc(ctx: click.Context, run_dirs: tuple[str, ...], config: str | None,
                system: str | None, nodes: int | None, gpus: int | None, status: str,
                error_text: str, warmup: int, reducer: str, wall_time_sec: float | None,
                timestamp: str | None, attempt: str | None, append_path: str | None,
                no_header: bool,
                allow_duplicate: bool, lock_timeout: float, keep_going: bool,
                check_path: str | None, out_format: str, explain: bool, quiet: bool) -> None:
    """Export finished ezpz run directories as AmSC benchmark CSV rows, one per run.

    RUN_DIR is the directory ezpz's History wrote: metrics JSONL, run_info.json,
    and a report. Rows go to stdout (or --append PATH), in the order given; notes
    about what was dropped or derived go to stderr.
    """
    if check_path is not None:
        if run_dirs:
            raise AmscUsageError("--check takes no RUN_DIR")
        _check(check_path)
        return
    if not run_dirs:
        raise AmscUsageError("missing argument 'RUN_DIR'")
    if not lock_timeout >= 0:
        raise AmscError(f"--lock-timeout must be 0 or more, got {lock_timeout}")

    from .export import ExportOptions, export_many
    from .sink import append_rows, check_append_target, write_stdout

    opts = ExportOptions(
        config=config or "", system=system, nodes=nodes, gpus=gpus, status=status,
        error=error_text, warmup=warmup, reducer=reducer, wall_time_sec=wall_time_sec,
        timestamp=timestamp, attempt=attempt,
    )
    if append_path:
        check_append_target(append_path)  # validate first: fail before any work
    done, failed = export_many(list(run_dirs), opts)
    batch = len(run_dirs) > 1
    if failed and not batch:
        raise failed[0][1]
    if failed and not keep_going:
        _report_failures(failed, written=False)
        ctx.exit(1)
    rows = [list(result.row.values()) for _, result in done]
    if rows:
        if append_path:
            append_rows(append_path, rows, lock_timeout_sec=lock_timeout,
                        allow_duplicate=allow_duplicate)
        elif out_format == "csv":
            write_stdout(rows, header=not no_header, out=sys.stdout)
    if out_format == "json":
        _write_json([result for _, result in done])
    # Notes only once the rows are out: a failed command prints its error line alone.
    for run_dir, result in done:
        if explain:  # the report lists every note itself, after the row
            _write_explain(result, quiet)
        elif not quiet:
            for note in result.notes:
                click.echo(f"note: {run_dir}: {note}" if batch else f"note: {note}", err=True)
    if failed:
        _report_failures(failed, written=True)
        ctx.exit(1)


def _report_failures(failed: list, written: bool) -> None:
    for run_dir, err in failed:
        click.echo(f"error: {run_dir}: {err.format_message()}", err=True)
    n = len(failed)
    click.echo(f"error: {n} run{'s' if n > 1 else ''} failed; "
               + ("the other rows were written" if written else
                  "nothing written (pass --keep-going to write the rows that worked)"),
               err=True)


def _check(path: str) -> None:
    from .check import check_results_file

    rows, problems = check_results_file(path)
    for p in problems:
        click.echo(p, err=True)
    if problems:
        raise AmscError(f"{path}: {len(problems)} problem(s) in {rows} row(s)")
    click.echo(f"{path}: {rows} row(s), all readable by the dashboard")


def _write_json(results: list[Any]) -> None:
    from .explain import to_json

    out = sys.stdout
    for result in results:
        out.write(to_json(result) + "\n")
    out.flush()


def _write_explain(result: Any, quiet: bool) -> None:
    from .explain import render, use_colour

    err = sys.stderr
    err.write(render(result, colour=use_colour(err), quiet=quiet))
    err.flush()


def main(argv: list[str] | None = None, prog_name: str = "ezpz-amsc") -> Any:
    """Console-script entry: same command, same arguments as ``ezpz export-amsc``."""
    return export_amsc.main(args=argv, prog_name=prog_name)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
