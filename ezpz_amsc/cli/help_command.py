"""``ezpz-amsc help [COMMAND]``: the help of the group, or of one command (as ``-h`` prints it).

Without it, ``ezpz-amsc help`` would be read as exporting a run directory named
``help`` and ask for ``--config``.
"""

from __future__ import annotations

import click

from ezpz_amsc.cli.edge import CliError, command
from ezpz_amsc.errors import ExitStatus


@command(
    "help",
    short_help="Show the help of ezpz-amsc, or of one command.",
    usages=("[COMMAND]",),
    examples=(("", "the commands and their options"), ("export", "every export option")),
    exit_codes={ExitStatus.OK: "help printed",
                ExitStatus.USAGE: "no such command"},
    bare=True,
)
@click.argument("name", metavar="COMMAND", required=False)
@click.pass_context
def help_command(ctx: click.Context, name: str | None) -> None:
    """Show the help of ezpz-amsc, or of COMMAND: the same page as 'ezpz-amsc COMMAND -h'."""
    parent = ctx.parent
    assert parent is not None and isinstance(parent.command, click.Group)
    group = parent.command
    if name is None:
        click.echo(group.get_help(parent), color=ctx.color)
        return
    cmd = group.get_command(parent, name)
    if cmd is None:
        import difflib

        close = difflib.get_close_matches(name, group.list_commands(parent), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise CliError(f"no such command {name!r}{hint}; the commands: "
                       f"{', '.join(group.list_commands(parent))}", ExitStatus.USAGE)
    with cmd.make_context(name, [], parent=parent, resilient_parsing=True) as sub:
        click.echo(cmd.get_help(sub), color=ctx.color)
