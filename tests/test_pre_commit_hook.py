"""The pre-commit hook in .pre-commit-hooks.yaml, run by pre-commit itself, offline.

A throwaway git repository holds a good and a bad results file (and a bad CSV
of another name, which the hook must leave alone); ``pre-commit try-repo``
runs the hook on it from a git repository holding this checkout's
``.pre-commit-hooks.yaml`` as it is now (a ``language: system`` hook needs
nothing else of its repository; a try-repo of the checkout itself would see
its last commit). Any network access fails: the proxy is a closed local port
and pip has no index, so the test shows the hook needs nothing but what is
installed (docs/results-files.md says why it is ``language: system``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import EXPECTED, REPO

from ezpz_amsc.results.schema import HEADER

pytestmark = pytest.mark.slow  # two pre-commit runs in subprocesses: a few seconds

HOOK_ID = "ezpz-amsc-check"
GOOD_ROW = EXPECTED["fsdp_tp-2rank"]
BAD_ROW = GOOD_ROW.replace(",1,2,pass,", ",0,2,pass,")


def _manifest() -> list[dict]:
    return yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())


def test_the_manifest_has_the_hook_running_check_on_files_named_runs_csv():
    (hook,) = _manifest()
    assert (hook["id"], hook["entry"], hook["language"]) == (HOOK_ID, "ezpz-amsc check",
                                                             "system")
    files = re.compile(hook["files"])
    assert [p for p in ["runs.csv", "results/runs.csv", "a/b/runs.csv", "myruns.csv",
                        "runs.csv.bak", "runs.csvx", "results/amsc.csv"]
            if files.search(p)] == ["runs.csv", "results/runs.csv", "a/b/runs.csv"]


def _offline_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_"))}
    dead = "http://127.0.0.1:9"  # the discard port: nothing listens, every request fails
    env.update(PRE_COMMIT_HOME=str(home), PIP_NO_INDEX="1", HTTP_PROXY=dead, HTTPS_PROXY=dead,
               http_proxy=dead, https_proxy=dead, NO_PROXY="", no_proxy="",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return env


def _git(cwd: Path, *args: str, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


@pytest.fixture
def target(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    env = _offline_env(tmp_path / "pre-commit-home")
    hooks = tmp_path / "ezpz-amsc"
    hooks.mkdir()
    shutil.copy(REPO / ".pre-commit-hooks.yaml", hooks)
    _git(hooks, "init", "-q", env=env)
    _git(hooks, "add", "-A", env=env)
    _git(hooks, "commit", "-q", "-m", "hooks", env=env)
    repo = tmp_path / "amsc-results"
    for folder, row in [("good", GOOD_ROW), ("bad", BAD_ROW)]:
        (repo / folder).mkdir(parents=True)
        (repo / folder / "runs.csv").write_text(",".join(HEADER) + "\n" + row + "\n")
    (repo / "notes.csv").write_text("not,a,results,file\n")
    _git(repo, "init", "-q", env=env)
    _git(repo, "add", "-A", env=env)
    return hooks, repo, env


def _try_repo(hooks: Path, repo: Path, env: dict[str, str], *args: str
              ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hooks), HOOK_ID,
                           *args], cwd=repo, env=env, capture_output=True, text=True, timeout=300)


def test_the_hook_passes_a_good_results_file(target):
    p = _try_repo(*target, "--files", "good/runs.csv", "notes.csv")
    assert p.returncode == 0, p.stdout + p.stderr
    assert re.search(r"^ezpz-amsc check \(results files\)\.+Passed$", p.stdout, re.M), p.stdout


def test_the_hook_fails_a_bad_results_file_and_says_why(target):
    p = _try_repo(*target, "--all-files")
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.search(r"^ezpz-amsc check \(results files\)\.+Failed$", p.stdout, re.M), p.stdout
    output = p.stdout.split("- exit code: 1", 1)[1]
    lines = [ln for ln in output.splitlines() if ln.strip() and not ln.startswith("note: ")]
    assert lines == ["bad/runs.csv:2: nodes '0' is below 1",  # files in git's order
                     "error: bad/runs.csv: 1 problem in 1 row",
                     "good/runs.csv: 1 row, all readable by the dashboard",
                     "error: 1 of 2 files not clean"]
    assert "notes.csv" not in p.stdout
