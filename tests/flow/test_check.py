"""The check workflow (flow/check.py) as a library: what it finds, as data, before the command
line words it (tests/cli/test_check_command.py runs it through click)."""

from __future__ import annotations

import pytest
from helpers import EXPECTED, run_cli

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.check import check_file
from ezpz_amsc.results.schema import HEADER

pytestmark = pytest.mark.usefixtures("clean_hook_env")
ROW = EXPECTED["fsdp_tp-2rank"]


def test_a_clean_file(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text(",".join(HEADER) + "\n" + ROW + "\n")
    found = check_file(p)
    assert (found.rows, found.problems, found.header_differs, found.clean) == (1, [], False, True)
    assert (found.provenance, found.records) == (None, 0)


def test_the_header_problem_is_known_by_kind_not_by_its_words(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text(",".join(reversed(HEADER)) + "\n" + ",".join(reversed(ROW.split(","))) + "\n")
    found = check_file(p)
    assert found.header_differs and found.rows == 1
    assert found.problems == [f"{p}:1: header differs from this tool's (the same columns in "
                              "another order)"]
    p.write_text(",".join(HEADER) + "\n" + ROW + "\n" + ROW + "\n")
    found = check_file(p)
    assert not found.header_differs and found.problems == [f"{p}:3: same run as line 2"]


def test_rows_are_paired_with_their_records(tmp_path):
    from helpers import RUNS

    results, folder = tmp_path / "runs.csv", tmp_path / "records"
    r = run_cli(RUNS / "minimal-1rank", "--config", "c", "--append", results,
                "--provenance", folder, "-q")
    assert r.exit_code == 0, r.stderr
    found = check_file(results, str(folder))
    assert (found.rows, found.records, found.problems, found.provenance) == (
        1, 1, [], str(folder))
    for record in folder.glob("*.json"):
        record.unlink()
    found = check_file(results, str(folder))
    assert found.problems == [f"{results}:2: no provenance record in {folder}"]
    assert found.records == 0 and not found.clean


def test_a_file_it_cannot_read_is_an_error(tmp_path):
    with pytest.raises(AmscError, match="no such file"):
        check_file(tmp_path / "missing.csv")


def test_which_csv_files_are_results_files(tmp_path):
    import os

    from ezpz_amsc.flow.check import is_results_file
    from ezpz_amsc.results.schema import REQUIRED

    def written(name: str, data: bytes):
        p = tmp_path / name
        p.write_bytes(data)
        return p

    assert is_results_file(written("runs.csv", b"anything\n"))  # by name
    assert is_results_file(written("amsc.csv", b""))
    assert is_results_file(written("a.csv", (",".join(REQUIRED) + "\n").encode()))  # exactly
    assert is_results_file(written("b.csv", ("\ufeff" + ",".join(HEADER) + "\r\n").encode()))
    assert is_results_file(written("c.csv", b"a,b\n1,2\n")) is False
    assert is_results_file(written("d.csv", b"\xff\xfe t\x00i\x00\n")) is False  # not UTF-8
    assert is_results_file(written("e.csv", b'"timestamp\n')) is False  # csv cannot read it
    fifo = tmp_path / "f.csv"
    os.mkfifo(fifo)
    assert is_results_file(fifo)  # cannot be read: checked, so that check says why
