"""``ezpz-amsc init [DIR]``: a team's results repository: union merges for results files,
the pre-commit hook, a README for contributors (:mod:`ezpz_amsc.flow.init`)."""

from __future__ import annotations

import click

from ezpz_amsc.cli import output
from ezpz_amsc.cli.edge import command
from ezpz_amsc.cli.params import RUN_DIR
from ezpz_amsc.errors import ExitStatus
from ezpz_amsc.text import plural


@command(
    "init",
    short_help="Set up a results repository: merges that keep both sides' rows, the hook.",
    usages=("[DIR] [--hook-repo URL --hook-rev REV]",),
    examples=(("amsc-results", "the three files in a new repository's folder"),
              ("", "in the current folder"),
              ("amsc-results --hook-repo URL --hook-rev TAG", "pre-commit installs the tool")),
    exit_codes={ExitStatus.OK: "the files were written",
                ExitStatus.FAILED: "one of them exists already (nothing written), or a file "
                                   "cannot be written",
                ExitStatus.USAGE: "bad command line"},
    bare=True,
)
@click.argument("folder", metavar="DIR", required=False, default=".", type=RUN_DIR)
@click.option("--hook-repo", metavar="URL",
              help="The git URL of ezpz-amsc for the pre-commit hook (pre-commit installs it "
                   "from there, language: python). Default: a local hook that runs the "
                   "ezpz-amsc installed, offline.")
@click.option("--hook-rev", metavar="REV", help="The tag or commit of --hook-repo to use.")
def init(folder: str, hook_repo: str | None, hook_rev: str | None) -> None:
    """Write what a team's results repository needs into DIR (default: here).

    .gitattributes: results files (runs.csv, amsc.csv) merge with git's union driver, so two
    branches that each append rows never conflict. .pre-commit-config.yaml: the hook that
    checks every results file a commit changes. README.md: how to add rows. An existing file
    is never overwritten: if one is there, nothing is written.
    """
    from ezpz_amsc.flow.init import init as init_repository

    done = init_repository(folder, hook_repo, hook_rev)
    click.echo(f"{done.folder}: wrote {plural(len(done.written), 'file')}: "
               f"{', '.join(p.name for p in done.written)}")
    output.notes(["next: git init (if it is not a repository yet), then pre-commit install"])
