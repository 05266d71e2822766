"""The one exception type for failures a user can cause (SPEC §2.7)."""

from __future__ import annotations

import click


class AmscError(click.ClickException):
    """A user-caused failure: printed as a single ``error: ...`` line, exit 1.

    Raised by the pure pipeline functions too, so that a host CLI (``ezpz``)
    shows the same one line without knowing anything about this plugin.
    """

    exit_code = 1

    def show(self, file=None) -> None:  # type: ignore[override]
        click.echo(f"error: {self.format_message()}", file=file, err=file is None)


class AmscUsageError(AmscError):
    """Bad command-line usage (unknown option, bad value): exit 2 like click."""

    exit_code = 2
