"""Parameters shared by the subcommands: path types the shell completes, and the options.

Option defaults are not written here: each comes from the field of
:class:`~ezpz_amsc.options.ExportOptions` (or :class:`~ezpz_amsc.options.PublishOptions`)
it fills, so ``--help`` shows what the pipeline does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import click

from ezpz_amsc.cli.edge import find_param, option_errors
from ezpz_amsc.options import (
    CONFIG_EXAMPLE,
    REDUCERS,
    ExportOptions,
    PublishOptions,
    default_of,
    expand_home,
)
from ezpz_amsc.results.schema import STATUSES

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem


class PathText(click.ParamType):  # type: ignore[type-arg]  # generic in click's stubs only
    """A path taken as typed (the pipeline says what is wrong with it), completed by the shell.

    Empty is refused: it is what an unset ``"$VAR"`` in a job script gives,
    and it must not turn into the current folder or into stdout. A leading
    ``~`` is expanded: the shell leaves it alone after ``=`` (``--append=~/x.csv``),
    and a folder named ``~`` is never what was meant.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "dir" or "file": what the shell offers
        self.name = "directory" if kind == "dir" else "path"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        text = os.fsdecode(value) if isinstance(value, bytes) else str(value)
        if not text.strip():
            self.fail("empty path (is the variable that should hold it unset?)", param, ctx)
        try:
            return expand_home(text)
        except ValueError as e:
            self.fail(str(e), param, ctx)

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        from click.shell_completion import CompletionItem  # only when the shell asks

        return [CompletionItem(incomplete, type=self.kind)]


RUN_DIR = PathText("dir")
RESULTS_CSV = PathText("file")
RECORDS_DIR = PathText("dir")
RECORD_JSON = PathText("file")
PLOT_FILE = PathText("file")


def _apply(decorators: Sequence[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    """Stack decorators so that the first listed is the first shown in ``--help``."""
    def wrap(f: Any) -> Any:
        for d in reversed(decorators):
            f = d(f)
        return f
    return wrap


def _export_default(name: str) -> Any:
    return default_of(ExportOptions, name)


run_dirs_argument = click.argument("run_dirs", metavar="RUN_DIR...", nargs=-1, type=RUN_DIR)

# The ExportOptions fields, one option each; export_options() builds the dataclass.
ROW_FIELDS = ("config", "status", "error", "system", "nodes", "gpus", "timestamp",
              "wall_time_sec", "warmup", "reducer", "attempt")
row_options = _apply([
    click.option("--config", metavar="LABEL",
                 help=f"Benchmark label for the row, e.g. {CONFIG_EXAMPLE} (required)."),
    click.option("--status", type=click.Choice(STATUSES), default=_export_default("status"),
                 show_default=True,
                 help="Outcome of the run; it cannot be inferred."),
    click.option("--error", default=_export_default("error"), metavar="TEXT",
                 help="Note for a failed run (the error column)."),
    click.option("--system", metavar="NAME", help="Facility name. Default: MACHINE from "
                 "provenance, else ezpz's get_machine(HOSTNAME)."),
    click.option("--nodes", type=int, metavar="N",
                 help="Nodes used. Default: ceil(gpus / ranks per node of the launch command, "
                      "else GPUS_PER_NODE), else NUM_NODES."),
    click.option("--gpus", type=int, metavar="N",
                 help="GPUs (ranks) used. Default: max(WORLD_SIZE_IN_USE, world_size), else "
                      "NGPUS (the allocation)."),
    click.option("--timestamp", metavar="YYYY-MM-DDTHH:MM:SSZ",
                 help="Run start in UTC. Default: the first step's timestamp."),
    click.option("--wall-time-sec", type=float, metavar="SECONDS",
                 help="Scheduler's wall time. Default: sum of step times (excludes setup)."),
    click.option("--warmup", type=int, default=_export_default("warmup"), show_default=True,
                 metavar="N",
                 help="Leading steps dropped before reducing (N >= 0)."),
    click.option("--reducer", type=click.Choice(REDUCERS), default=_export_default("reducer"),
                 show_default=True,
                 help="How each per-step series becomes one number."),
    click.option("--attempt", metavar="last|N",
                 help="When the records hold several attempts (a retried or resumed job: step "
                      "numbers start again, or the world size changes), export only this one: "
                      "'last' or its number, 1 = first. Default: refuse and list them."),
])

results_file_options = _apply([
    click.option("--append", type=RESULTS_CSV, metavar="PATH",
                 help="Append the rows to this results CSV (created with a header if new)."),
    click.option("--no-header", is_flag=True, help="Omit the header line on stdout."),
    click.option("--allow-duplicate", is_flag=True,
                 help="Append even if the file already has this run (same timestamp, system, "
                      "config, nodes, gpus)."),
    click.option("--skip-existing", is_flag=True,
                 help="A run the file already has is skipped with a note, not refused (exit 0): "
                      "a job script can run again."),
    click.option("--lock-timeout", type=float, default=default_of(PublishOptions, "lock_timeout"),
                 show_default=True,
                 metavar="SECONDS", help="How long --append waits for the results file's lock."),
])

quiet_option = click.option("-q", "--quiet", is_flag=True,
                            help="No notes on stderr (errors still shown).")


def provenance_option(help: str) -> Callable[[Any], Any]:
    """``--provenance DIR``, the folder of provenance records; what it does is the command's."""
    return click.option("--provenance", "provenance", type=RECORDS_DIR, metavar="DIR", help=help)


def export_options(ctx: click.Context) -> ExportOptions:
    """The :class:`ExportOptions` of this invocation, from the :data:`row_options` values."""
    values = {k: ctx.params[k] for k in ROW_FIELDS if k in ctx.params}
    if values.get("config") is None:
        raise click.MissingParameter(f"Pass the benchmark label, e.g. --config {CONFIG_EXAMPLE}",
                                     ctx, param=find_param(ctx, "config"))
    with option_errors(ctx):
        return ExportOptions(**values)


class FormatChoice(click.Choice):  # type: ignore[type-arg]  # generic in click's stubs only
    """``--format``'s choices, and the short names people type for them (``md``)."""

    ALIASES = {"md": "markdown"}

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        return super().convert(self.ALIASES.get(value, value), param, ctx)
