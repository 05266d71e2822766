"""``describe`` (flow/describe.py): datapackage.json written beside a results file, its
records listed as sources, an update that keeps what people added."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest
from helpers import (
    fail_for,
    records_in,
)
from packages import (
    GOOD_ROW,
    _read,
    _records_in_line_order,
    _results,
)

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.describe import describe
from ezpz_amsc.results.fields import table_schema
from ezpz_amsc.results.package import (
    PACKAGE_FILE,
    encode,
)
from ezpz_amsc.results.schema import HEADER

pytestmark = pytest.mark.usefixtures("clean_hook_env")



def test_a_new_package_describes_the_file_and_lists_its_records(published):
    results, folder = published
    done = describe(results)
    target = results.parent / PACKAGE_FILE
    assert (done.path, done.resource, done.rows, done.records, done.sources, done.written,
            done.notes) == (target, "runs", 5, folder, 5, True, [])
    package = _read(target)
    assert list(package) == ["profile", "resources"]
    assert package["profile"] == "tabular-data-package"
    (resource,) = package["resources"]
    assert list(resource) == ["name", "path", "profile", "format", "mediatype", "encoding",
                              "schema", "sources"]
    assert {k: v for k, v in resource.items() if k not in ("schema", "sources")} == {
        "name": "runs", "path": "runs.csv", "profile": "tabular-data-resource", "format": "csv",
        "mediatype": "text/csv", "encoding": "utf-8"}
    assert resource["schema"] == table_schema()
    records = {p.name: json.loads(p.read_text())["row"] for p in records_in(folder)}
    lines = results.read_text().splitlines()[1:]
    # one source per row, in line order, each naming the row's run
    listed = [s["path"] for s in resource["sources"]]
    assert [",".join(records[Path(p).name][c] for c in HEADER) for p in listed] == lines
    assert all(p.startswith("records/") for p in listed)
    first = records[Path(listed[0]).name]
    assert resource["sources"][0]["title"] == (
        f"provenance record: agpt/x on localhost, 1 node, {first['gpus']} gpu"
        f"{'' if first['gpus'] == '1' else 's'}, {first['timestamp']}")
    assert target.read_bytes() == encode(package) and target.read_text().endswith("}\n")


def test_a_package_without_records(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    done = describe(results)
    assert (done.records, done.sources) == (None, 0)
    resource = _read(tmp_path / PACKAGE_FILE)["resources"][0]
    assert "sources" not in resource


def test_describing_again_changes_nothing(published):
    results, _ = published
    describe(results)
    target = results.parent / PACKAGE_FILE
    before = target.read_bytes()
    os.utime(target, (1, 1))
    again = describe(results)
    assert again.written is False
    assert target.read_bytes() == before and target.stat().st_mtime == 1


def test_the_package_is_written_whole_with_the_users_mode(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    old = os.umask(0o002)
    try:
        describe(results)
    finally:
        os.umask(old)
    target = tmp_path / PACKAGE_FILE
    assert oct(target.stat().st_mode & 0o777) == oct(0o664)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize("file_name, taken, name", [
    ("runs.csv", [], "runs"),
    ("Aurora Runs (v2).csv", [], "aurora-runs-v2"),
    ("runs.csv", ["runs"], "runs-2"),
    ("runs.csv", ["runs", "runs-2"], "runs-3"),
    ("__.csv", [], "results"),
])
def test_the_resource_is_named_for_the_file(tmp_path, file_name, taken, name):
    results = _results(tmp_path, GOOD_ROW, name=file_name)
    (tmp_path / PACKAGE_FILE).write_text(json.dumps(
        {"resources": [{"name": n, "path": f"{n}.other"} for n in taken]}))
    assert describe(results).resource == name
    assert _read(tmp_path / PACKAGE_FILE)["resources"][-1]["name"] == name


def test_an_update_keeps_what_people_added(published):
    results, folder = published
    target = results.parent / PACKAGE_FILE
    target.write_text(json.dumps({
        "name": "amsc-perlmutter", "title": "AmSC results, Perlmutter",
        "licenses": [{"name": "CC-BY-4.0"}], "contributors": [{"title": "A. Person"}],
        "resources": [
            {"name": "notes", "path": "notes.md", "format": "md"},
            {"name": "mine", "path": "runs.csv", "title": "Scaling runs", "format": "tsv",
             "schema": {"fields": []},
             "sources": [{"title": "the benchmark", "path": "https://example.com/b"},
                         "a note", {"title": "no path"}, {"title": "x", "path": 7},
                         {"title": "gone", "path": "records/gone.json"}]},
        ]}))
    describe(results)
    package = _read(target)
    assert list(package) == ["name", "title", "licenses", "contributors", "resources"]
    assert package["licenses"] == [{"name": "CC-BY-4.0"}]
    assert package["contributors"] == [{"title": "A. Person"}]
    notes, mine = package["resources"]
    assert notes == {"name": "notes", "path": "notes.md", "format": "md"}
    assert (mine["name"], mine["title"], mine["format"]) == ("mine", "Scaling runs", "csv")
    assert mine["schema"] == table_schema()
    assert mine["sources"][:4] == [
        {"title": "the benchmark", "path": "https://example.com/b"}, "a note",
        {"title": "no path"}, {"title": "x", "path": 7}]
    assert [s["path"] for s in mine["sources"][4:]] == [
        f"records/{p.name}" for p in _records_in_line_order(results, folder)]


def test_sources_under_the_records_folder_go_when_no_record_is_left(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    (tmp_path / "records").mkdir()
    (tmp_path / PACKAGE_FILE).write_text(json.dumps({"resources": [{
        "name": "runs", "path": "runs.csv", "sources": [{"title": "x", "path": "records/x.json"}],
    }]}))
    done = describe(results)
    assert (done.sources, done.notes) == (0, [f"1 row without a record in {tmp_path / 'records'}"])
    assert "sources" not in _read(tmp_path / PACKAGE_FILE)["resources"][0]


def test_without_a_records_folder_the_sources_are_left_as_they_are(tmp_path):
    results = _results(tmp_path, GOOD_ROW)
    sources = [{"title": "x", "path": "records/x.json"}]
    (tmp_path / PACKAGE_FILE).write_text(json.dumps({"resources": [{
        "name": "runs", "path": "runs.csv", "sources": sources}]}))
    describe(results)
    assert _read(tmp_path / PACKAGE_FILE)["resources"][0]["sources"] == sources


def test_a_package_that_cannot_be_read_or_written(tmp_path, monkeypatch):
    results = _results(tmp_path, GOOD_ROW)
    target = tmp_path / PACKAGE_FILE
    target.write_text("{}")
    with monkeypatch.context() as m:
        fail_for(m, target, errno.EIO)
        with pytest.raises(AmscError) as e:
            describe(results)
    assert e.value.format_message() == f"{target}: cannot read: Input/output error"

    def no_space(src, dst):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(dst))

    monkeypatch.setattr(os, "replace", no_space)
    with pytest.raises(AmscError) as e:
        describe(results)
    assert e.value.format_message() == (f"{target}: cannot write datapackage.json: No space "
                                        "left on device")
    assert sorted(p.name for p in tmp_path.iterdir()) == [PACKAGE_FILE, "runs.csv"]
    assert target.read_text() == "{}"


def test_the_records_folder_is_found_beside_the_file_or_given(published, tmp_path):
    results, folder = published
    moved = results.parent / "prov" / "aurora"
    moved.parent.mkdir()
    folder.rename(moved)
    assert describe(results).records is None  # records/ is gone: none found
    done = describe(results, moved)
    assert (done.records, done.sources) == (moved, 5)
    resource = _read(results.parent / PACKAGE_FILE)["resources"][0]
    assert all(s["path"].startswith("prov/aurora/") for s in resource["sources"])


@pytest.mark.parametrize("where, message", [
    ("outside", "{f}: not a folder below {home}, where runs.csv and its datapackage.json are: "
                "a data package lists files by their path below its own folder"),
    ("home", "{f}: not a folder below {home}, where runs.csv and its datapackage.json are: "
             "a data package lists files by their path below its own folder"),
    ("missing", "{f}: no such folder; --provenance needs the folder of the records"),
    ("file", "{f}: not a folder; --provenance needs the folder of the records"),
])
def test_a_records_folder_a_package_cannot_list_is_refused(published, tmp_path, where, message):
    results, folder = published
    home = results.parent
    given = {"outside": tmp_path / "runs", "home": home, "missing": home / "nope",
             "file": results}[where]
    with pytest.raises(AmscError) as e:
        describe(results, given)
    assert e.value.format_message() == message.format(f=given, home=home.absolute())
    assert not (home / PACKAGE_FILE).exists()


def test_what_is_not_listed_is_noted(published):
    results, folder = published
    lines = results.read_text().splitlines()
    results.write_text("\n".join(lines[:-1]) + "\n")  # one row fewer: its record has no row
    (folder / "broken.json").write_text("{")
    extra = GOOD_ROW.replace("2026-11-29T22:18:43Z", "2026-11-29T23:00:00Z")
    with results.open("a") as f:
        f.write(extra + "\n")  # a row without a record
    done = describe(results)
    assert done.sources == 4
    assert done.notes[0].startswith(f"not listed: {folder / 'broken.json'}: ")
    assert done.notes[1:] == [
        f"1 record in {folder} not listed: no line of the results file holds its row",
        f"1 row without a record in {folder}"]


def test_a_record_whose_row_differs_from_its_line_is_not_listed(published):
    results, folder = published
    text = results.read_text()
    results.write_text(text.replace("agpt/x", "agpt/y", 1))
    done = describe(results)
    assert done.sources == 4
    assert done.notes == [
        f"1 record in {folder} not listed: no line of the results file holds its row",
        f"1 row without a record in {folder}"]


def test_a_file_check_refuses_is_not_described(tmp_path):
    results = _results(tmp_path, GOOD_ROW, GOOD_ROW.replace(",1,2,", ",0,2,"))
    with pytest.raises(AmscError) as e:
        describe(results)
    assert e.value.format_message() == (
        f"{results}: 1 problem in 2 rows; 'ezpz-amsc check {results}' lists them: a data "
        "package must not describe a file check refuses")
    assert not (tmp_path / PACKAGE_FILE).exists()
