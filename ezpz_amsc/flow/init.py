"""``init``: what a team's results repository needs, written once.

Three files at the top of the repository (docs/results-repository.md walks a team through
them): ``.gitattributes``, so that two branches that each append rows to a results file
merge without a conflict (git's ``union`` driver keeps the lines both sides added);
``.pre-commit-config.yaml``, so that a commit that breaks a results file is refused; and a
short ``README.md`` for contributors. None is ever overwritten: if one exists, nothing is
written and the error names it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.publish import ROW_FILE
from ezpz_amsc.results.package import RESULTS_FILE
from ezpz_amsc.text import opt
from ezpz_amsc.version import TOOL

GITATTRIBUTES = f"""\
# Results files only ever gain rows. Two branches that each append rows would conflict on
# the last line; git's union driver keeps the lines of both sides instead. A run appended
# on both sides is then in the file twice, which `{TOOL} check` (the pre-commit hook, and
# CI) names as "same run as line N": remove one of the two lines.
{RESULTS_FILE} merge=union
{ROW_FILE} merge=union
"""

# The hook runs the ezpz-amsc installed where pre-commit runs (language: system): it needs
# no network, and every contributor who exports rows has it.
PRE_COMMIT_LOCAL = """\
# pre-commit (https://pre-commit.com): `pre-commit install` once in a clone, then every
# commit that changes a CSV file checks the results files among them.
repos:
  - repo: local
    hooks:
      - id: ezpz-amsc-check
        name: ezpz-amsc check (results files)
        entry: ezpz-amsc check --results-only
        language: system
        files: \\.csv$
        types: [file]
        verbose: true
        require_serial: true
"""

# The hook pre-commit installs by itself from ezpz-amsc's repository (language: python).
PRE_COMMIT_REMOTE = """\
# pre-commit (https://pre-commit.com): `pre-commit install` once in a clone, then every
# commit that changes a CSV file checks the results files among them. pre-commit installs
# ezpz-amsc by itself from the repository below (the network is needed the first time);
# on a login node without it, use the hook id ezpz-amsc-check-system, which runs the
# ezpz-amsc installed there.
repos:
  - repo: {repo}
    rev: {rev}
    hooks:
      - id: ezpz-amsc-check
"""

README = f"""\
# Benchmark results

Each results file is `<category>/<name>/results/{RESULTS_FILE}`: one row per run, written
by `{TOOL}` and never edited by hand (its docs/results-repository.md explains this layout).

## Adding rows

1. Export the run into the results file (the file and its folders are made if new):

   ```sh
   {TOOL} RUN_DIR --config LABEL --append <category>/<name>/results/{RESULTS_FILE}
   ```

2. Look at the study before it goes public, and paste this into the pull request:

   ```sh
   {TOOL} report <category>/<name>/results/{RESULTS_FILE} --format markdown
   ```

3. Commit on a branch and open a pull request. The pre-commit hook (`pre-commit install`
   once in your clone) checks every results file you commit the way the dashboard reads
   it; CI runs `{TOOL} check` on them too.

Two pull requests that both append rows merge without a conflict (`.gitattributes` asks
git to keep the rows of both sides). If both added the same run, `{TOOL} check` names
the second line: remove it.
"""

FILES = (".gitattributes", ".pre-commit-config.yaml", "README.md")


@dataclass
class Initialized:
    """What :func:`init` wrote."""

    folder: Path
    written: list[Path]


def init(folder: str | os.PathLike[str], hook_repo: str | None = None,
         hook_rev: str | None = None) -> Initialized:
    """Write the results repository's files into ``folder`` (made if missing).

    With ``hook_repo`` (and ``hook_rev``), the pre-commit hook is installed by pre-commit
    from ezpz-amsc's repository; without, it runs the ezpz-amsc installed (offline).
    """
    from ezpz_amsc.fs.create import create_file

    if (hook_repo is None) != (hook_rev is None):
        given, missing = ("hook_repo", "hook_rev") if hook_rev is None else ("hook_rev",
                                                                                "hook_repo")
        raise AmscError(opt(given) + " needs " + opt(missing) + ": pre-commit installs the "
                        "hook from that repository at that tag or commit")
    root = Path(folder)
    if root.exists() and not root.is_dir():
        raise AmscError(f"{root}: not a folder")
    there = [name for name in FILES if os.path.lexists(root / name)]
    if there:
        raise AmscError(f"{root}: already has {', '.join(there)}; not overwriting (move "
                        f"{'it' if len(there) == 1 else 'them'} away, or add what "
                        f"docs/results-repository.md shows by hand)")
    config = (PRE_COMMIT_LOCAL if hook_repo is None else
              PRE_COMMIT_REMOTE.format(repo=hook_repo, rev=hook_rev))
    texts = {".gitattributes": GITATTRIBUTES, ".pre-commit-config.yaml": config,
             "README.md": README}
    written: list[Path] = []
    try:
        for name in FILES:
            create_file(root / name, texts[name].encode("utf-8"))
            written.append(root / name)
    except BaseException:
        for path in written:  # all three or none
            path.unlink(missing_ok=True)
        raise
    return Initialized(root, written)
