"""datapackage.json's content (results/package.py): reading it, check's note on an outdated
one, and frictionless reading every file this tool writes the way this tool does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import (
    run_group,
)
from packages import (
    BAD,
    GOOD_ROW,
    HEADER_LINE,
    WRITTEN,
    _bad_file,
    _check,
    _edited,
    _frictionless_errors,
    _package_with,
    _results,
    _set_mfu_max,
    _written,
)

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.describe import describe
from ezpz_amsc.results.fields import table_schema
from ezpz_amsc.results.package import (
    MAX_PACKAGE_BYTES,
    PACKAGE_FILE,
    load_package,
    package_notes,
    schema_differences,
)
from ezpz_amsc.results.schema import HEADER


@pytest.mark.parametrize("content, why", [
    ("{", "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
          "(char 1)); fix it or move it away"),
    ('{"x": NaN}', "not valid JSON (NaN is not JSON); fix it or move it away"),
    ("[]", "not a data package (a JSON object whose resources are a list); fix it or move it "
           "away"),
    ('{"resources": {}}', "not a data package (a JSON object whose resources are a list); fix "
                          "it or move it away"),
])
def test_an_existing_package_that_is_not_one_is_refused_and_left_alone(tmp_path, content, why):
    results = _results(tmp_path, GOOD_ROW)
    target = tmp_path / PACKAGE_FILE
    target.write_text(content)
    with pytest.raises(AmscError) as e:
        describe(results)
    assert e.value.format_message() == f"{target}: {why}"
    assert target.read_text() == content

pytestmark = pytest.mark.usefixtures("clean_hook_env")



def test_a_package_that_is_a_folder_or_too_big(tmp_path, monkeypatch):
    results = _results(tmp_path, GOOD_ROW)
    target = tmp_path / PACKAGE_FILE
    target.mkdir()
    with pytest.raises(AmscError, match=r"datapackage.json: is a directory, not a data package$"):
        describe(results)
    target.rmdir()
    target.write_text("{}")
    monkeypatch.setattr("ezpz_amsc.results.package.MAX_PACKAGE_BYTES", 1)
    with pytest.raises(AmscError, match=r"datapackage.json: over 0 MiB; not a data package "
                                        r"this tool wrote$"):
        describe(results)


@pytest.mark.slow
def test_a_package_over_64_mib_is_refused_and_one_of_64_mib_is_read(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    target = tmp_path / PACKAGE_FILE
    assert MAX_PACKAGE_BYTES == 64 * 2**20
    target.write_bytes(b"{}" + b" " * (64 * 2**20 - 2))  # exactly the cap: read
    assert describe(results).written
    target.write_bytes(b"{}" + b" " * (64 * 2**20 - 1))  # one byte more
    with pytest.raises(AmscError) as e:
        describe(results)
    assert e.value.format_message() == (f"{target}: over 64 MiB; not a data package this tool "
                                        "wrote")


def test_the_file_is_indented_utf8_json(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    (tmp_path / PACKAGE_FILE).write_text(json.dumps({"title": "Résultats ⚡"}))
    describe(results)
    data = (tmp_path / PACKAGE_FILE).read_bytes()
    assert data.startswith('{\n  "title": "Résultats ⚡",\n  "resources": [\n    {\n      '
                           '"name": "runs",\n'.encode())
    assert data.endswith(b"\n}\n")


def test_load_package_of_a_missing_file():
    assert load_package(Path("/nonexistent/datapackage.json")) == (None, {})


@pytest.mark.parametrize("edit, differences", [
    (lambda s: None, []),
    (_set_mfu_max, ["1 field changed: mfu"]),
    (lambda s: s["fields"].pop(), ["1 field missing: error"]),
    (lambda s: s["fields"].append({"name": "queue", "type": "string"}),
     ["1 field not in the row: queue"]),
    (lambda s: s["fields"].insert(0, s["fields"].pop()), ["fields in another order"]),
    (lambda s: s.update(primaryKey=["timestamp"]), ["primaryKey differs"]),
    (lambda s: s.pop("missingValues"), ["missingValues differs"]),
    (lambda s: (s["fields"].pop(), s["fields"].pop(), s["fields"][0].update(type="string")),
     ["2 fields missing: steps, error", "1 field changed: timestamp"]),
    (lambda s: (s["fields"].append({"name": "a"}), s["fields"].append({"name": "b"}),
                s["fields"][0].update(type="string"), s["fields"][1].update(type="x")),
     ["2 fields not in the row: a, b", "2 fields changed: timestamp, system"]),
])
def test_schema_differences(edit, differences):
    assert schema_differences(_edited(edit), table_schema()) == differences


def test_schema_differences_of_no_inline_schema():
    assert schema_differences("schema.json", table_schema()) == ["no inline schema"]
    assert schema_differences({"fields": ["x"]}, table_schema())[0] == (
        "14 fields missing: " + ", ".join(HEADER))


def test_no_note_without_a_package_or_with_a_current_one(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    assert package_notes(results) == []
    describe(results)
    assert package_notes(results) == []


def test_no_note_for_a_package_that_does_not_list_the_file(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    (tmp_path / PACKAGE_FILE).write_text(json.dumps({"resources": [{"path": "other.csv"}]}))
    assert package_notes(results) == []


def test_a_note_for_a_package_with_another_schema(tmp_path):
    results = _package_with(tmp_path, _edited(_set_mfu_max))
    assert package_notes(results) == [
        f"{tmp_path / PACKAGE_FILE}: its schema of runs.csv differs from this tool's (1 field "
        f"changed: mfu); to update it: ezpz-amsc describe {results}"]


def test_a_note_names_every_difference(tmp_path):
    results = _package_with(tmp_path, _edited(lambda s: (_set_mfu_max(s), s.pop("primaryKey"))))
    assert package_notes(results) == [
        f"{tmp_path / PACKAGE_FILE}: its schema of runs.csv differs from this tool's (1 field "
        f"changed: mfu; primaryKey differs); to update it: ezpz-amsc describe {results}"]


def test_a_note_for_a_package_that_cannot_be_read(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    (tmp_path / PACKAGE_FILE).write_text("[]")
    assert package_notes(results) == [
        f"{tmp_path / PACKAGE_FILE}: not a data package (a JSON object whose resources are a "
        "list); fix it or move it away"]


@pytest.mark.slow
@pytest.mark.parametrize("name", WRITTEN)
def test_frictionless_validates_every_file_this_tool_writes(tmp_path, name):
    results = _written(name, tmp_path)
    assert _check(results) == 0
    describe(results)
    assert _frictionless_errors(results.parent / PACKAGE_FILE) == []


@pytest.mark.slow
@pytest.mark.parametrize("name, rows, error", BAD, ids=[b[0] for b in BAD])
def test_frictionless_and_check_both_refuse(tmp_path, name, rows, error):
    results = _results(tmp_path, GOOD_ROW)
    describe(results)  # the package of a good file, then the file goes bad
    _bad_file(results, rows)
    assert _check(results) == 1
    assert error in _frictionless_errors(tmp_path / PACKAGE_FILE)


@pytest.mark.slow
def test_the_frictionless_command_line_as_the_docs_give_it(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    assert run_group("describe", results, "-q").exit_code == 0
    script = Path(sys.executable).with_name("frictionless")
    ok = subprocess.run([script, "validate", PACKAGE_FILE], cwd=tmp_path, capture_output=True,
                        text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    results.write_text(f"{HEADER_LINE}\n{GOOD_ROW.replace(',pass,', ',PASS,')}\n")
    bad = subprocess.run([script, "validate", PACKAGE_FILE], cwd=tmp_path, capture_output=True,
                         text=True)
    assert bad.returncode == 1 and "constraint-error" in bad.stdout


@pytest.mark.slow
def test_readers_get_utc_aware_timestamps_and_the_described_types(tmp_path):
    """frictionless, pandas and DuckDB read a described results file with the types the
    package gives: the timestamp an aware UTC time, counts whole numbers, an empty cell a
    missing value (never 0)."""
    import datetime

    from frictionless import Package

    results = _results(tmp_path, GOOD_ROW)
    describe(results)
    (row,) = Package(str(tmp_path / PACKAGE_FILE)).get_resource("runs").read_rows()
    assert row["timestamp"] == datetime.datetime(2026, 11, 29, 22, 18, 43,
                                                 tzinfo=datetime.timezone.utc)
    assert row["timestamp"].utcoffset() == datetime.timedelta(0)
    assert (row["nodes"], row["gpus"], row["steps"], row["mfu"]) == (1, 2, 30, None)

    pandas = pytest.importorskip("pandas")
    frame = pandas.read_csv(results, parse_dates=["timestamp"])
    assert str(frame["timestamp"].dt.tz) == "UTC"
    assert frame["timestamp"][0] == pandas.Timestamp("2026-11-29T22:18:43", tz="UTC")
    assert str(frame["gpus"].dtype) == "int64" and pandas.isna(frame["mfu"][0])

    duckdb = pytest.importorskip("duckdb")
    got = duckdb.sql(f"SELECT timestamp, gpus, mfu, wall_time_sec FROM read_csv('{results}', "
                     "types={'timestamp': 'TIMESTAMPTZ'}) ").fetchall()
    ((when, gpus, mfu, wall),) = got
    assert when.astimezone(datetime.timezone.utc) == datetime.datetime(
        2026, 11, 29, 22, 18, 43, tzinfo=datetime.timezone.utc)
    assert (gpus, mfu, wall) == (2, None, 4.034)


def test_an_offset_check_refuses_is_the_same_instant_to_frictionless(tmp_path):
    """check wants exactly YYYY-MM-DDTHH:MM:SSZ (the dashboard's form); frictionless reads any
    ISO 8601 time, an offset too, as the same UTC instant: never a wrong time."""
    import datetime

    from frictionless import Package

    results = _results(tmp_path, GOOD_ROW)
    describe(results)
    results.write_text(f"{HEADER_LINE}\n{GOOD_ROW.replace('22:18:43Z', '23:18:43+01:00')}\n")
    assert _check(results) == 1
    (row,) = Package(str(tmp_path / PACKAGE_FILE)).get_resource("runs").read_rows()
    assert row["timestamp"] == datetime.datetime(2026, 11, 29, 22, 18, 43,
                                                 tzinfo=datetime.timezone.utc)
