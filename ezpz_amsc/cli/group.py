"""The ``ezpz-amsc`` command line: a group of subcommands over the pipeline.

``ezpz-amsc RUN_DIR ...`` runs the default subcommand, ``export``. Each
subcommand lives in its own module of this package (``*_command.py``) and is
imported only when used (click's documented ``LazyGroup`` pattern), so
``--help`` and a host CLI's plugin load import click and nothing heavy.

The entry points name this module: ``main`` (the ``ezpz-amsc`` console
script), ``cli`` (the whole group, ``ezpz amsc ...``) and ``export_amsc``
(the export command alone, ``ezpz export-amsc``).
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click

from ezpz_amsc.cli.edge import CONTEXT_SETTINGS, CliError, bare_call, one_line_errors
from ezpz_amsc.cli.help import HelpLayout
from ezpz_amsc.errors import ExitStatus
from ezpz_amsc.options import CONFIG_EXAMPLE
from ezpz_amsc.version import TOOL, __version__

if TYPE_CHECKING:
    from click.shell_completion import CompletionItem

# Subcommand name -> "module:attribute", imported on first use, listed in this order.
COMMANDS: dict[str, str] = {
    "export": "ezpz_amsc.cli.export_command:export",
    "check": "ezpz_amsc.cli.check_command:check",
    "describe": "ezpz_amsc.cli.describe_command:describe",
    "report": "ezpz_amsc.cli.report_command:report_command",
    "compare": "ezpz_amsc.cli.compare_command:compare_command",
    "reproduce": "ezpz_amsc.cli.reproduce_command:reproduce",
    "init": "ezpz_amsc.cli.init_command:init",
    "help": "ezpz_amsc.cli.help_command:help_command",
    "version": "ezpz_amsc.cli.version_command:version_command",
}
DEFAULT_COMMAND = "export"


class AmscGroup(HelpLayout, click.Group):
    """Subcommands loaded on first use; a first word that names none runs the default.

    ``ezpz-amsc RUN_DIR --config X`` is ``ezpz-amsc export RUN_DIR --config X``.
    A run directory named like a subcommand needs ``export NAME`` or ``./NAME``;
    when a subcommand fails and a folder of its name exists, the error says so.
    A first word that is no path and is close to a command name is a typo
    (``exprot RUN``): refused at once, naming the command it is close to.
    """

    def __init__(self, *args: Any, lazy: Mapping[str, str], default: str,
                 usages: Sequence[str] = (), examples: Sequence[tuple[str, str]] = (),
                 **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", dict(CONTEXT_SETTINGS))
        kwargs["no_args_is_help"] = False
        super().__init__(*args, **kwargs)
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
            self._refuse_a_typo(ctx, args[0])
            args = [self.default, *args]
        with one_line_errors():
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with one_line_errors():
                return super().invoke(ctx)
        except CliError as e:
            e.hint += self._hint(ctx, e)
            raise

    def _hint(self, ctx: click.Context, e: CliError) -> str:
        """Where the default-command rule may have read the first word the wrong way."""
        named = ctx.meta.get(_NAMED)
        if named and e.exit_code == ExitStatus.USAGE and os.path.isdir(named):
            return (f" ({named!r} was read as the {named} command; to export the folder, "
                    f"write '{ctx.command_path} {self.default} {named}' or './{named}')")
        return ""

    def _refuse_a_typo(self, ctx: click.Context, first: str) -> None:
        """``exprot RUN``: no such path, and close to a command name: a mistyped command."""
        if first.startswith("-") or os.path.lexists(first):
            return
        import difflib

        close = difflib.get_close_matches(first, self.list_commands(ctx), n=1, cutoff=0.75)
        if close:
            raise CliError(f"{first!r} is not a command, nor a directory here (did you mean "
                           f"'{ctx.command_path} {close[0]}'?)", ExitStatus.USAGE)

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[CompletionItem]:
        """The first word: a subcommand, or the default command's RUN_DIR or options.

        A path item goes first: click's bash script empties the list at a ``dir``
        or ``file`` item (to let bash complete paths itself), so placed after the
        command names it would drop them. Before them, bash shows the names that
        match, and paths when none does.
        """
        items = super().shell_complete(ctx, incomplete)
        default = load_command(self.lazy[self.default])
        with default.make_context(self.default, [], parent=ctx, resilient_parsing=True) as sub:
            if incomplete.startswith("-"):
                items += [i for i in default.shell_complete(sub, incomplete)
                          if i.value not in {x.value for x in items}]
            else:
                arg = next(p for p in default.params if isinstance(p, click.Argument))
                items = [*arg.shell_complete(sub, incomplete), *items]
        return items

    def _own_options(self, ctx: click.Context) -> set[str]:
        return {o for p in self.get_params(ctx) for o in (*p.opts, *p.secondary_opts)}


# ctx.meta key: the subcommand the user named
_NAMED = "ezpz_amsc.named_command"


def load_command(target: str) -> click.Command:
    """``"module:attribute"`` → the click command it names."""
    module, _, attr = target.partition(":")
    cmd = getattr(importlib.import_module(module), attr)
    if not isinstance(cmd, click.Command):
        raise TypeError(f"{target} is not a click command")
    return cmd


cli = AmscGroup(
    "amsc", lazy=COMMANDS, default=DEFAULT_COMMAND,
    help="Turn finished ezpz run directories into AmSC benchmark CSV rows.\n\n"
         "Without a command name, export runs: 'ezpz-amsc RUN_DIR ...' is "
         "'ezpz-amsc export RUN_DIR ...', and 'ezpz-amsc export -h' lists its options. "
         "A run directory named like a command is exported as 'export NAME' or './NAME'.",
    usages=(f"[{DEFAULT_COMMAND}] RUN_DIR... --config LABEL [OPTIONS]",
            "check RESULTS_CSV... [--provenance DIR]", "describe RESULTS_CSV...",
            "report RESULTS_CSV... [--format FORMAT] [--plot FILE]",
            "compare BASE_CSV NEW_CSV [--format FORMAT]", "reproduce RECORD.json...",
            "init [DIR]", "COMMAND [ARGS]..."),
    examples=(
        (f"RUN_DIR --config {CONFIG_EXAMPLE}", "one row, with header, on stdout"),
        ("runs/*/ --config LABEL --append runs.csv", "a batch into a results file"),
        ("check runs.csv", "read it as the dashboard does"),
        ("describe runs.csv", "its datapackage.json, for other tools"),
        ("reproduce records/*.json", "re-export recorded rows, compare"),
        ("report runs.csv --format html", "the scaling study, one page to share"),
        ("compare old.csv new.csv", "regressions beyond noise, exit 1 if any"),
        ("init amsc-results", "a team's results repository"),
        ("export -h", "every export option"),
    ),
)
cli = click.version_option(__version__, "--version", prog_name=TOOL,
                           message="%(prog)s %(version)s")(cli)


def __getattr__(name: str) -> Any:
    # The ezpz.commands entry point ``export-amsc`` names ``ezpz_amsc.cli.group:export_amsc``:
    # the export command itself, imported only when a host asks for it.
    if name == "export_amsc":
        return load_command(COMMANDS[DEFAULT_COMMAND])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None, prog_name: str = TOOL) -> Any:
    """Console-script entry (``ezpz-amsc``, ``python -m ezpz_amsc``)."""
    return cli.main(args=argv, prog_name=prog_name)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
