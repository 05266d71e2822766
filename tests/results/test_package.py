"""datapackage.json beside a results file (results/package.py): what describe writes and
keeps, and that `frictionless validate` agrees with `check` on good and bad files."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import frictionless
import pytest
from helpers import (
    EXPECTED,
    FIXTURE_NAMES,
    REPO,
    RUNS,
    copy_run,
    fail_for,
    records_in,
    run_cli,
    run_group,
    simple_steps,
    write_run,
)

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.describe import describe
from ezpz_amsc.results.fields import table_schema
from ezpz_amsc.results.package import (
    MAX_PACKAGE_BYTES,
    PACKAGE_FILE,
    encode,
    load_package,
    package_notes,
    schema_differences,
)
from ezpz_amsc.results.schema import HEADER

pytestmark = pytest.mark.usefixtures("clean_hook_env")

HEADER_LINE = ",".join(HEADER)
GOOD_ROW = EXPECTED["fsdp_tp-2rank"]


def _results(folder: Path, *rows: str, name: str = "runs.csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("\n".join([HEADER_LINE, *rows]) + "\n")
    return p


@pytest.fixture
def published(tmp_path: Path) -> tuple[Path, Path]:
    """Every shipped run in results/runs.csv, its records in results/records/."""
    runs = [copy_run(n, tmp_path / "runs") for n in FIXTURE_NAMES]
    results = tmp_path / "results" / "runs.csv"
    folder = results.parent / "records"
    r = run_cli(*runs, "--config", "agpt/x", "--append", results, "--provenance", folder, "-q")
    assert r.exit_code == 0, r.stderr
    return results, folder


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


# ------------------------------------------------------------------ a new package


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


# ------------------------------------------------------------------ updating


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


def _records_in_line_order(results: Path, folder: Path) -> list[Path]:
    lines = results.read_text().splitlines()[1:]
    by_line = {",".join(json.loads(p.read_text())["row"][c] for c in HEADER): p
               for p in records_in(folder)}
    return [by_line[line] for line in lines]


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


# ------------------------------------------------------------------ the records


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


# ------------------------------------------------------------------ check's note


def _package_with(tmp_path: Path, schema: object) -> Path:
    results = _results(tmp_path, GOOD_ROW)
    describe(results)
    target = tmp_path / PACKAGE_FILE
    package = _read(target)
    package["resources"][0]["schema"] = schema
    target.write_text(json.dumps(package))
    return results


def _edited(edit) -> dict:
    schema = table_schema()
    edit(schema)
    return json.loads(json.dumps(schema))


def _set_mfu_max(s):
    s["fields"][9]["constraints"]["maximum"] = 200


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


# ------------------------------------------------------------------ frictionless agrees


def _frictionless_errors(package: Path) -> list[str]:
    report = frictionless.validate(str(package))
    return [e.type for task in report.tasks for e in task.errors] + [
        e.type for e in report.errors]


def _check(results: Path) -> int:
    return run_group("check", results, "-q").exit_code


def _tiny_run(tmp_path: Path) -> Path:
    steps = simple_steps(4)
    for s in steps:
        s["metrics"]["train/tps"] = 0.0000123
    return write_run(tmp_path / "tiny", steps)


WRITTEN = ["every shipped run", "a failed run", "a tiny rate", "CRLF and a BOM", "an empty file",
           "the docs' sweep"]


def _written(name: str, tmp_path: Path) -> Path:
    """A results file as this tool writes it (the docs' sweep: as check passes it)."""
    results = tmp_path / "out" / "runs.csv"
    if name == "every shipped run":
        runs = [copy_run(n, tmp_path) for n in FIXTURE_NAMES]
        args = [*runs, "--config", "agpt/x", "--provenance", results.parent / "records"]
    elif name == "a failed run":
        args = [RUNS / "minimal-1rank", "--config", "c", "--status", "fail", "--error",
                'NCCL timeout, rank 3 "hung"; see job.log']
    elif name == "a tiny rate":
        args = [_tiny_run(tmp_path), "--config", "c"]
    elif name == "CRLF and a BOM":
        results.parent.mkdir()
        results.write_bytes(b"\xef\xbb\xbf" + HEADER_LINE.encode() + b"\r\n")
        args = [RUNS / "fsdp_tp-2rank", "--config", "c"]
    elif name == "an empty file":
        results.parent.mkdir()
        results.write_text(HEADER_LINE + "\n")
        return results
    else:
        results.parent.mkdir()
        results.write_bytes((REPO / "docs" / "report-example" / "sweep.csv").read_bytes())
        return results
    r = run_cli(*args, "--append", results, "-q")
    assert r.exit_code == 0, r.stderr
    return results


@pytest.mark.slow
@pytest.mark.parametrize("name", WRITTEN)
def test_frictionless_validates_every_file_this_tool_writes(tmp_path, name):
    results = _written(name, tmp_path)
    assert _check(results) == 0
    describe(results)
    assert _frictionless_errors(results.parent / PACKAGE_FILE) == []


ROW_2 = GOOD_ROW.replace("2026-11-29T22:18:43Z", "2026-11-29T23:00:00Z")

# Files check refuses, each with the frictionless error type that refuses it too.
BAD = [
    ("nodes 0", [GOOD_ROW.replace(",1,2,", ",0,2,")], "constraint-error"),
    ("gpus 2.5", [GOOD_ROW.replace(",1,2,", ",1,2.5,")], "type-error"),
    ("nodes one", [GOOD_ROW.replace(",1,2,", ",one,2,")], "type-error"),
    ("empty wall time", [GOOD_ROW.replace(",4.034,", ",,")], "constraint-error"),
    ("blank wall time", [GOOD_ROW.replace(",4.034,", ", ,")], "type-error"),
    ("wall time fast", [GOOD_ROW.replace(",4.034,", ",fast,")], "type-error"),
    ("negative wall time", [GOOD_ROW.replace(",4.034,", ",-4.034,")], "constraint-error"),
    ("tokens/s n/a", [GOOD_ROW.replace("3930.349", "n/a")], "type-error"),
    ("negative tokens/s", [GOOD_ROW.replace("3930.349", "-3930.349")], "constraint-error"),
    ("infinite tflops", [GOOD_ROW.replace(",0.014,", ",inf,")], "constraint-error"),
    ("NaN loss", [GOOD_ROW.replace("7.989204", "NaN")], "constraint-error"),
    ("loss 1e400", [GOOD_ROW.replace("7.989204", "1e400")], "constraint-error"),
    ("mfu 150", [GOOD_ROW.replace(",,0.014,", ",150,0.014,")], "constraint-error"),
    ("steps 30.5", [GOOD_ROW.replace(",30,", ",30.5,")], "type-error"),
    ("steps 0", [GOOD_ROW.replace(",30,", ",0,")], "constraint-error"),
    ("status ok", [GOOD_ROW.replace(",pass,", ",ok,")], "constraint-error"),
    ("empty status", [GOOD_ROW.replace(",pass,", ",,")], "constraint-error"),
    ("timestamp 29/11/2026", [GOOD_ROW.replace("2026-11-29T22:18:43Z", "29/11/2026")],
     "type-error"),
    ("timestamp with an offset", [GOOD_ROW.replace("22:18:43Z", "22:18:43+00:00")],
     "type-error"),
    ("empty system", [GOOD_ROW.replace(",localhost,", ",,")], "constraint-error"),
    ("blank config", [GOOD_ROW.replace(",test/cfg,", ", ,")], "constraint-error"),
    ("an extra cell", [GOOD_ROW + ",x"], "extra-cell"),
    ("a missing cell", [GOOD_ROW.rsplit(",", 1)[0]], "missing-cell"),
    ("the same run twice", [GOOD_ROW, GOOD_ROW.replace(",30,", ",31,")], "primary-key"),
    ("columns in another order", "swap", "incorrect-label"),
    ("a column missing", "drop", "missing-label"),
    ("not UTF-8", "latin-1", "encoding-error"),
    ("an empty file", "empty", "source-error"),
]


def _bad_file(results: Path, rows: object) -> None:
    if rows == "swap":
        header = HEADER_LINE.replace("system,config", "config,system")
        row = GOOD_ROW.replace("localhost,test/cfg", "test/cfg,localhost")
        results.write_text(f"{header}\n{row}\n")
    elif rows == "drop":
        results.write_text(HEADER_LINE.rsplit(",", 1)[0] + "\n" + GOOD_ROW[:-1] + "\n")
    elif rows == "latin-1":
        results.write_bytes(f"{HEADER_LINE}\n{GOOD_ROW}\n{ROW_2}caf\xe9\n".encode("latin-1"))
    elif rows == "empty":
        results.write_bytes(b"")
    else:
        assert isinstance(rows, list)
        results.write_text("\n".join([HEADER_LINE, *rows]) + "\n")


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
