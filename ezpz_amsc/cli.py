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
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(file_okay=True, dir_okay=True))
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
@click.option("--append", "append_path", metavar="PATH",
              help="Append the row to this results CSV (created with a header if new).")
@click.option("--no-header", is_flag=True, help="Omit the header line on stdout.")
def export_amsc(run_dir: str, config: str | None, system: str | None, nodes: int | None,
                gpus: int | None, status: str, error_text: str, warmup: int, reducer: str,
                wall_time_sec: float | None, timestamp: str | None, append_path: str | None,
                no_header: bool) -> None:
    """Export a finished ezpz run directory as one AmSC benchmark CSV row.

    RUN_DIR is the directory ezpz's History wrote: metrics JSONL, run_info.json,
    and a report. The row goes to stdout (or --append PATH); notes about what
    was dropped or derived go to stderr.
    """
    from .export import ExportOptions, export_run

    opts = ExportOptions(
        config=config or "", system=system, nodes=nodes, gpus=gpus, status=status,
        error=error_text, warmup=warmup, reducer=reducer, wall_time_sec=wall_time_sec,
        timestamp=timestamp,
    )
    result = export_run(run_dir, opts)
    cells = [result.row[k] for k in result.row]
    if append_path:
        from .sink import append_rows

        append_rows(append_path, [cells])
    else:
        from .sink import write_stdout

        write_stdout([cells], header=not no_header, out=sys.stdout)
    # Notes only once the row is out: a failed --append ends with its one error line.
    for note in result.notes:
        click.echo(f"note: {note}", err=True)


def main(argv: list[str] | None = None, prog_name: str = "ezpz-amsc") -> Any:
    """Console-script entry: same command, same arguments as ``ezpz export-amsc``."""
    return export_amsc.main(args=argv, prog_name=prog_name)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
