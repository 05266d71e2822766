"""The ``ezpz-amsc`` command line: a group of subcommands over the pipeline.

``ezpz-amsc RUN_DIR ...`` runs the default subcommand, ``export``. Each
subcommand lives in its own module under :mod:`ezpz_amsc.commands` and is
imported only when used (click's documented ``LazyGroup`` pattern), so
``--help`` and a host CLI's plugin load import click and nothing heavy.

Also here, shared by every subcommand: the context settings, the command
class (its help layout is :mod:`ezpz_amsc.help_layout`), parameter types that
let the shell complete file names, the option decorators, and the CLI's edge,
where pipeline errors (:class:`AmscError`) and click's usage errors become one
``error: ...`` line.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import click
from click.shell_completion import CompletionItem

from . import __version__
from .errors import AmscError, os_error_text
from .help_layout import EXIT_CODES, HelpLayout
from .options import CONFIG_EXAMPLE, REDUCERS, STATUSES, ExportOptions, OptionError, flag_of

REDUCER_NAMES = REDUCERS  # the names --reducer offers are the pipeline's own

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"],
                                    "max_content_width": 100}

# Subcommand name -> "module:attribute", imported on first use, listed in this order.
COMMANDS: dict[str, str] = {
    "export": "ezpz_amsc.commands.export:export",
    "check": "ezpz_amsc.commands.check:check",
    "report": "ezpz_amsc.commands.report:report_command",
    "reproduce": "ezpz_amsc.commands.reproduce:reproduce",
}
DEFAULT_COMMAND = "export"


# ------------------------------------------------------------------ the edge


class CliError(click.ClickException):
    """What the user sees of any failure: one ``error: ...`` line (after a usage, if any)."""

    def __init__(self, message: str, exit_code: int = 1, usage: str | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.usage = usage

    def show(self, file: Any = None) -> None:
        if self.usage:
            click.echo(self.usage, file=file, err=file is None)
        click.echo(f"error: {self.format_message()}", file=file, err=file is None)


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """Pipeline errors and click's multi-line usage errors → :class:`CliError`."""
    try:
        yield
    except CliError:
        raise
    except AmscError as e:
        raise CliError(e.format_message(), e.exit_code) from None
    except click.ClickException as e:
        msg = e.format_message()
        raise CliError(msg[:1].lower() + msg[1:], e.exit_code) from None
    except OSError as e:
        # The last resort for a path no stage could look at, e.g. one below a folder
        # the user may not search: the file system's reason, on one line.
        raise CliError(os_error_text(e)) from None


@contextlib.contextmanager
def option_errors(ctx: click.Context) -> Iterator[None]:
    """A bad option value becomes click's ``invalid value for '--flag': ...`` (exit 2)."""
    try:
        yield
    except OptionError as e:
        if e.standalone:
            raise click.UsageError(e.format_message(), ctx) from None
        param = find_param(ctx, e.name)
        raise click.BadParameter(e.reason, ctx, param=param,
                                 param_hint=None if param else f"'{flag_of(e.name)}'") from None


def find_param(ctx: click.Context, name: str) -> click.Parameter | None:
    return next((p for p in ctx.command.params if p.name == name), None)


class AmscCommand(HelpLayout, click.Command):
    """A subcommand: this package's help layout, one-line errors, a usage when called bare."""

    def __init__(self, *args: Any, usages: Sequence[str] = (),
                 sections: Sequence[tuple[str, Sequence[str]]] = (),
                 examples: Sequence[tuple[str, str]] = (),
                 exit_codes: Sequence[tuple[str, str]] = EXIT_CODES, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", dict(CONTEXT_SETTINGS))
        super().__init__(*args, **kwargs)
        self.usages, self.sections, self.examples = usages, sections, examples
        self.exit_codes = exit_codes

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            raise bare_call(ctx, self.params)
        with one_line_errors():
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        with one_line_errors():
            return super().invoke(ctx)


def bare_call(ctx: click.Context, params: Sequence[click.Parameter]) -> CliError:
    """No arguments at all: the usage lines and where the help is (exit 2)."""
    wanted = next((p.human_readable_name for p in params if isinstance(p, click.Argument)),
                  "a command")
    return CliError(f"missing {wanted.rstrip('.')}; try '{ctx.command_path} -h' for help",
                    2, usage=ctx.get_usage())


def command(name: str, **kwargs: Any) -> Callable[[Callable[..., Any]], AmscCommand]:
    """``@click.command`` for this package's subcommands (see :class:`AmscCommand`)."""
    return click.command(name, cls=AmscCommand, **kwargs)  # type: ignore[return-value]


# ------------------------------------------------------------------ the group


class AmscGroup(HelpLayout, click.Group):
    """Subcommands loaded on first use; a first word that names none runs the default.

    ``ezpz-amsc RUN_DIR --config X`` is ``ezpz-amsc export RUN_DIR --config X``.
    A run directory named like a subcommand needs ``export NAME`` or ``./NAME``;
    when a subcommand fails and a folder of its name exists, the error says so.
    """

    def __init__(self, *args: Any, lazy: Mapping[str, str], default: str,
                 usages: Sequence[str] = (), examples: Sequence[tuple[str, str]] = (),
                 **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", dict(CONTEXT_SETTINGS))
        super().__init__(*args, no_args_is_help=False, **kwargs)
        self.lazy, self.default = dict(lazy), default
        self.usages, self.examples = usages, examples

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*self.lazy, *(n for n in super().list_commands(ctx) if n not in self.lazy)]

    def get_command(self, ctx: click.Context | None, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy:
            return load_command(self.lazy[cmd_name])
        return super().get_command(ctx, cmd_name)  # type: ignore[arg-type]

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            raise bare_call(ctx, load_command(self.lazy[self.default]).params)
        if args and args[0] in self.list_commands(ctx):
            ctx.meta[_NAMED] = args[0]
        elif args and args[0] not in self._own_options(ctx):
            ctx.meta[_DEFAULTED] = args[0]
            args = [self.default, *args]
        with one_line_errors():
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with one_line_errors():
                return super().invoke(ctx)
        except CliError as e:
            e.message += self._hint(ctx, e)
            raise

    def _hint(self, ctx: click.Context, e: CliError) -> str:
        """Where the default-command rule may have read the first word the wrong way."""
        named, first = ctx.meta.get(_NAMED), ctx.meta.get(_DEFAULTED)
        if named and e.exit_code == 2 and os.path.isdir(named):
            return (f" ({named!r} was read as the {named} command; to export the folder, "
                    f"write '{ctx.command_path} {self.default} {named}' or './{named}')")
        if first and not first.startswith("-") and not os.path.lexists(first):
            import difflib

            close = difflib.get_close_matches(first, self.list_commands(ctx), n=1, cutoff=0.75)
            if close:
                return f" (did you mean '{ctx.command_path} {close[0]}'?)"
        return ""

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """The first word: a subcommand, or the default command's RUN_DIR or options."""
        items = super().shell_complete(ctx, incomplete)
        default = load_command(self.lazy[self.default])
        with default.make_context(self.default, [], parent=ctx, resilient_parsing=True) as sub:
            if incomplete.startswith("-"):
                items += [i for i in default.shell_complete(sub, incomplete)
                          if i.value not in {x.value for x in items}]
            else:
                arg = next(p for p in default.params if isinstance(p, click.Argument))
                items += arg.shell_complete(sub, incomplete)
        return items

    def _own_options(self, ctx: click.Context) -> set[str]:
        return {o for p in self.get_params(ctx) for o in (*p.opts, *p.secondary_opts)}


# ctx.meta keys: the subcommand the user named, or the first word that made it the default
_NAMED, _DEFAULTED = "ezpz_amsc.named_command", "ezpz_amsc.defaulted_word"


def load_command(target: str) -> click.Command:
    """``"module:attribute"`` → the click command it names."""
    module, _, attr = target.partition(":")
    cmd = getattr(importlib.import_module(module), attr)
    if not isinstance(cmd, click.Command):
        raise TypeError(f"{target} is not a click command")
    return cmd


# ------------------------------------------------------------------ parameter types


class PathText(click.ParamType):
    """A path taken as typed (the pipeline says what is wrong with it), completed by the shell.

    Empty is refused: it is what an unset ``"$VAR"`` in a job script gives,
    and it must not turn into the current folder or into stdout.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind  # "dir" or "file": what the shell offers
        self.name = "directory" if kind == "dir" else "path"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        text = os.fsdecode(value) if isinstance(value, bytes) else str(value)
        if not text.strip():
            self.fail("empty path (is the variable that should hold it unset?)", param, ctx)
        return text

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[CompletionItem]:
        return [CompletionItem(incomplete, type=self.kind)]


RUN_DIR = PathText("dir")
RESULTS_CSV = PathText("file")
RECORDS_DIR = PathText("dir")
RECORD_JSON = PathText("file")


# ------------------------------------------------------------------ shared options


def _apply(decorators: Sequence[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    """Stack decorators so that the first listed is the first shown in ``--help``."""
    def wrap(f: Any) -> Any:
        for d in reversed(decorators):
            f = d(f)
        return f
    return wrap


run_dirs_argument = click.argument("run_dirs", metavar="RUN_DIR...", nargs=-1, type=RUN_DIR)

# The ExportOptions fields, one option each; export_options() builds the dataclass.
ROW_FIELDS = ("config", "status", "error", "system", "nodes", "gpus", "timestamp",
              "wall_time_sec", "warmup", "reducer", "attempt")
row_options = _apply([
    click.option("--config", metavar="LABEL",
                 help=f"Benchmark label for the row, e.g. {CONFIG_EXAMPLE} (required)."),
    click.option("--status", type=click.Choice(STATUSES), default="pass", show_default=True,
                 help="Outcome of the run; it cannot be inferred."),
    click.option("--error", default="", metavar="TEXT",
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
    click.option("--warmup", type=int, default=1, show_default=True, metavar="N",
                 help="Leading steps dropped before reducing (N >= 0)."),
    click.option("--reducer", type=click.Choice(REDUCERS), default="median", show_default=True,
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
    click.option("--lock-timeout", type=float, default=60.0, show_default=True,
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


# ------------------------------------------------------------------ the CLI


cli = AmscGroup(
    "amsc", lazy=COMMANDS, default=DEFAULT_COMMAND,
    help="Turn finished ezpz run directories into AmSC benchmark CSV rows.\n\n"
         "Without a command name, export runs: 'ezpz-amsc RUN_DIR ...' is "
         "'ezpz-amsc export RUN_DIR ...', and 'ezpz-amsc export -h' lists its options. "
         "A run directory named like a command is exported as 'export NAME' or './NAME'.",
    usages=(f"[{DEFAULT_COMMAND}] RUN_DIR... --config LABEL [OPTIONS]",
            "check RESULTS_CSV [--provenance DIR]", "report RESULTS_CSV... [--plot FILE]",
            "reproduce RECORD.json...", "COMMAND [ARGS]..."),
    examples=(
        (f"RUN_DIR --config {CONFIG_EXAMPLE}", "one row, with header, on stdout"),
        ("runs/*/ --config LABEL --append results.csv", "a batch into a results file"),
        ("check results.csv", "read it as the dashboard does"),
        ("reproduce records/*.json", "re-export recorded rows, compare"),
        ("report results.csv --plot scaling.png", "the scaling study, before publishing"),
        ("export -h", "every export option"),
    ),
)
cli = click.version_option(__version__, "--version", prog_name="ezpz-amsc",
                           message="%(prog)s %(version)s")(cli)


def __getattr__(name: str) -> Any:
    # The ezpz.commands entry point ``export-amsc`` names ``ezpz_amsc.cli:export_amsc``:
    # the export command itself, imported only when a host asks for it.
    if name == "export_amsc":
        return load_command(COMMANDS[DEFAULT_COMMAND])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None, prog_name: str = "ezpz-amsc") -> Any:
    """Console-script entry (``ezpz-amsc``, ``python -m ezpz_amsc``)."""
    return cli.main(args=argv, prog_name=prog_name)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
