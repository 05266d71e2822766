"""The host's side of SPEC §3: how an ezpz release loads ``ezpz.commands`` plugins.

Released ezpz does not load plugins yet. This is the code that
``docs/ezpz-integration.md`` offers ezpz (the block between the markers is
copied there verbatim, and a test keeps the two equal); the tests run it
against this package's installed entry point and against broken ones.
"""

# --- snippet: docs/ezpz-integration.md ---
from importlib.metadata import entry_points

import click


class BrokenCommand(click.Command):
    """Stands in for a plugin that failed to load: lists the reason, exits 1 when run."""

    def __init__(self, name: str, error: Exception) -> None:
        self.reason = f"{type(error).__name__}: {error}"
        super().__init__(name, help=f"(broken plugin) {self.reason}",
                         context_settings={"ignore_unknown_options": True,
                                           "allow_extra_args": True})

    def invoke(self, ctx: click.Context) -> None:
        raise click.ClickException(f"plugin {self.name!r} failed to load: {self.reason}")


def load_plugins(cli: click.Group, group: str = "ezpz.commands") -> None:
    """Add every plugin command to ``cli``; one broken plugin never breaks the CLI."""
    for ep in entry_points(group=group):
        if ep.name in cli.commands:  # built-in commands win name clashes
            continue
        try:
            cmd = ep.load()
            if not isinstance(cmd, click.Command):
                raise TypeError(f"{ep.value} is not a click command")
        except Exception as e:
            cmd = BrokenCommand(ep.name, e)
        cli.add_command(cmd, ep.name)
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
