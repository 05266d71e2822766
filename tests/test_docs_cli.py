"""docs/cli.md is the CLI's --help, and every command and option has help text.

After changing a command or an option, regenerate the reference with:

    python tests/test_docs_cli.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import REPO  # noqa: E402

from ezpz_amsc.cli import cli  # noqa: E402

DOC = REPO / "docs" / "cli.md"
PROG = "ezpz-amsc"
WIDTH = 98  # what click lays --help out in on a terminal of 100 columns or more
REGENERATE = "python tests/test_docs_cli.py"


def _commands(group: click.Group) -> list[tuple[str, click.Command]]:
    ctx = click.Context(group, info_name=PROG)
    return [(name, cmd) for name in group.list_commands(ctx)
            if (cmd := group.get_command(ctx, name)) is not None]


def render() -> str:
    """The reference page: the group's --help, then each subcommand's, in listing order."""
    parts = ["# Command-line reference\n",
             f"Generated from `--help`; do not edit by hand. Regenerate with `{REGENERATE}`.\n"]
    for argv in [[], *([name] for name, _ in _commands(cli))]:
        result = CliRunner().invoke(cli, [*argv, "--help"], prog_name=PROG, terminal_width=WIDTH,
                                    catch_exceptions=False)
        assert result.exit_code == 0, result.output
        parts.append(f"## `{' '.join([PROG, *argv])}`\n\n```text\n{result.stdout}```\n")
    return "\n".join(parts)


def undocumented(group: click.Group) -> list[str]:
    """Commands without help, options without help, arguments their command's help never names."""
    missing = []
    for name, cmd in [("", group), *_commands(group)]:
        where = " ".join([PROG, name]).strip()
        if not (cmd.help or "").strip() or not cmd.get_short_help_str().strip():
            missing.append(where)
        for p in cmd.params:
            if isinstance(p, click.Option) and not (p.help or "").strip():
                missing.append(f"{where} {p.opts[0]}")
            if isinstance(p, click.Argument):
                metavar = p.human_readable_name.rstrip(".")
                if metavar not in (cmd.help or ""):
                    missing.append(f"{where} {metavar}")
    return missing


def test_every_command_option_and_argument_has_help():
    assert undocumented(cli) == []


def test_the_check_finds_what_lacks_help():
    group = click.Group("g", help="A group.")

    @group.command("plain", help="Does X with THING.")
    @click.argument("thing")
    @click.option("--documented", help="Yes.")
    @click.option("--bare")
    def plain(thing, documented, bare):  # pragma: no cover - never run
        pass

    @group.command("silent")
    @click.argument("path")
    def silent(path):  # pragma: no cover - never run
        pass

    assert undocumented(group) == ["ezpz-amsc plain --bare", "ezpz-amsc silent",
                                   "ezpz-amsc silent PATH"]


def test_reference_matches_help():
    assert DOC.read_text() == render(), f"docs/cli.md is stale; regenerate: {REGENERATE}"


def test_reference_covers_every_subcommand():
    text = DOC.read_text()
    for name, _ in _commands(cli):
        assert f"## `{PROG} {name}`" in text


if __name__ == "__main__":
    DOC.write_text(render())
    print(f"wrote {DOC.relative_to(REPO)}")
