"""The CLI's edge: where any failure becomes one ``error: ...`` line and an exit status.

Pipeline errors (:class:`~ezpz_amsc.errors.AmscError`, which knows nothing
about click) and click's multi-line usage errors meet here. Also the command
class every subcommand uses: this package's help layout (:mod:`ezpz_amsc.cli.help`),
one-line errors, and a usage when a command is called bare.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import click

from ezpz_amsc.cli.help import EXIT_CODES, ExitCodes, HelpLayout
from ezpz_amsc.cli.output import say
from ezpz_amsc.errors import AmscError, ExitStatus, os_error_text
from ezpz_amsc.options import OptionError
from ezpz_amsc.text import Opt, as_flag

CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"],
                                    "max_content_width": 100}


class CliError(click.ClickException):
    """What the user sees of any failure: one ``error: ...`` line (after a usage, if any)."""

    def __init__(self, message: str, exit_code: ExitStatus = ExitStatus.FAILED,
                 usage: str | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code  # type: ignore[misc]  # click's is a class default
        self.usage = usage
        self.hint = ""  # added by the group where it may have read the command line wrongly

    def format_message(self) -> str:
        return super().format_message() + self.hint

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
    except BrokenPipeError:
        raise stdout_closed() from None
    except KeyboardInterrupt:  # Ctrl-C: the shell's 130, one line, no traceback
        raise CliError("interrupted", ExitStatus.INTERRUPTED) from None
    except AmscError as e:
        raise CliError(say(e.message), e.exit_code) from None
    except click.ClickException as e:
        msg = e.format_message()
        raise CliError(msg[:1].lower() + msg[1:], ExitStatus(e.exit_code)) from None
    except OSError as e:
        # The last resort for a path no stage could look at, e.g. one below a folder
        # the user may not search: the file system's reason, on one line.
        raise CliError(os_error_text(e)) from None


def stdout_closed() -> click.exceptions.Exit:
    """Quiet exit when the reader of stdout went away: no traceback, no ``error:`` line.

    stdout is pointed at /dev/null first, so that the interpreter's last flush of
    whatever is still buffered does not fail again on the way out.
    """
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return click.exceptions.Exit(ExitStatus.BROKEN_PIPE)


@contextlib.contextmanager
def option_errors(ctx: click.Context) -> Iterator[None]:
    """A bad option value becomes click's ``invalid value for '--flag': ...`` (exit 2)."""
    try:
        yield
    except OptionError as e:
        if e.standalone:
            raise click.UsageError(say(e.message), ctx) from None
        param = find_param(ctx, e.name)
        raise click.BadParameter(say(e.reason), ctx, param=param,
                                 param_hint=None if param else f"'{as_flag(Opt(e.name))}'"
                                 ) from None


def find_param(ctx: click.Context, name: str) -> click.Parameter | None:
    return next((p for p in ctx.command.params if p.name == name), None)


class AmscCommand(HelpLayout, click.Command):
    """A subcommand: this package's help layout, one-line errors, a usage when called bare."""

    def __init__(self, *args: Any, usages: Sequence[str] = (),
                 sections: Sequence[tuple[str, Sequence[str]]] = (),
                 examples: Sequence[tuple[str, str]] = (),
                 exit_codes: ExitCodes = EXIT_CODES, bare: bool = False,
                 **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", dict(CONTEXT_SETTINGS))
        super().__init__(*args, **kwargs)
        self.usages, self.sections, self.examples = usages, sections, examples
        self.exit_codes = exit_codes
        self.bare = bare  # a call without arguments is complete (help, version)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing and not self.bare:
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
                    ExitStatus.USAGE, usage=ctx.get_usage())


def command(name: str, **kwargs: Any) -> Callable[[Callable[..., Any]], AmscCommand]:
    """``@click.command`` for this package's subcommands (see :class:`AmscCommand`)."""
    return click.command(name, cls=AmscCommand, **kwargs)
