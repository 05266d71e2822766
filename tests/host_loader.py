"""The host's side of the plugin contract: how an ezpz release loads ``ezpz.commands``.

Released ezpz does not load plugins yet. This is the code that
``docs/ezpz-integration.md`` offers ezpz (the block between the markers is
copied there verbatim, and a test keeps the two equal); the tests run it
against this package's installed entry point and against broken ones.
"""

# --- snippet: docs/ezpz-integration.md ---
from importlib.metadata import entry_points

import click

# Built-in commands that an installed plugin of the same name replaces; every other
# built-in wins a name clash. ezpz-amsc supersedes the exporter ezpz ships.
REPLACEABLE = frozenset({"export-amsc"})
# Plugins whose failure was reported in this process. Every training rank imports
# ezpz.cli too (so this runs there): one line per process, naming who says it.
_WARNED: set[str] = set()


class BrokenCommand(click.Command):
    """Stands in for a plugin that failed to load: lists the reason, exits 1 when run."""

    def __init__(self, name: str, error: Exception) -> None:
        self.reason = f"{type(error).__name__}: {error}"
        super().__init__(name, help=f"(broken plugin) {self.reason}",
                         context_settings={"ignore_unknown_options": True,
                                           "allow_extra_args": True})

    def invoke(self, ctx: click.Context) -> None:
        raise click.ClickException(f"plugin {self.name!r} failed to load: {self.reason}")


def load_plugins(cli: click.Group, group: str = "ezpz.commands",
                 replaceable: frozenset[str] = REPLACEABLE) -> None:
    """Add every plugin command to ``cli``; one broken plugin never breaks the CLI."""
    builtins = dict(cli.commands)
    for ep in entry_points(group=group):
        if ep.name in builtins and ep.name not in replaceable:
            continue  # not even imported: this built-in wins
        try:
            cmd = ep.load()
            if not isinstance(cmd, click.Command):
                raise TypeError(f"{ep.value} is not a click command")
        except Exception as e:
            if ep.name in builtins:  # keep the built-in, say why once per process
                if ep.name not in _WARNED:
                    _WARNED.add(ep.name)
                    reason = " ".join(f"{type(e).__name__}: {e}".split())
                    click.echo(f"ezpz: warning: plugin {ep.name!r} failed to load, keeping "
                               f"the built-in command: {reason}", err=True)
                continue
            cmd = BrokenCommand(ep.name, e)
        cli.add_command(cmd, ep.name)  # replaces a replaceable built-in of that name
# --- end snippet ---


# --- snippet: docs/ezpz-integration.md (finalize) ---
def run_finalize_hooks(history: object, outdir: object) -> None:
    """Call every ``ezpz.finalize`` hook after run_info.json is written; never fail finalize."""
    import logging

    for ep in entry_points(group="ezpz.finalize"):
        try:
            ep.load()(history, outdir)
        except Exception as e:
            logging.getLogger("ezpz").warning("finalize hook %s failed: %s", ep.name, e)
# --- end snippet ---
