"""The shape of this package's ``--help`` pages, shared by the group and every subcommand.

Usage lines that show each mode, options in named sections aligned as one
table, examples, and the exit codes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import click

from ezpz_amsc.cli.output import say
from ezpz_amsc.errors import ExitStatus
from ezpz_amsc.text import Text

# A command's exit statuses, each with what it means for that command.
ExitCodes = Mapping[ExitStatus, Text]
EXIT_CODES: ExitCodes = MappingProxyType({s: s.meaning for s in (
    ExitStatus.OK, ExitStatus.FAILED, ExitStatus.USAGE)})


class HelpLayout:
    """Usage lines, option sections, examples and exit codes for a command's ``--help``.

    ``usages`` are argument patterns after the command path; ``examples`` are
    ``(command after the path, what it does)`` pairs.
    """

    usages: Sequence[str] = ()
    sections: Sequence[tuple[str, Sequence[str]]] = ()
    examples: Sequence[tuple[str, str]] = ()
    exit_codes: ExitCodes = EXIT_CODES

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if not self.usages:
            super().format_usage(ctx, formatter)  # type: ignore[misc]
            return
        for i, args in enumerate(self.usages):
            prefix = "Usage: " if i == 0 else " " * len("Usage: ")
            formatter.write(f"{prefix}{ctx.command_path} {args}\n")

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        params = self.get_params(ctx)  # type: ignore[attr-defined]
        records = {p.name: rec for p in params  # arguments are described in the help text
                   if isinstance(p, click.Option) and (rec := p.get_help_record(ctx))}
        placed = {n for _, names in self.sections for n in names}
        sections = [(title, [records[n] for n in names if n in records])
                    for title, names in self.sections]
        sections.append(("Other options" if self.sections else "Options",
                         [r for n, r in records.items() if n not in placed]))
        # One first-column width for every section, so that they read as one table;
        # a longer term gets a line of its own, as click does past 30 columns.
        width = max((len(t) for _, rows in sections for t, _ in rows if len(t) <= 30), default=0)
        for title, rows in sections:
            if rows:
                with formatter.section(title):
                    formatter.write_dl([(t.ljust(width), text) for t, text in rows], col_max=width)
        if isinstance(self, click.Group):
            self.format_commands(ctx, formatter)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        if self.examples:
            lines = [(f"{ctx.command_path} {cmd}", what) for cmd, what in self.examples]
            width = max(len(cmd) for cmd, _ in lines)
            with formatter.section("Examples"):
                indent = " " * formatter.current_indent
                fits = all(len(indent) + width + len(what) + 4 <= formatter.width
                           for _, what in lines)
                for cmd, what in lines:  # side by side, else the comment above its command
                    formatter.write(f"{indent}{cmd:{width}}  # {what}\n" if fits else
                                    f"{indent}# {what}\n{indent}{cmd}\n")
        with formatter.section("Exit codes"):
            formatter.write_dl([(str(int(status)), say(meaning))
                                for status, meaning in self.exit_codes.items()])
