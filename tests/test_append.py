"""--append: create with header, append without, refuse any other header (SPEC §2.5)."""

from __future__ import annotations

import csv

import pytest
from conftest import RUNS, error_line, parse_csv, run_cli

from ezpz_amsc.row import HEADER

GOOD = RUNS / "fsdp_tp-2rank"
OTHER = RUNS / "fsdp_tp-1rank-launch"


def test_append_creates_file_and_folders(tmp_path):
    out = tmp_path / "results" / "deep" / "runs.csv"
    r = run_cli(GOOD, "--config", "c", "--append", out)
    assert r.exit_code == 0 and r.stdout == ""
    rows = parse_csv(out.read_text())
    assert len(rows) == 1 and rows[0]["throughput_tokens_per_sec"] == "3930.349"


def test_append_twice_one_header(tmp_path):
    out = tmp_path / "runs.csv"
    run_cli(GOOD, "--config", "a", "--append", out)
    run_cli(OTHER, "--config", "b", "--append", out)
    text = out.read_text()
    assert text.count("timestamp,system") == 1
    assert [r["config"] for r in parse_csv(text)] == ["a", "b"]


def test_empty_existing_file_gets_header(tmp_path):
    out = tmp_path / "runs.csv"
    out.write_text("")
    assert run_cli(GOOD, "--config", "c", "--append", out).exit_code == 0
    assert len(parse_csv(out.read_text())) == 1


@pytest.mark.parametrize("header", [
    ",".join(reversed(HEADER)),  # same columns, other order
    ",".join(HEADER[:-1]),  # one column short
    ",".join(HEADER) + ",extra",
    "system,timestamp," + ",".join(HEADER[2:]),
    "model,tokens_per_sec,nodes",
])
def test_foreign_header_refused_and_file_untouched(tmp_path, header):
    out = tmp_path / "runs.csv"
    before = (header + "\n1,2,3\n").encode()
    out.write_bytes(before)
    line = error_line(run_cli(GOOD, "--config", "c", "--append", out))
    assert "existing header differs" in line and "refusing to append" in line
    assert out.read_bytes() == before


def test_append_to_directory_is_an_error(tmp_path):
    line = error_line(run_cli(GOOD, "--config", "c", "--append", tmp_path))
    assert "is a directory" in line


def test_appended_rows_parse_with_csv_module(tmp_path):
    out = tmp_path / "runs.csv"
    run_cli(GOOD, "--config", 'label, with "quotes"', "--append", out)
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["config"] == 'label, with "quotes"'


def test_append_below_a_file_is_a_clear_error(tmp_path):
    blocker = tmp_path / "results"
    blocker.write_text("not a folder")
    line = error_line(run_cli(GOOD, "--config", "c", "--append", blocker / "runs.csv"))
    assert f"{blocker}: exists and is not a folder" in line
