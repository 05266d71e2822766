"""The describe subcommand: datapackage.json beside a results file, on request only."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers import EXPECTED, REPO, RUNS, error_line, outcome, run_cli, run_group

from ezpz_amsc.cli.group import COMMANDS, load_command
from ezpz_amsc.results.schema import HEADER

pytestmark = pytest.mark.usefixtures("clean_hook_env")

HEADER_LINE = ",".join(HEADER)
GOOD_ROW = EXPECTED["fsdp_tp-2rank"]


def _results(tmp_path, *rows):
    p = tmp_path / "runs.csv"
    p.write_text("\n".join([HEADER_LINE, *rows]) + "\n")
    return p


def test_describe_writes_the_package_and_says_so(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    target = tmp_path / "datapackage.json"
    assert outcome(run_group("describe", results)) == (
        0, f"{target}: wrote resource runs (1 row)\n", "")
    assert json.loads(target.read_text())["resources"][0]["path"] == "runs.csv"
    assert outcome(run_group("describe", results)) == (
        0, f"{target}: up to date: resource runs (1 row)\n", "")


def test_describe_lists_the_records_and_notes_what_it_leaves_out(tmp_path):
    results = tmp_path / "res" / "runs.csv"
    folder = results.parent / "records"
    r = run_cli(RUNS / "minimal-1rank", RUNS / "fsdp_tp-2rank", "--config", "c", "--append",
                results, "--provenance", folder, "-q")
    assert r.exit_code == 0
    with results.open("a") as f:
        f.write(GOOD_ROW + "\n")  # a row without a record
    target = results.parent / "datapackage.json"
    assert outcome(run_group("describe", results)) == (
        0, f"{target}: wrote resource runs (3 rows; 2 provenance records in {folder})\n",
        f"note: 1 row without a record in {folder}\n")
    assert outcome(run_group("describe", results, "--provenance", folder, "-q")) == (
        0, f"{target}: up to date: resource runs (3 rows; 2 provenance records in {folder})\n",
        "")


@pytest.mark.parametrize("make, message", [
    (lambda p: p.write_text(f"{HEADER_LINE}\n{GOOD_ROW.replace(',pass,', ',ok,')}\n"),
     "error: {p}: 1 problem in 1 row; 'ezpz-amsc check {p}' lists them: a data package must "
     "not describe a file check refuses"),
    (lambda p: None, "error: {p}: no such file"),
    (lambda p: p.mkdir(), "error: {p}: is a directory; describe needs a results CSV"),
])
def test_describe_refuses_what_check_refuses(tmp_path, make, message):
    p = tmp_path / "runs.csv"
    make(p)
    line = error_line(run_group("describe", p))
    assert line == message.format(p=p)
    assert not (tmp_path / "datapackage.json").exists()


def test_describe_needs_a_results_file(tmp_path):
    r = run_group("describe")
    assert r.exit_code == 2
    assert r.stderr.splitlines()[-1] == "error: missing RESULTS_CSV; try 'ezpz-amsc describe -h' " \
                                        "for help"


def test_export_never_writes_a_package(tmp_path):
    results = tmp_path / "runs.csv"
    assert run_cli(RUNS / "fsdp_tp-2rank", "--config", "c", "--append", results, "--provenance",
                   tmp_path / "records", "-q").exit_code == 0
    assert run_group("check", results, "-q").exit_code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["records", "runs.csv"]


@pytest.mark.slow
def test_describe_loads_no_numpy(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    code = ("import sys\nfrom ezpz_amsc.cli.group import main\n"
            "try:\n    main(['describe', sys.argv[1]])\nexcept SystemExit as e:\n"
            "    assert e.code in (0, None), e.code\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'numpy'))\n")
    p = subprocess.run([sys.executable, "-c", code, str(results)], capture_output=True,
                       text=True, cwd=REPO, check=True)
    assert p.stdout.splitlines()[-1] == "[]"


def test_describe_help_is_the_reference(tmp_path):
    # runs the command, then its help: every word of the help is the one docs/cli.md shows
    assert run_group("describe", _results(tmp_path, GOOD_ROW), "-q").exit_code == 0
    reference = (REPO / "docs" / "cli.md").read_text()
    page = run_group("describe", "--help").stdout
    assert f"## `ezpz-amsc describe`\n\n```text\n{page}```\n" in reference
    assert page.startswith("Usage: ezpz-amsc describe RESULTS_CSV... [--provenance DIR]\n")
    assert "  ezpz-amsc describe results/runs.csv" in page
    assert "  0  datapackage.json written, or already up to date" in page
    group = run_group("--help").stdout
    assert "  describe   Write a results CSV's datapackage.json: schema and records.\n" in group


@pytest.mark.parametrize("name", ["check", "describe"])
def test_a_command_is_named_as_the_group_calls_it(name):
    assert load_command(COMMANDS[name]).name == name


def test_describe_takes_several_files_each_into_its_folders_package(tmp_path):
    header = ",".join(HEADER)
    a, b = tmp_path / "aurora" / "runs.csv", tmp_path / "polaris" / "runs.csv"
    for p in (a, b):
        p.parent.mkdir()
        p.write_text(f"{header}\n{EXPECTED['fsdp_tp-2rank']}\n")
    r = run_group("describe", a, b)
    assert (r.exit_code, r.stderr) == (0, "")
    assert r.stdout.splitlines() == [
        f"{a.parent / 'datapackage.json'}: wrote resource runs (1 row)",
        f"{b.parent / 'datapackage.json'}: wrote resource runs (1 row)"]
    bad = tmp_path / "bad.csv"
    bad.write_text(f"{header}\n{EXPECTED['fsdp_tp-2rank'].replace(',pass,', ',ok,')}\n")
    r = run_group("describe", a, bad)
    assert r.exit_code == 1
    assert r.stdout.splitlines() == [f"{a.parent / 'datapackage.json'}: up to date: resource "
                                     "runs (1 row)"]
    assert r.stderr.splitlines() == [
        f"error: {bad}: 1 problem in 1 row; 'ezpz-amsc check {bad}' lists them: a data package "
        "must not describe a file check refuses",
        "error: 1 of 2 files not described"]
    assert not (tmp_path / "datapackage.json").exists()
    r = run_group("describe", a, b, "--provenance", tmp_path)
    assert r.exit_code == 2 and "--provenance takes one RESULTS_CSV" in r.stderr
