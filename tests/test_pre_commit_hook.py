"""The pre-commit hooks in .pre-commit-hooks.yaml, run by pre-commit itself.

A throwaway git repository of results holds good and bad results files under both names
this project writes (``runs.csv``, the layout's; ``amsc.csv``, the end-of-training hook's)
and a CSV file that is no results file, which the hooks pass over. ``pre-commit try-repo``
runs each hook:

- ``ezpz-amsc-check-system`` (``language: system``) from a git repository holding this
  checkout's manifest as it is now, with no network at all: the proxy is a closed local
  port and pip has no index, so the hook needs nothing but what is installed;
- ``ezpz-amsc-check`` (``language: python``) from this checkout itself: pre-commit installs
  ezpz-amsc into an environment of its own, numpy and click from the package index (the
  one network step; the test skips, saying so, where no index answers).
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

pytestmark = pytest.mark.slow  # pre-commit runs in subprocesses: seconds, a minute to install

GOOD_ROW = EXPECTED["fsdp_tp-2rank"]
BAD_ROW = GOOD_ROW.replace(",1,2,pass,", ",0,2,pass,")
HEADER_LINE = ",".join(HEADER)
# What the user committed: wall_time_sec 'abc' and month 13, in results/amsc.csv.
BAD_AMSC = GOOD_ROW.replace("2026-11-29", "2026-13-29").replace(",4.034,", ",abc,")


def _manifest() -> dict[str, dict]:
    return {h["id"]: h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}


def test_the_manifest_has_two_hooks_that_give_check_every_csv():
    hooks = _manifest()
    assert {i: (h["entry"], h["language"]) for i, h in hooks.items()} == {
        "ezpz-amsc-check": ("ezpz-amsc check --results-only", "python"),
        "ezpz-amsc-check-system": ("ezpz-amsc check --results-only", "system")}
    for hook in hooks.values():
        files = re.compile(hook["files"])
        assert [p for p in ["runs.csv", "results/amsc.csv", "a/b/aurora.csv", "runs.csv.bak",
                            "notes.txt"] if files.search(p)] == [
            "runs.csv", "results/amsc.csv", "a/b/aurora.csv"]
        assert hook["verbose"] is True and hook["require_serial"] is True


def _env(home: Path, offline: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_"))}
    env.update(PRE_COMMIT_HOME=str(home),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    if offline:
        dead = "http://127.0.0.1:9"  # the discard port: nothing listens, every request fails
        env.update(PIP_NO_INDEX="1", HTTP_PROXY=dead, HTTPS_PROXY=dead, http_proxy=dead,
                   https_proxy=dead, NO_PROXY="", no_proxy="")
    return env


def _git(cwd: Path, *args: str, env: dict[str, str]) -> None:
    subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True)


def _results_repo(root: Path, files: dict[str, str], env: dict[str, str]) -> Path:
    repo = root / "amsc-results"
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "init", "-q", env=env)
    _git(repo, "add", "-A", env=env)
    return repo


FILES = {
    "good/runs.csv": f"{HEADER_LINE}\n{GOOD_ROW}\n",
    "bad/runs.csv": f"{HEADER_LINE}\n{BAD_ROW}\n",
    "results/amsc.csv": f"{HEADER_LINE}\n{BAD_AMSC}\n",
    "aurora/sweep.csv": f"{HEADER_LINE}\n{GOOD_ROW}\n",  # another name, the dashboard's header
    "notes.csv": "not,a,results,file\n",
}


@pytest.fixture
def system_hook(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    env = _env(tmp_path / "pre-commit-home", offline=True)
    hooks = tmp_path / "ezpz-amsc"
    hooks.mkdir()
    shutil.copy(REPO / ".pre-commit-hooks.yaml", hooks)
    _git(hooks, "init", "-q", env=env)
    _git(hooks, "add", "-A", env=env)
    _git(hooks, "commit", "-q", "-m", "hooks", env=env)
    return hooks, env


def _try_repo(hooks: Path, hook_id: str, repo: Path, env: dict[str, str], *args: str,
              timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(hooks), hook_id,
                           *args], cwd=repo, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _output(p: subprocess.CompletedProcess) -> list[str]:
    """What the hook printed, without pre-commit's own lines and the notes."""
    text = p.stdout.split("- duration: ", 1)[-1].split("\n", 1)[-1]
    text = text.split("- exit code: ", 1)[-1].split("\n", 1)[-1] if "- exit code" in text \
        else text
    return [ln for ln in text.splitlines() if ln.strip() and not ln.startswith("note: ")]


EXPECT_ALL = [
    "aurora/sweep.csv: 1 row, all readable by the dashboard",  # files in git's order
    "bad/runs.csv:2: nodes '0' is below 1",
    "error: bad/runs.csv: 1 problem in 1 row",
    "good/runs.csv: 1 row, all readable by the dashboard",
    "results/amsc.csv:2: wall_time_sec 'abc' is not a number",
    "results/amsc.csv:2: timestamp '2026-13-29T22:18:43Z' is not YYYY-MM-DDTHH:MM:SSZ",
    "error: results/amsc.csv: 2 problems in 1 row",
    "error: 2 of 4 files not clean"]


def test_the_system_hook_fails_bad_results_files_under_both_names(system_hook, tmp_path):
    hooks, env = system_hook
    repo = _results_repo(tmp_path, FILES, env)
    p = _try_repo(hooks, "ezpz-amsc-check-system", repo, env, "--all-files")
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.search(r"^ezpz-amsc check \(results files, installed ezpz-amsc\)\.+Failed$",
                     p.stdout, re.M), p.stdout
    assert _output(p) == EXPECT_ALL
    assert "notes.csv" not in p.stdout


def test_the_system_hook_passes_good_files_and_says_when_there_is_none(system_hook, tmp_path):
    hooks, env = system_hook
    repo = _results_repo(tmp_path, FILES, env)
    p = _try_repo(hooks, "ezpz-amsc-check-system", repo, env, "--files", "good/runs.csv",
                  "notes.csv")
    assert p.returncode == 0, p.stdout + p.stderr
    assert _output(p) == ["good/runs.csv: 1 row, all readable by the dashboard"]
    p = _try_repo(hooks, "ezpz-amsc-check-system", repo, env, "--files", "notes.csv")
    assert p.returncode == 0, p.stdout + p.stderr
    assert _output(p) == ["no results file among the 1 file given (none is named runs.csv or "
                          "amsc.csv or has the dashboard's columns); nothing to check"]


def test_the_python_hook_installs_ezpz_amsc_and_checks_the_same(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    if subprocess.run(["git", "-C", str(REPO), "rev-parse"], capture_output=True).returncode:
        pytest.skip("this checkout is not a git repository, which pre-commit try-repo needs")
    probe = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                            "-d", str(tmp_path / "probe"), "click"],
                           capture_output=True, text=True, timeout=120)
    if probe.returncode:
        pytest.skip("no package index answers here: pre-commit cannot install the hook's "
                    f"dependencies ({probe.stderr.strip().splitlines()[-1:]})")
    env = _env(tmp_path / "pre-commit-home", offline=False)
    repo = _results_repo(tmp_path, FILES, env)
    # try-repo of this checkout: its uncommitted changes too, as pre-commit documents
    p = _try_repo(REPO, "ezpz-amsc-check", repo, env, "--all-files", timeout=900)
    assert p.returncode == 1, p.stdout + p.stderr
    assert re.search(r"^ezpz-amsc check \(results files\)\.+Failed$", p.stdout, re.M), p.stdout
    assert _output(p) == EXPECT_ALL
