"""Publishing rows with their records (flow/publish.py): all or nothing across a crash at
any instant, retries that finish what a killed writer left, and the last guard on cells.

The crashes are real: a subprocess running the CLI kills itself with SIGKILL at a named
instant (fs/create.py, ``crash_point``: ``EZPZ_AMSC_CRASH_AT``), then the same command
runs again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import (
    NO_THROUGHPUT_NOTE,
    REPO,
    RUNS,
    copy_run,
    error_line,
    expected_row,
    parse_csv,
    paused,
    records_in,
    release,
    run_cli,
    run_group,
    wait_until_paused,
)

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.export import export_run
from ezpz_amsc.flow.publish import RECORD_FILE, ROW_FILE, publish
from ezpz_amsc.fs import create as fs_create
from ezpz_amsc.options import ExportOptions, PublishOptions
from ezpz_amsc.records import folder as records_folder
from ezpz_amsc.results.schema import HEADER

pytestmark = pytest.mark.usefixtures("clean_hook_env")

TWO = [RUNS / "fsdp_tp-2rank", RUNS / "minimal-1rank"]
KEYS = ["2026-11-29T22:18:43Z,localhost,c,1,2", "2026-11-29T22:21:30Z,localhost,c,1,1"]


def _export(results: Path, folder: Path | None, *extra: str, crash: str | None = None
            ) -> subprocess.CompletedProcess:
    """The CLI in its own process (a crash kills that process, not the test)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("EZPZ_AMSC_CRASH_AT", None)
    if crash:
        env["EZPZ_AMSC_CRASH_AT"] = crash
    records = ["--provenance", str(folder)] if folder else []
    return subprocess.run([sys.executable, "-m", "ezpz_amsc", *map(str, TWO), "--config", "c",
                           "--append", str(results), *records, "-q", *extra],
                          env=env, capture_output=True, text=True, timeout=120)


def _hidden(folder: Path) -> list[str]:
    """Every file or folder below ``folder`` that is not a record: what a crash can leave."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                  if not (p.parent == folder and p.name.endswith(".json")))


def _keys(results: Path) -> list[str]:
    """The run identities of the rows of ``results`` (none: missing or empty)."""
    text = results.read_text() if results.exists() else ""
    return [",".join(r[c] for c in HEADER[:5]) for r in parse_csv(text)] if text else []


# Every instant between the first byte and the last of an append of two rows and their
# records, in order; the retry of the same command succeeds up to the commit point.
BEFORE_COMMIT = ["opened", "record-pending:1", "file-linked:1", "record-pending:2",
                 "file-linked:2", "rows", "rows-synced", "rows-written", "record-linked:1",
                 "record-linked:2"]


# Every instant on an existing results file; on a new one, those where it makes a difference
# (the file is created, written first, finished).
KILLS = [pytest.param(p, False, id=f"existing-file-{p}") for p in [*BEFORE_COMMIT, "committed"]] + [
    pytest.param(p, True, id=f"new-file-{p}") for p in ("opened", "rows", "rows-written")]


@pytest.mark.slow
@pytest.mark.parametrize("point, new", KILLS)
def test_a_kill_at_any_instant_loses_nothing_and_the_retry_finishes(tmp_path, point, new):
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    if not new:
        results.write_text(",".join(HEADER) + "\n")
    killed = _export(results, folder, crash=point)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    if point in ("opened", "record-pending:1", "file-linked:1", "record-pending:2",
                 "file-linked:2", "rows"):
        assert _keys(results) == []  # no row yet
        if new:  # created, then the kill: empty, which the next append takes as new
            assert results.read_bytes() == b""
    else:
        assert _keys(results) == KEYS  # the rows are in, before their records
    retry = _export(results, folder)
    if point == "committed":  # everything was written: the same command is a double count
        assert retry.returncode == 1
        assert "is already at line 2" in retry.stderr
    else:
        assert (retry.returncode, retry.stdout) == (0, ""), retry.stderr
    assert _keys(results) == KEYS
    # Nothing left over, nothing double: every row with its record, and no hidden file.
    check = run_group("check", results, "--provenance", folder)
    assert (check.exit_code, check.stderr) == (0, ""), check.stderr
    assert check.stdout == (f"{results}: 2 rows, all readable by the dashboard; 2 records in "
                            f"{folder}, one per row\n")
    assert _hidden(folder) == []
    # And a job script that says "add it unless it is there" always succeeds.
    again = _export(results, folder, "--skip-existing")
    assert again.returncode == 0, again.stderr
    assert _keys(results) == KEYS and len(records_in(folder)) == 2


@pytest.mark.slow
@pytest.mark.parametrize("point", ["opened", "rows", "rows-synced", "rows-written"])
def test_a_kill_without_records_leaves_the_row_whole_or_absent(tmp_path, point):
    results = tmp_path / "res.csv"
    killed = _export(results, None, crash=point)
    assert killed.returncode == -signal.SIGKILL
    assert _keys(results) in ([], KEYS)
    retry = _export(results, None, "--skip-existing")
    assert retry.returncode == 0, retry.stderr
    assert _keys(results) == KEYS
    assert run_group("check", results, "-q").exit_code == 0


@pytest.mark.slow
def test_check_reports_what_a_killed_append_left_until_the_next_one_finishes_it(tmp_path):
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    assert _export(results, folder, crash="rows-written").returncode == -signal.SIGKILL
    check = run_group("check", results, "--provenance", folder, "-q")
    pending = sorted(records_folder.pending_folder(folder, results).glob("*.json"))
    assert len(pending) == 2
    assert sorted(check.stderr.splitlines()) == sorted([
        f"{results}:2: no provenance record in {folder}",
        f"{results}:3: no provenance record in {folder}",
        *(f"{p}: left by an interrupted append; the next append to its results file with "
          f"--provenance {folder} finishes or removes it" for p in pending),
        f"error: {results}: 4 problems in 2 rows and 0 records"])
    retry = _export(results, folder, "--skip-existing")
    assert retry.returncode == 0
    assert run_group("check", results, "--provenance", folder, "-q").exit_code == 0


def test_the_retry_says_it_finished_an_interrupted_export(tmp_path, monkeypatch):
    """In process: the notes of a retry that finds rows and pending records of a killed one."""
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    assert _export(results, folder, crash="record-linked:1").returncode == -signal.SIGKILL
    r = run_cli(*TWO, "--config", "c", "--append", results, "--provenance", folder)
    assert r.exit_code == 0, r.stderr
    notes = [ln for ln in r.stderr.splitlines() if "mfu is 0.0" not in ln]
    assert notes == [
        f"note: {TWO[1]}: {NO_THROUGHPUT_NOTE}",
        "note: the run (2026-11-29T22:18:43Z, localhost, c, 1, 2) was already in "
        f"{results}, appended by an interrupted export; not appended again",
        "note: the run (2026-11-29T22:21:30Z, localhost, c, 1, 1) was already in "
        f"{results}, appended by an interrupted export; not appended again",
        f"note: put 2 provenance records of an interrupted export in place in {folder}"]


# ----------------------------------------------------------------------- the last guard


def test_a_cell_no_source_checked_is_still_not_published(tmp_path):
    opts = ExportOptions(config="c")
    result = export_run(TWO[1], opts)
    result.row["error"] = "x" * 5000
    with pytest.raises(AmscError) as e:
        publish([result], opts, PublishOptions(append=str(tmp_path / "r.csv")))
    assert str(e.value) == (f"{TWO[1]}: the row's error is 5,000 characters long (a cell "
                            "holds at most 4,096); not publishing it")
    result.row["error"] = "@SUM(A1)"
    with pytest.raises(AmscError, match="the row's error '@SUM\\(A1\\)' would run as a formula"):
        publish([result], opts, PublishOptions(), out=sys.stdout)
    assert list(tmp_path.iterdir()) == []
    # The hook's target, the run folder, is behind the same guard.
    run = tmp_path / "run"
    run.mkdir()
    with pytest.raises(AmscError, match="the row's error '@SUM\\(A1\\)' would run as a formula"):
        publish([result], opts, PublishOptions(run_folder=str(run)))
    assert list(run.iterdir()) == []


def test_the_run_folder_gets_the_row_first_and_never_keeps_it_without_its_record(
        tmp_path, monkeypatch):
    run = copy_run("minimal-1rank", tmp_path)
    opts = ExportOptions(config="test/cfg")
    result = export_run(run, opts, hash_files=True)
    order = []
    real_create = fs_create.create_file

    def create(path, data, **kwargs):
        order.append(Path(path).name)
        if Path(path).name == RECORD_FILE:
            raise AmscError(f"{path}: cannot write: No space left on device")
        return real_create(path, data, **kwargs)

    monkeypatch.setattr(fs_create, "create_file", create)
    monkeypatch.setattr(records_folder, "create_file", create)
    with pytest.raises(AmscError, match="No space left on device"):
        publish([result], opts, PublishOptions(run_folder=str(run)))
    assert order == [ROW_FILE, RECORD_FILE]  # the row first, as into a results file
    assert not (run / ROW_FILE).exists() and not (run / RECORD_FILE).exists()


def test_no_rows_to_append_make_no_results_file(tmp_path):
    # --keep-going with every run failed: nothing to append, so not even a header
    out = tmp_path / "r.csv"
    published = publish([], ExportOptions(config="c"), PublishOptions(append=str(out)))
    assert (published.appended, published.records, published.completed) == (None, [], [])
    empty = [tmp_path / "a", tmp_path / "b"]
    for d in empty:
        d.mkdir()
    r = run_cli(*empty, "--config", "c", "--keep-going", "--append", out)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.splitlines()[-1].startswith("error: 2 runs failed")
    assert not out.exists()


# ----------------------------------------------- previewing, then appending (issue 25, item 5)


def test_provenance_needs_append_and_writes_nothing_without_it(tmp_path):
    folder = tmp_path / "records"
    r = run_cli(TWO[1], "--config", "c", "--provenance", folder)
    assert error_line(r) == ("error: --provenance needs --append PATH: a record is the evidence "
                             "of a row in a results file (to see what a record would hold, pass "
                             "--format json)")
    assert r.exit_code == 2
    assert list(tmp_path.iterdir()) == []
    # The preview a user makes first, then the append: nothing stands in its way.
    assert run_cli(TWO[1], "--config", "c", "--format", "json").exit_code == 0
    results = tmp_path / "r.csv"
    r = run_cli(TWO[1], "--config", "c", "--append", results, "--provenance", folder, "-q")
    assert r.exit_code == 0, r.stderr
    assert run_group("check", results, "--provenance", folder, "-q").exit_code == 0


def test_skip_existing_and_allow_duplicate_contradict(tmp_path):
    r = run_cli(TWO[1], "--config", "c", "--append", tmp_path / "r.csv", "--skip-existing",
                "--allow-duplicate")
    assert error_line(r) == ("error: --skip-existing and --allow-duplicate contradict each "
                             "other; pass one")
    assert r.exit_code == 2 and list(tmp_path.iterdir()) == []


# ---------------------------------------------- records when the file changes under the append


def _paused_export(results: Path, folder: Path, point: str, tmp_path: Path
                   ) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), **paused(tmp_path, point)}
    p = subprocess.Popen([sys.executable, "-m", "ezpz_amsc", *map(str, TWO), "--config", "c",
                          "--append", str(results), "--provenance", str(folder), "-q"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until_paused(p, tmp_path, point)
    return p


@pytest.mark.slow
def test_rows_copied_into_a_file_that_replaced_it_get_their_records(tmp_path):
    """The rows were written, then the file was replaced by a copy of it (an editor's save):
    the append starts over on the copy, finds its rows there, and writes their records."""
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    results.write_text(",".join(HEADER) + "\n")
    writer = _paused_export(results, folder, "rows-synced", tmp_path)
    copy = tmp_path / "copy.csv"
    copy.write_bytes(results.read_bytes())
    copy.rename(results)
    release(tmp_path, "rows-synced")
    out, err = writer.communicate(timeout=120)
    assert (writer.returncode, out, err) == (0, "", "")
    assert _keys(results) == KEYS
    assert run_group("check", results, "--provenance", folder, "-q").exit_code == 0
    assert _hidden(folder) == []


@pytest.mark.slow
def test_records_that_cannot_take_their_names_wait_for_the_next_append(tmp_path):
    """The rows are in; the records folder turned read-only (here: immutable) before the
    records took their names. The error says so; the next append puts them in place."""
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    writer = _paused_export(results, folder, "rows-written", tmp_path)
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        release(tmp_path, "rows-written")
        writer.communicate(timeout=120)
        pytest.skip("chattr +i is not supported here")
    try:
        release(tmp_path, "rows-written")
        out, err = writer.communicate(timeout=120)
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    waiting = records_folder.pending_folder(folder, results)
    assert (writer.returncode, out) == (1, "")
    assert err == (f"error: {folder}: the rows are appended, but their provenance records could "
                   f"not take their names (Operation not permitted); they wait in {waiting}, and "
                   f"the next append with --provenance {folder} puts them in place\n")
    assert _keys(results) == KEYS
    retry = _export(results, folder)
    assert retry.returncode == 0, retry.stderr
    assert _keys(results) == KEYS
    assert run_group("check", results, "--provenance", folder, "-q").exit_code == 0


def test_publishing_into_the_run_directory_returns_the_rows_file(tmp_path):
    run = copy_run("minimal-1rank", tmp_path)
    opts = ExportOptions(config="test/cfg")
    result = export_run(run, opts, hash_files=True)
    done = publish([result], opts, PublishOptions(run_folder=str(run)))
    assert (done.row_file, done.records, done.appended) == (run / ROW_FILE, [run / RECORD_FILE],
                                                            None)
    assert parse_csv((run / ROW_FILE).read_text()) == [expected_row("minimal-1rank")]
    assert json.loads((run / RECORD_FILE).read_text())["row"] == expected_row("minimal-1rank")


def test_a_run_folder_takes_the_row_of_its_own_run_only(tmp_path):
    opts = ExportOptions(config="c")
    result = export_run(TWO[1], opts, hash_files=True)
    with pytest.raises(ValueError, match="^a run folder takes the row of its own run$"):
        publish([result, result], opts, PublishOptions(run_folder=str(tmp_path)))
    assert list(tmp_path.iterdir()) == []
