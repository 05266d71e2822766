"""``ezpz-amsc version``: the tool's version, as ``--version`` prints it."""

from __future__ import annotations

import click

from ezpz_amsc.cli.edge import command
from ezpz_amsc.errors import ExitStatus
from ezpz_amsc.version import TOOL, __version__


@command(
    "version",
    short_help="Show the version of ezpz-amsc.",
    exit_codes={ExitStatus.OK: "version printed"},
    bare=True,
)
def version_command() -> None:
    """Show the version of ezpz-amsc (the same line as 'ezpz-amsc --version')."""
    click.echo(f"{TOOL} {__version__}")
