"""The reproduce subcommand: a provenance record exported again, and what changed since."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import (
    REPO,
    error_line,
    export_with_records,
    five_runs,
    records_in,
    run_cli,
    run_group,
    sha256,
)

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.reproduce import reproduce
from ezpz_amsc.records.record import load_record, options_from_record

pytestmark = pytest.mark.usefixtures("clean_hook_env")

RUN = "fsdp_tp-2rank"


def test_reproduce_identical(fixture_run, tmp_path, monkeypatch):
    run = fixture_run(RUN)
    folder = tmp_path / "records"
    monkeypatch.chdir(tmp_path)
    assert run_cli(Path(run.name), "--config", "c", "--reducer", "max", "--append", "r.csv",
                   "--provenance", "records").exit_code == 0
    (path,) = records_in(folder)
    monkeypatch.chdir(REPO)  # the record holds the absolute run directory
    result = run_group("reproduce", path)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == f"{path}: identical row (14 cells); 2 source files unchanged\n"
    # The alias of the one-mode CLI.
    assert run_cli("--reproduce", path).stdout == result.stdout


def test_reproduce_after_a_metrics_file_is_edited(fixture_run, tmp_path):
    run, path = _recorded(fixture_run, tmp_path)
    metrics = run / "metrics-0.jsonl"
    old_sha, old_size = sha256(metrics), metrics.stat().st_size
    lines = metrics.read_text().splitlines(keepends=True)
    rec = json.loads(lines[-1])
    assert rec["metrics"]["train/iter"] == 30
    rec["metrics"]["train/loss"] = 1.5  # the last step: final_loss changes, nothing else
    lines[-1] = json.dumps(rec) + "\n"
    metrics.write_text("".join(lines))
    new_sha, new_size = sha256(metrics), metrics.stat().st_size

    result = run_group("reproduce", path)
    assert result.exit_code == 1
    assert error_line_of(result) == "error: the re-exported row differs from the record"
    assert result.stdout.splitlines() == [
        f"{path}: row differs in 1 of 14 cells",
        "  final_loss: recorded '7.989204', now '1.500000'",
        "  source files (1 source file unchanged):",
        f"  metrics-0.jsonl: changed: sha256 {old_sha[:16]}.. -> {new_sha[:16]}.., "
        f"{old_size} -> {new_size} bytes",
    ]


def _recorded(fixture_run, tmp_path, name: str = RUN) -> tuple[Path, Path]:
    """A copy of the shipped run ``name`` appended with its provenance record: the run, the
    record."""
    run = fixture_run(name)
    folder = tmp_path / "records"
    assert run_cli(run, "--config", "c", "--append", tmp_path / "r.csv", "--provenance", folder,
                   "-q").exit_code == 0
    (path,) = records_in(folder)
    return run, path


def error_line_of(result) -> str:
    (line,) = [ln for ln in result.stderr.splitlines() if ln.strip()]
    return line


def test_reproduce_a_moved_run(fixture_run, tmp_path):
    run, path = _recorded(fixture_run, tmp_path)
    moved = tmp_path / "archive" / "run"
    moved.parent.mkdir()
    shutil.move(run, moved)
    result = run_group("reproduce", path)
    assert error_line(result) == (f"error: {path}: run directory {run} does not exist here; "
                                  "pass --run-dir DIR where the run is now")
    result = run_group("reproduce", path, "--run-dir", moved)
    assert result.exit_code == 0, result.stderr
    assert "identical row (14 cells); 2 source files unchanged" in result.stdout


def test_a_run_recorded_on_another_host_says_which(fixture_run, tmp_path):
    run, path = _recorded(fixture_run, tmp_path)
    shutil.rmtree(run)
    def missing(where: str = "") -> str:
        return (f"error: {path}: run directory {run}{where} does not exist here; pass "
                "--run-dir DIR where the run is now")

    assert error_line(run_group("reproduce", path)) == missing()  # recorded on this host
    rec = json.loads(path.read_text())
    rec["exported"]["host"] = "aurora-uan-0010"
    path.write_text(json.dumps(rec))
    assert error_line(run_group("reproduce", path)) == missing(" (recorded on aurora-uan-0010)")


def _recorded_minimal(fixture_run, tmp_path) -> tuple[Path, Path]:
    """A copy of minimal-1rank appended with its provenance record: the run, the record."""
    return _recorded(fixture_run, tmp_path, "minimal-1rank")


def test_reproduce_when_a_source_file_is_gone_or_new(fixture_run, tmp_path):
    run, path = _recorded_minimal(fixture_run, tmp_path)
    info_sha = sha256(run / "run_info.json")
    (run / "run_info.json").unlink()  # placement now comes from the report: same row
    result = run_group("reproduce", path)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"{path}: identical row (14 cells); but source files changed:",
        f"  run_info.json: gone (recorded sha256 {info_sha[:16]}..)",
        "  train/report-train.md: read now, not in the record (sha256 "
        f"{sha256(run / 'train' / 'report-train.md')[:16]}..)",
    ]


@pytest.fixture
def recorded(fixture_run, tmp_path) -> tuple[list[Path], list[Path]]:
    """Every shipped run appended with a provenance record: the runs, the records."""
    runs = five_runs(fixture_run)
    folder = tmp_path / "records"
    assert export_with_records(runs, tmp_path / "res.csv", folder, "-q").exit_code == 0
    return runs, records_in(folder)


@pytest.mark.slow
def test_reproduce_many_records_and_broken_ones(recorded, tmp_path):
    runs, paths = recorded
    folder = tmp_path / "records"
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": 1}')
    result = run_group("reproduce", *paths, bad)
    assert result.exit_code == 1
    assert [ln.split(": ", 1)[1] for ln in result.stdout.splitlines()] == [
        "identical row (14 cells); 2 source files unchanged"] * 5
    assert result.stderr.splitlines() == [
        f"error: {bad}: not an ezpz-amsc provenance record (no row of the results schema)",
        "error: 1 of 6 records could not be re-exported"]
    minimal = next(r for r in runs if r.name == "minimal-1rank")
    with open(minimal / "metrics.jsonl", "a") as f:  # one more step: steps and wall time move
        f.write(json.dumps({"timestamp": 1795991000.0, "rank": 0,
                            "metrics": {"iter": 40, "dt": 1.0, "loss": 300.0}}) + "\n")
    result = run_group("reproduce", *paths, bad)
    assert [ln for ln in result.stdout.splitlines() if not ln.startswith(str(folder))] == [
        "  wall_time_sec: recorded '0.027', now '1.027'",
        "  final_loss: recorded '338.000000', now '300.000000'",
        "  steps: recorded '34', now '35'",
        "  source files (1 source file unchanged):",
        f"  metrics.jsonl: changed: sha256 {_recorded_sha(paths, 'metrics.jsonl')[:16]}.. -> "
        f"{sha256(minimal / 'metrics.jsonl')[:16]}.., 7403 -> "
        f"{(minimal / 'metrics.jsonl').stat().st_size} bytes"]
    assert result.stderr.splitlines()[-1] == (
        "error: rows differ for 1 of 6 records; 1 of 6 records could not be re-exported")
    # -q: only the record whose row differs (errors still shown); same exit status
    quiet = run_group("reproduce", *paths, bad, "-q")
    assert quiet.exit_code == 1 and quiet.stderr == result.stderr
    assert quiet.stdout.splitlines() == [ln for ln in result.stdout.splitlines()
                                         if "identical row" not in ln]
    assert len(quiet.stdout.splitlines()) == 6


@pytest.mark.slow
def test_reproduce_runs_moved_into_one_folder(recorded, tmp_path):
    """--run-dir with several records: the folder holding the runs under their names."""
    runs, paths = recorded
    archive = tmp_path / "archive"
    archive.mkdir()
    for run in runs:
        shutil.move(run, archive / run.name)
    result = run_group("reproduce", *paths, "--run-dir", archive)
    assert (result.exit_code, result.stderr) == (0, "")
    assert [ln.split(": ", 1)[1] for ln in result.stdout.splitlines()] == [
        "identical row (14 cells); 2 source files unchanged"] * 5
    # One record alone: the run itself, or the folder that holds it under its name.
    one = next(p for p in paths if load_record(p)["run_dir"].endswith("minimal-1rank"))
    for given in (archive, archive / "minimal-1rank"):
        assert run_group("reproduce", one, "--run-dir", given).exit_code == 0
    shutil.rmtree(archive / "minimal-1rank")
    result = run_group("reproduce", *paths, "--run-dir", archive)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {one}: run directory {archive / 'minimal-1rank'} does not exist here; with "
        "several records, --run-dir is the folder that holds the moved runs, each under its "
        "recorded name",
        "error: 1 of 5 records could not be re-exported"]


def test_reproduce_a_moved_run_from_python_and_a_wrong_run_dir(fixture_run, tmp_path):
    run, path = _recorded_minimal(fixture_run, tmp_path)
    moved = tmp_path / "moved-run"
    shutil.move(run, moved)
    assert reproduce(path, moved).identical  # one record: the run directory itself
    assert error_line(run_group("reproduce", path, "--run-dir", tmp_path / "nope")) == (
        f"error: {path}: run directory {tmp_path / 'nope'} does not exist here; pass the run "
        "directory")


def test_reproduce_as_json_lines(fixture_run, tmp_path):
    run, path = _recorded_minimal(fixture_run, tmp_path)
    result = run_group("reproduce", path, "--format", "json")
    assert result.exit_code == 0
    assert [json.loads(ln) for ln in result.stdout.splitlines()] == [{
        "record": str(path), "run_dir": str(run), "identical": True, "cells": [],
        "files_changed": [], "files_unchanged": 2, "files_not_compared": [], "note": None}]
    old_sha = sha256(run / "metrics.jsonl")
    with open(run / "metrics.jsonl", "a") as f:
        f.write(json.dumps({"timestamp": 1795991000.0, "rank": 0,
                            "metrics": {"iter": 40, "dt": 1.0, "loss": 300.0}}) + "\n")
    result = run_group("reproduce", path, "--format", "json", "-q")  # -q: json is all of it
    assert result.exit_code == 1
    (obj,) = [json.loads(ln) for ln in result.stdout.splitlines()]
    assert obj["identical"] is False
    assert obj["cells"] == [
        {"column": "wall_time_sec", "recorded": "0.027", "now": "1.027"},
        {"column": "final_loss", "recorded": "338.000000", "now": "300.000000"},
        {"column": "steps", "recorded": "34", "now": "35"}]
    size = (run / "metrics.jsonl").stat().st_size
    assert obj["files_changed"] == [
        f"metrics.jsonl: changed: sha256 {old_sha[:16]}.. -> {sha256(run / 'metrics.jsonl')[:16]}"
        f".., 7403 -> {size} bytes"]
    assert obj["files_unchanged"] == 1
    assert error_line_of(result) == "error: the re-exported row differs from the record"


def _recorded_sha(paths: list[Path], rel: str) -> str:
    return next(f["sha256"] for p in paths for f in load_record(p)["files"] if f["path"] == rel)


def test_reproduce_refuses_an_option_it_does_not_know():
    rec = {"options": {"config": "c", "sharding": 2, "future_flag": None},
           "tool": {"version": "9"}}
    with pytest.raises(AmscError, match=r"r\.json: made with option sharding that ezpz-amsc "
                                        r"\S+ does not know; reproduce it with ezpz-amsc 9"):
        options_from_record(rec, "r.json")
    rec["options"]["sharding"] = None  # unset: nothing lost by not knowing it
    assert options_from_record(rec, "r.json").config == "c"
    rec["options"]["warmup"] = -1
    with pytest.raises(AmscError, match="its options cannot be used: --warmup must be 0"):
        options_from_record(rec, "r.json")


@pytest.mark.parametrize("content, why", [
    (b"not json", "not JSON"),
    (b"[]", "not a JSON object"),
    (b'{"schema": "1"}', "no schema version"),
])
def test_a_file_that_is_no_record_is_one_error_line(tmp_path, content, why):
    path = tmp_path / "r.json"
    path.write_bytes(content)
    assert error_line(run_group("reproduce", path)) == (
        f"error: {path}: not an ezpz-amsc provenance record ({why})")
