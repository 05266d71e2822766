"""``init`` (flow/init.py): a team's results repository. Two branches that each append rows
merge without a conflict, the merged file passes check, and the pre-commit hook init writes
refuses a broken results file."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import EXPECTED, run_group

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.init import FILES, init
from ezpz_amsc.results.schema import HEADER

ROW = EXPECTED["fsdp_tp-2rank"]


def _git(cwd: Path, *args: str) -> str:
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    p = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def test_init_writes_the_three_files_and_never_overwrites(tmp_path):
    done = init(tmp_path / "repo")
    assert [p.name for p in done.written] == list(FILES)
    attributes = (tmp_path / "repo" / ".gitattributes").read_text().splitlines()
    assert [ln for ln in attributes if not ln.startswith("#")] == [
        "runs.csv merge=union", "amsc.csv merge=union"]
    config = yaml.safe_load((tmp_path / "repo" / ".pre-commit-config.yaml").read_text())
    (hook,) = config["repos"][0]["hooks"]
    assert config["repos"][0]["repo"] == "local"
    assert (hook["entry"], hook["language"], hook["files"]) == (
        "ezpz-amsc check --results-only", "system", r"\.csv$")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "README.md").write_text("ours\n")
    with pytest.raises(AmscError) as e:
        init(tmp_path / "other")
    assert str(e.value) == (f"{tmp_path / 'other'}: already has README.md; not overwriting "
                            "(move it away, or add what docs/results-repository.md shows by "
                            "hand)")
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == ["README.md"]
    assert (tmp_path / "other" / "README.md").read_text() == "ours\n"


def test_the_hook_from_ezpz_amscs_repository(tmp_path):
    init(tmp_path, hook_repo="https://example.org/ezpz-amsc.git", hook_rev="v1.2.0")
    config = yaml.safe_load((tmp_path / ".pre-commit-config.yaml").read_text())
    assert config["repos"] == [{"repo": "https://example.org/ezpz-amsc.git", "rev": "v1.2.0",
                                "hooks": [{"id": "ezpz-amsc-check"}]}]
    with pytest.raises(AmscError, match="^--hook-repo needs --hook-rev: pre-commit"):
        init(tmp_path / "x", hook_repo="https://example.org/ezpz-amsc.git")
    assert not (tmp_path / "x").exists()


def test_a_failed_write_leaves_none_of_the_files(tmp_path, monkeypatch):
    from ezpz_amsc.fs import create

    real = create.create_file

    def fail_third(path, data, **kwargs):
        if Path(path).name == "README.md":
            raise AmscError(f"{path}: cannot write: No space left on device")
        return real(path, data, **kwargs)

    monkeypatch.setattr(create, "create_file", fail_third)
    with pytest.raises(AmscError, match="No space left"):
        init(tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_two_branches_that_append_rows_merge_and_the_merge_passes_check(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "amsc-results"
    init(repo)
    _git(repo, "init", "-q", "-b", "main")
    results = repo / "agpt" / "aurora" / "results" / "runs.csv"
    results.parent.mkdir(parents=True)
    results.write_text(",".join(HEADER) + "\n" + ROW + "\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "first row")
    rows = {"a": ROW.replace("agpt-2b/bs1/seq2048/tp1", "a").replace("test/cfg", "a"),
            "b": ROW.replace("test/cfg", "b")}
    for branch, row in rows.items():
        _git(repo, "checkout", "-q", "-b", branch, "main")
        r = run_group(*_export_args(row, results))
        assert r.exit_code == 0, r.stderr
        _git(repo, "commit", "-q", "-am", f"row {branch}")
    _git(repo, "checkout", "-q", "main")
    _git(repo, "merge", "-q", "a")
    merged = subprocess.run(["git", "merge", "-q", "--no-edit", "b"], cwd=repo,
                            capture_output=True, text=True,
                            env={**os.environ, "GIT_AUTHOR_NAME": "t",
                                 "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t",
                                 "GIT_COMMITTER_EMAIL": "t@e"})
    assert merged.returncode == 0, merged.stdout + merged.stderr  # no conflict
    lines = results.read_text().splitlines()
    assert len(lines) == 4 and "<<<<<<<" not in results.read_text()
    assert {ln.split(",")[2] for ln in lines[1:]} == {"test/cfg", "a", "b"}
    assert run_group("check", results).exit_code == 0


def _export_args(row: str, results: Path) -> list[str]:
    """An export of the shipped 2-rank run with the config label of ``row``."""
    from helpers import RUNS

    return [str(RUNS / "fsdp_tp-2rank"), "--config", row.split(",")[2], "--append",
            str(results), "-q"]


@pytest.mark.slow
def test_the_hook_init_writes_refuses_a_broken_results_file(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp_path / "amsc-results"
    init(repo)
    _git(repo, "init", "-q")
    (repo / "runs.csv").write_text(",".join(HEADER) + "\n" + ROW.replace(",4.034,", ",abc,")
                                   + "\n")
    _git(repo, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pc"),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    p = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=repo,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "runs.csv:2: wall_time_sec 'abc' is not a number" in p.stdout


def test_each_missing_half_of_the_hook_is_named(tmp_path):
    with pytest.raises(AmscError) as e:
        init(tmp_path / "a", hook_rev="v1")
    assert str(e.value) == ("--hook-rev needs --hook-repo: pre-commit installs the hook from "
                            "that repository at that tag or commit")
    with pytest.raises(AmscError) as e:
        init(tmp_path / "b", hook_repo="https://example.org/x.git")
    assert str(e.value).startswith("--hook-repo needs --hook-rev: ")


def test_init_into_a_file_or_onto_two_files_is_refused(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(AmscError) as e:
        init(f)
    assert str(e.value) == f"{f}: not a folder"
    for name in (".gitattributes", ".pre-commit-config.yaml"):
        (tmp_path / name).write_text("ours\n")
    with pytest.raises(AmscError) as e:
        init(tmp_path)
    assert str(e.value) == (f"{tmp_path}: already has .gitattributes, .pre-commit-config.yaml; "
                            "not overwriting (move them away, or add what "
                            "docs/results-repository.md shows by hand)")


def test_the_contributors_readme_says_how_to_add_rows(tmp_path):
    init(tmp_path)
    readme = (tmp_path / "README.md").read_text()
    assert readme.startswith("# Benchmark results\n\nEach results file is "
                             "`<category>/<name>/results/runs.csv`: one row per run")
    assert ("ezpz-amsc RUN_DIR --config LABEL --append <category>/<name>/results/runs.csv"
            in readme)
    assert "ezpz-amsc report <category>/<name>/results/runs.csv --format markdown" in readme
    assert "pre-commit install" in readme
