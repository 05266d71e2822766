"""The check subcommand (and its ``--check`` alias): a results file read as the dashboard
reads it, what keeps the group from appending, and ``check --provenance``."""

from __future__ import annotations

import csv
import errno
import grp
import io
import json
import os
import pwd
import stat
from pathlib import Path

import pytest
from helpers import (
    RUNS,
    error_line,
    export_with_records,
    fail_for,
    fail_reading_midway,
    five_runs,
    outcome,
    parse_csv,
    records_in,
    run_cli,
    run_group,
    umask_of,
)

from ezpz_amsc.records.record import load_record
from ezpz_amsc.results.schema import HEADER, render_csv
from ezpz_amsc.results.validate import sharing_notes

pytestmark = pytest.mark.usefixtures("clean_hook_env")

A = RUNS / "fsdp_tp-2rank"
B = RUNS / "fsdp_tp-1rank-launch"
C = RUNS / "minimal-1rank"
GOOD = A
HEADER_LINE = ",".join(HEADER)


# -------------------------------------------------------------- reading a results file


def _write(tmp_path, *lines, name="runs.csv"):
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


GOOD_ROW = "2026-11-29T22:18:43Z,localhost,c,1,2,pass,4.034,3930.349,1965.174,,0.014,7.989204,30,"


def test_check_clean_file(tmp_path):
    p = _write(tmp_path, HEADER_LINE, GOOD_ROW)
    r = run_cli("--check", p)
    assert r.exit_code == 0
    assert "1 row, all readable" in r.stdout


def test_check_file_written_by_append_is_clean(tmp_path):
    out = tmp_path / "runs.csv"
    assert run_cli(A, B, C, "--config", "c", "--append", out).exit_code == 0
    assert len(parse_csv(out.read_text())) == 3
    r = run_cli("--check", out)
    assert (r.exit_code, r.stdout, r.stderr) == (
        0, f"{out}: 3 rows, all readable by the dashboard\n", "")


@pytest.mark.parametrize("bad_row,problem", [
    (GOOD_ROW.replace(",1,2,", ",one,2,"), "nodes 'one' is not an integer"),
    (GOOD_ROW.replace(",1,2,", ",1,2.5,"), "gpus '2.5' is not an integer"),
    (GOOD_ROW.replace(",4.034,", ",,"), "wall_time_sec is empty"),
    (GOOD_ROW.replace(",4.034,", ",fast,"), "wall_time_sec 'fast' is not a number"),
    (GOOD_ROW.replace("3930.349", "n/a"), "throughput_tokens_per_sec 'n/a' is not a number"),
    (GOOD_ROW.replace(",pass,", ",ok,"), "status 'ok' is not pass or fail"),
    (GOOD_ROW.replace("2026-11-29T22:18:43Z", "29/11/2026"), "timestamp '29/11/2026'"),
    (GOOD_ROW + ",extra", "15 cells, header has 14"),
    (GOOD_ROW.replace(",1,2,", ",0,2,"), "nodes '0' is below 1"),
    (GOOD_ROW.replace(",1,2,", ",1,0,"), "gpus '0' is below 1"),
    (GOOD_ROW.replace(",0.014,", ",inf,"), "tflops 'inf' is not finite"),
    (GOOD_ROW.replace(",,0.014,", ",100.5,0.014,"), "mfu '100.5' is above 100"),
    (GOOD_ROW.replace("3930.349", "-3930.349"), "throughput_tokens_per_sec '-3930.349' is below 0"),
    (GOOD_ROW.replace(",30,", ",30.5,"), "steps '30.5' is not a whole number"),
])
def test_check_reports_bad_lines_by_number(tmp_path, bad_row, problem):
    p = _write(tmp_path, HEADER_LINE, GOOD_ROW.replace(",c,", ",other,"), bad_row)
    r = run_cli("--check", p)
    assert r.exit_code == 1
    assert f"{p}:3: {problem}" in r.stderr
    assert f"{p}:2:" not in r.stderr
    assert r.stderr.splitlines()[-1].startswith("error: ")


def test_check_reads_a_header_without_the_optional_columns(tmp_path):
    # An older results file: no mfu, tflops or error column. Its rows are read
    # as they are; a column the header lacks is not a cell to complain about.
    header = ",".join(c for c in HEADER if c not in ("mfu", "tflops", "error"))
    p = _write(tmp_path, header, "2026-11-29T22:18:43Z,localhost,c,1,2,pass,4.034,3930.349,"
               "1965.174,7.989204,30")
    r = run_cli("--check", p)  # -q: no notes on who else may append
    assert r.stderr == (f"{p}:1: header differs from this tool's (lacks mfu, tflops, error)\n"
                        f"error: {p}: the header differs from this tool's (no other problem "
                        "in 1 row)\n")
    # The header is named apart from the rows' problems.
    q = _write(tmp_path, header, *["2026-11-29T22:18:43Z,localhost,c,1,2,pass,4.034,3930.349,"
                                   "1965.174,7.989204,30"] * 2, name="twice.csv")
    assert run_cli("--check", q).stderr.splitlines()[-1] == (
        f"error: {q}: the header differs from this tool's, and 1 problem in 2 rows")
    assert r.exit_code == 1 and r.stdout == ""


@pytest.mark.parametrize("mfu", ["0.0", "0", "0.000", "-0.0"])
def test_check_flags_a_zero_mfu_as_not_a_measurement(tmp_path, mfu):
    """ezpz's built-in exporter writes 0.0 for "peak FLOPS unknown": a made-up number."""
    cells = GOOD_ROW.split(",")
    cells[HEADER.index("mfu")] = mfu
    p = _write(tmp_path, HEADER_LINE, GOOD_ROW.replace("22:18:43", "22:18:44"), ",".join(cells))
    r = run_cli("--check", p)
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr.splitlines() == [
        f"{p}:3: mfu {mfu!r} is zero, which is not a measurement (ezpz writes 0.0 when it does "
        "not know the device's peak FLOPS, e.g. on CPU); empty the cell (not measured)",
        f"error: {p}: 1 problem in 2 rows"]


@pytest.mark.parametrize("mfu", ["0.001", "", "12.5"])
def test_check_takes_a_measured_or_empty_mfu(tmp_path, mfu):
    cells = GOOD_ROW.split(",")
    cells[HEADER.index("mfu")] = mfu
    assert run_cli("--check", _write(tmp_path, HEADER_LINE, ",".join(cells)), "-q").exit_code == 0


def test_check_duplicate_rows(tmp_path):
    p = _write(tmp_path, HEADER_LINE, GOOD_ROW, GOOD_ROW)
    r = run_cli("--check", p)
    assert f"{p}:3: same run as line 2" in r.stderr and r.exit_code == 1


def test_check_missing_required_column(tmp_path):
    p = _write(tmp_path, "timestamp,system,config", "x,y,z")
    assert error_line(run_cli("--check", p)) == (
        f"error: {p}: header lacks required columns nodes, gpus, status, wall_time_sec")
    one = _write(tmp_path, ",".join(c for c in HEADER if c != "wall_time_sec"), name="one.csv")
    assert error_line(run_cli("--check", one)) == (
        f"error: {one}: header lacks required column wall_time_sec")


def test_check_refuses_what_is_no_readable_results_file(tmp_path, monkeypatch):
    folder, empty = tmp_path / "folder.csv", tmp_path / "empty.csv"
    folder.mkdir()
    empty.write_text("")
    assert error_line(run_group("check", folder)) == (
        f"error: {folder}: is a directory; check needs a results CSV file")
    (folder / "b.csv").touch()
    (folder / "a.csv").mkdir()  # a folder named like one is not offered
    assert error_line(run_group("check", folder)) == (
        f"error: {folder}: is a directory; check needs a results CSV file, e.g. {folder}/b.csv")
    real_scandir = os.scandir

    def unlistable(path):
        if Path(path) == folder:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr("ezpz_amsc.results.validate.os.scandir", unlistable)
    assert error_line(run_group("check", folder)) == (  # no example when it cannot be listed
        f"error: {folder}: is a directory; check needs a results CSV file")
    monkeypatch.undo()
    assert error_line(run_group("check", empty)) == f"error: {empty}: empty file, no header"
    assert error_line(run_group("check", tmp_path / "gone.csv")) == (
        f"error: {tmp_path / 'gone.csv'}: no such file")
    locked_out = _write(tmp_path, HEADER_LINE, GOOD_ROW, name="locked.csv")
    fail_for(monkeypatch, locked_out, errno.EACCES)  # root reads any file: fake the refusal
    assert error_line(run_group("check", locked_out)) == (
        f"error: {locked_out}: cannot read: Permission denied")


def test_check_reports_a_cell_csv_cannot_read_and_reads_on(tmp_path):
    # The csv module refuses a field over its limit (128 KiB): that line is a problem with
    # its number, and the lines after it are read (a duplicate of line 2 on line 4).
    limit = csv.field_size_limit()
    huge = GOOD_ROW.replace(",c,", "," + "x" * (limit + 1) + ",")
    p = _write(tmp_path, HEADER_LINE, GOOD_ROW, huge, GOOD_ROW)
    r = run_group("check", p)
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr.splitlines() == [
        f"{p}:3: field larger than field limit ({limit}); read on from the next line",
        f"{p}:4: same run as line 2",
        f"error: {p}: 2 problems in 3 rows",
    ]


def test_check_flags_formula_cells_and_cells_past_the_cap(tmp_path):
    """Regression: check passed =HYPERLINK(...), @SUM(...) and +cmd cells."""
    reason = ("would run as a formula when the CSV is opened in a spreadsheet (it starts with =, "
              "+, -, @, a tab or a carriage return and is not a number)")
    good = GOOD_ROW.split(",")

    def cells(**changes: str) -> str:
        row = dict(zip(HEADER, good, strict=True)) | changes
        return render_csv([[row[c] for c in HEADER]], header=False).rstrip("\n")

    quoted = [cells(config='=HYPERLINK("x")', system="a"), cells(system="@SUM(1)"),
              cells(config="c2", error="+cmd"), cells(config="c3", error="-2+3+cmd"),
              cells(config="c4", error="-2"), cells(config="x" * 4097)]
    p = _write(tmp_path, HEADER_LINE, *quoted)
    r = run_group("check", p, "-q")
    assert r.stderr.splitlines() == [
        f"{p}:2: config '=HYPERLINK(\"x\")' {reason}",
        f"{p}:3: system '@SUM(1)' {reason}",
        f"{p}:4: error '+cmd' {reason}",
        f"{p}:5: error '-2+3+cmd' {reason}",
        f"{p}:7: config is 4,097 characters long (a cell holds at most 4,096)",
        f"error: {p}: 5 problems in 6 rows"]


def test_a_read_error_part_way_through_is_one_line(tmp_path, monkeypatch):
    from ezpz_amsc.results import validate

    p = _write(tmp_path, HEADER_LINE, GOOD_ROW)
    fail_reading_midway(monkeypatch, validate, p)
    assert error_line(run_group("check", p)) == f"error: {p}: cannot read: Input/output error"


def test_check_names_a_header_line_it_cannot_read(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text("x" * 300_000 + "\n" + GOOD_ROW + "\n")
    assert error_line(run_group("check", p)) == (
        f"error: {p}:1: the header cannot be read: line longer than 229,418 bytes; not read")


def test_check_as_json(tmp_path, results_files):
    clean, bad = results_files
    r = run_group("check", clean, "--format", "json")
    assert (r.exit_code, r.stderr) == (0, "")
    assert json.loads(r.stdout) == {"file": str(clean), "rows": 1, "records": None,
                                    "provenance": None, "clean": True, "problems": [],
                                    "notes": []}
    r = run_group("check", bad, "--format", "json", "-q")
    assert r.exit_code == 1  # the data on stdout; the verdict as with text
    assert json.loads(r.stdout) == {"file": str(bad), "rows": 2, "records": None,
                                    "provenance": None, "clean": False,
                                    "problems": [f"{bad}:3: same run as line 2"], "notes": []}
    assert r.stderr.splitlines() == [f"{bad}:3: same run as line 2",
                                     f"error: {bad}: 1 problem in 2 rows"]


def test_check_as_json_with_records_and_a_note(published, teammates):
    results, folder = published
    os.chmod(results, 0o644)
    r = run_group("check", results, "--provenance", folder, "--format", "json", "-q")
    assert (r.exit_code, r.stderr) == (0, "")  # -q: the note is in the data only
    data = json.loads(r.stdout)
    assert {k: data[k] for k in ("rows", "records", "provenance", "clean")} == {
        "rows": 5, "records": 5, "provenance": str(folder), "clean": True}
    (note,) = data["notes"]
    assert note.startswith(f"{results}: other members of group ")


def test_check_takes_no_run_dir(tmp_path):
    line = error_line(run_cli(A, "--check", tmp_path / "x.csv"))
    assert "--check takes no RUN_DIR" in line


@pytest.fixture
def results_files(tmp_path):
    clean = tmp_path / "clean.csv"
    clean.write_text(run_cli(GOOD, "--config", "c").stdout)
    bad = tmp_path / "bad.csv"
    bad.write_text(clean.read_text() + clean.read_text().splitlines()[1] + "\n")
    return clean, bad


def test_check_alias_and_subcommand_agree(results_files):
    for path in results_files:
        alias = run_group("--check", path)
        assert outcome(run_group("check", path)) == outcome(alias) == outcome(
            run_cli("--check", path))
    clean, bad = results_files
    # -q: no notes on who else may append (tmp_path is private to this user)
    assert outcome(run_group("check", clean)) == (
        0, f"{clean}: 1 row, all readable by the dashboard\n", "")
    code, out, err = outcome(run_group("check", bad))
    assert (code, out) == (1, "")
    assert err.splitlines() == [f"{bad}:3: same run as line 2",
                                f"error: {bad}: 1 problem in 2 rows"]


# --------------------------------------------------- can the rest of the group append?


def _shared(tmp_path, file_mode, folder_mode):
    folder = tmp_path / "results"
    folder.mkdir()
    out = folder / "runs.csv"
    assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    os.chmod(out, file_mode)
    os.chmod(folder, folder_mode)
    return folder, out


def _described(p: Path) -> str:
    st = os.stat(p)
    return (f"owner {pwd.getpwuid(st.st_uid).pw_name}, group {grp.getgrgid(st.st_gid).gr_name}, "
            f"mode {stat.S_IMODE(st.st_mode):04o}")


@pytest.fixture
def teammates(monkeypatch):
    """Every group lists a member besides the file's owner: a group others share."""
    real = grp.getgrgid

    def with_member(gid):
        g = real(gid)
        return grp.struct_group((g.gr_name, g.gr_passwd, g.gr_gid, [*g.gr_mem, "teammate"]))

    monkeypatch.setattr("ezpz_amsc.fs.access.grp.getgrgid", with_member)


@pytest.fixture
def personal_group(monkeypatch):
    """The file's group is its owner's own, listing nobody else (a user private group)."""
    real = grp.getgrgid

    def personal(gid):
        g = real(gid)
        return grp.struct_group((pwd.getpwuid(os.geteuid()).pw_name, g.gr_passwd, g.gr_gid, []))

    monkeypatch.setattr("ezpz_amsc.fs.access.grp.getgrgid", personal)


def test_check_is_quiet_about_a_file_the_group_can_append_to(tmp_path, teammates):
    folder, out = _shared(tmp_path, 0o664, 0o2775)
    r = run_cli("--check", out)
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout == f"{out}: 1 row, all readable by the dashboard\n"


def test_check_is_quiet_about_a_personal_file_in_a_personal_folder(tmp_path, personal_group):
    """umask 022 in your own folder, your own group: nobody else could append anyway."""
    folder, out = _shared(tmp_path, 0o644, 0o755)
    r = run_cli("--check", out)
    assert (r.exit_code, r.stderr) == (0, "")


def test_check_notes_once_what_keeps_the_group_out(tmp_path, teammates):
    folder, out = _shared(tmp_path, 0o644, 0o755)
    group = grp.getgrgid(os.stat(out).st_gid).gr_name
    r = run_cli("--check", out)
    assert r.exit_code == 0  # a note, not an error
    assert r.stdout == f"{out}: 1 row, all readable by the dashboard\n"
    assert r.stderr.splitlines() == [
        f"note: {out}: other members of group {group} cannot append to it ({_described(out)}); "
        f"other members of group {group} cannot create results files in {folder} "
        f"({_described(folder)}); to share it: chmod g+w {out} && chmod g+ws {folder}"]
    assert run_cli("--check", out, "-q").stderr == ""


def test_a_shared_folder_matters_even_for_a_personal_group(tmp_path, personal_group):
    folder, out = _shared(tmp_path, 0o644, 0o2775)
    (note,) = run_cli("--check", out).stderr.splitlines()
    group = grp.getgrgid(os.stat(out).st_gid).gr_name
    assert note == (f"note: {out}: other members of group {group} cannot append to it "
                    f"({_described(out)}); to share it: chmod g+w {out}")


@pytest.mark.parametrize("folder_mode,fragment,fix", [
    (0o700, "other members of group {group} cannot reach the files in {folder}", "g+rwxs"),
    (0o2700, "other members of group {group} cannot reach the files in {folder}", "g+rwx"),
    (0o2750, "other members of group {group} cannot create results files in {folder}", "g+w"),
    (0o750, "other members of group {group} cannot create results files in {folder}", "g+ws"),
    (0o775, "{folder} is not setgid", "g+s"),
    (0o1775, "{folder} is not setgid", "g+s"),
])
def test_check_notes_what_keeps_the_group_out_of_the_folder(tmp_path, teammates, folder_mode,
                                                           fragment, fix):
    folder, out = _shared(tmp_path, 0o664, folder_mode)
    group = grp.getgrgid(os.stat(folder).st_gid).gr_name
    r = run_cli("--check", out)
    assert r.exit_code == 0
    (note,) = r.stderr.splitlines()
    assert note.startswith(f"note: {out}: {fragment.format(group=group, folder=folder)} "
                           f"({_described(folder)})")
    assert note.endswith(f"; to share it: chmod {fix} {folder}")


def test_no_sharing_notes_for_a_file_that_is_gone(tmp_path):
    # The file can vanish between reading it and judging its mode: nothing to say then.
    assert sharing_notes(tmp_path / "gone.csv") == []


# ------------------------------------------------------------------ check --provenance


@pytest.fixture
def published(fixture_run, tmp_path):
    runs = five_runs(fixture_run)
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    assert export_with_records(runs, results, folder, "-q").exit_code == 0
    return results, folder


def test_check_with_records_clean(published):
    results, folder = published
    result = run_group("check", results, "--provenance", folder)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout == (f"{results}: 5 rows, all readable by the dashboard; "
                             f"5 records in {folder}, one per row\n")
    assert run_cli("--check", results, "--provenance", folder).stdout == result.stdout


def _rewrite(results: Path, edit) -> None:
    rows = list(csv.reader(io.StringIO(results.read_text())))
    edit(rows)
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    results.write_text(buf.getvalue())


def test_check_names_missing_orphan_and_mismatched_records(published):
    results, folder = published
    paths = records_in(folder)
    by_line = {load_record(p)["row"]["timestamp"]: p for p in paths}
    rows = parse_csv(results.read_text())
    lines = {r["timestamp"]: i + 2 for i, r in enumerate(rows)}
    missing, orphan, changed = rows[0], rows[1], rows[2]
    by_line[missing["timestamp"]].unlink()

    def edit(table):
        table[lines[changed["timestamp"]] - 1][HEADER.index("tflops")] = "9.999"
        del table[lines[orphan["timestamp"]] - 1]

    _rewrite(results, edit)
    stray = folder / "notes.json"
    stray.write_text("{}")
    (folder / ".x.json.123.tmp").write_text("half")  # an interrupted write: no record, a leftover
    result = run_group("check", results, "--provenance", folder, "-q")
    assert result.exit_code == 1
    orphan_key = ", ".join(orphan[c] for c in ("timestamp", "system", "config", "nodes", "gpus"))
    changed_line = lines[changed["timestamp"]] - 1  # one line above it was deleted
    assert sorted(result.stderr.splitlines()) == sorted([
        f"{stray}: not an ezpz-amsc provenance record (no schema version)",
        f"{results}:{lines[missing['timestamp']]}: no provenance record in {folder}",
        f"{results}:{changed_line}: differs from its record {by_line[changed['timestamp']]}: "
        f"tflops '9.999' in the file, {changed['tflops']!r} in the record",
        f"{by_line[orphan['timestamp']]}: no row in {results} for its run ({orphan_key})",
        f"{folder / '.x.json.123.tmp'}: a temporary file of a record write that was killed; "
        "remove it",
        f"error: {results}: 5 problems in 4 rows and 4 records",
    ])


def test_check_with_a_missing_records_folder(published, tmp_path):
    results, _ = published
    assert error_line(run_group("check", results, "--provenance", tmp_path / "nope")) == (
        f"error: {tmp_path / 'nope'}: no such folder; --provenance needs the folder of the "
        "records")


def test_check_with_records_reads_a_column_the_file_lacks_as_empty(published):
    # An older results file without the optional tflops, final_loss, mfu and error
    # columns: the cells it lacks are empty, so a record that has tflops and final_loss
    # differs in both (named in header order), and empty mfu and error match.
    results, folder = published
    dropped = ("mfu", "tflops", "final_loss", "error")
    rows = parse_csv(results.read_text())
    by_stamp = {load_record(p)["row"]["timestamp"]: p for p in records_in(folder)}
    _rewrite(results, lambda table: table.__setitem__(slice(None), [
        [cell for c, cell in zip(HEADER, line, strict=True) if c not in dropped]
        for line in table]))
    result = run_group("check", results, "--provenance", folder)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr.splitlines() == [
        f"{results}:1: header differs from this tool's (lacks mfu, tflops, final_loss, error)",
        *(f"{results}:{i}: differs from its record {by_stamp[row['timestamp']]}: "
          f"tflops '' in the file, {row['tflops']!r} in the record; "
          f"final_loss '' in the file, {row['final_loss']!r} in the record"
          for i, row in enumerate(rows, start=2)),
        f"error: {results}: the header differs from this tool's, and 5 problems in 5 rows and "
        "5 records",
    ]
    assert all(row["tflops"] and row["final_loss"] and not row["mfu"] for row in rows)


# -------------------------------------------------------------- several files, a data package


def test_check_takes_several_files_and_says_which_are_not_clean(tmp_path):
    good = _write(tmp_path, HEADER_LINE, GOOD_ROW, name="good.csv")
    bad = _write(tmp_path, HEADER_LINE, GOOD_ROW.replace(",pass,", ",ok,"), name="bad.csv")
    missing = tmp_path / "missing.csv"
    r = run_group("check", good, bad, missing)
    assert outcome(r) == (1, f"{good}: 1 row, all readable by the dashboard\n",
                          f"{bad}:2: status 'ok' is not pass or fail\n"
                          f"error: {bad}: 1 problem in 1 row\n"
                          f"error: {missing}: no such file\n"
                          "error: 2 of 3 files not clean\n")
    both = run_group("check", good, good)
    assert outcome(both) == (0, f"{good}: 1 row, all readable by the dashboard\n" * 2, "")


def test_check_provenance_takes_one_file(tmp_path):
    good = _write(tmp_path, HEADER_LINE, GOOD_ROW)
    r = run_group("check", good, good, "--provenance", tmp_path)
    assert r.exit_code == 2
    assert r.stderr.splitlines()[-1] == ("error: --provenance takes one RESULTS_CSV (its "
                                         "records are its own)")


def test_check_notes_a_data_package_with_another_schema(tmp_path):
    good = _write(tmp_path, HEADER_LINE, GOOD_ROW)
    assert run_group("describe", good, "-q").exit_code == 0
    assert outcome(run_group("check", good))[0] == 0
    package = tmp_path / "datapackage.json"
    doc = json.loads(package.read_text())
    doc["resources"][0]["schema"]["fields"].pop()
    package.write_text(json.dumps(doc))
    os.chmod(good, 0o664)
    os.chmod(tmp_path, 0o2775)  # no sharing notes: only the package's
    r = run_group("check", good)
    assert outcome(r) == (
        0, f"{good}: 1 row, all readable by the dashboard\n",
        f"note: {package}: its schema of runs.csv differs from this tool's (1 field missing: "
        f"error); to update it: ezpz-amsc describe {good}\n")
    assert outcome(run_group("check", good, "-q")) == (0, "", "")  # -q: quiet, on success


def test_check_notes_a_records_folder_the_group_cannot_add_to(tmp_path):
    """Regression: a records folder made under umask 022 in a shared setgid folder was not
    noted; the next teammate's append with --provenance fails there."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o2775)
    results, folder = shared / "r.csv", shared / "records"
    with umask_of(0o022):
        assert run_cli(A, "--config", "c", "--append", results, "--provenance", folder,
                       "-q").exit_code == 0
    st = folder.stat()
    r = run_group("check", results, "--provenance", folder)
    assert r.exit_code == 0
    group = grp.getgrgid(st.st_gid).gr_name
    assert (f"note: {folder}: other members of group {group} cannot add provenance records to "
            f"it (owner root, group {group}, mode 2755), though they may append to {results}; "
            f"to share it: chmod g+ws {folder}") in r.stderr.splitlines()
    shared.chmod(0o0775)  # group-writable, not setgid: the fix needs no s
    assert (f"note: {folder}: other members of group {group} cannot add provenance records to "
            f"it (owner root, group {group}, mode 2755), though they may append to {results}; "
            f"to share it: chmod g+w {folder}") in run_group(
                "check", results, "--provenance", folder).stderr.splitlines()
    shared.chmod(0o0755)  # not shared: nothing to say about the records folder
    assert "cannot add provenance records" not in run_group("check", results, "--provenance",
                                                            folder).stderr
    shared.chmod(0o2775)
    folder.chmod(0o2775)
    assert "cannot add provenance records" not in run_group("check", results, "--provenance",
                                                            folder).stderr
    assert "cannot add" not in run_group("check", results, "--provenance", folder, "-q").stderr


# --------------------------------------------------- values pinned by mutation testing


@pytest.mark.parametrize("others_in", ["the file's group", "the folder's group"])
def test_others_in_the_group_of_the_file_or_of_the_folder_alone_get_the_note(
        tmp_path, monkeypatch, others_in):
    folder, out = _shared(tmp_path, 0o644, 0o755)  # the folder neither group-writable nor setgid
    answers = iter([others_in == "the file's group", others_in == "the folder's group"])
    monkeypatch.setattr("ezpz_amsc.results.validate.group_has_others",
                        lambda gid, uid: next(answers))
    group = grp.getgrgid(os.stat(out).st_gid).gr_name
    assert sharing_notes(out) == [
        f"{out}: other members of group {group} cannot append to it ({_described(out)}); "
        f"other members of group {group} cannot create results files in {folder} "
        f"({_described(folder)}); to share it: chmod g+w {out} && chmod g+ws {folder}"]


def test_quiet_check_prints_nothing_on_success_and_the_problems_otherwise(tmp_path):
    good = _write(tmp_path, HEADER_LINE, GOOD_ROW)
    assert outcome(run_group("check", good, "-q")) == (0, "", "")
    bad = _write(tmp_path, HEADER_LINE, GOOD_ROW.replace(",pass,", ",ok,"))
    code, out, err = outcome(run_group("check", bad, "-q"))
    assert (code, out) == (1, "")
    assert err.splitlines() == [f"{bad}:2: status 'ok' is not pass or fail",
                                f"error: {bad}: 1 problem in 1 row"]


def test_results_only_checks_the_results_files_among_csv_files(tmp_path):
    runs = tmp_path / "a" / "runs.csv"
    runs.parent.mkdir()
    runs.write_text(f"{HEADER_LINE}\n{GOOD_ROW.replace(',pass,', ',ok,')}\n")
    named = tmp_path / "sweep.csv"  # another name, the dashboard's columns
    named.write_text(f"{HEADER_LINE}\n{GOOD_ROW}\n")
    other = tmp_path / "notes.csv"
    other.write_text("a,b\n1,2\n")
    broken = tmp_path / "b" / "amsc.csv"  # the hook's name: checked whatever it holds
    broken.parent.mkdir()
    broken.write_text("timestamp;system;config\n")
    r = run_group("check", "--results-only", runs, named, other, broken)
    assert r.exit_code == 1
    assert r.stdout == f"{named}: 1 row, all readable by the dashboard\n"
    assert str(other) not in r.stderr
    assert r.stderr.splitlines()[-1] == "error: 2 of 3 files not clean"
    r = run_group("check", "--results-only", other)
    assert outcome(r) == (0, "no results file among the 1 file given (none is named runs.csv "
                             "or amsc.csv or has the dashboard's columns); nothing to check\n",
                          "")
    assert outcome(run_group("check", "--results-only", other, "-q")) == (0, "", "")


@pytest.mark.parametrize("out_format", ["text", "json"])
def test_check_lists_a_thousand_problems_and_counts_every_one(tmp_path, out_format):
    p = tmp_path / "runs.csv"
    p.write_text(",".join(HEADER) + "\n" + "x\n" * 1500)
    r = run_group("check", p, "--format", out_format)
    lines = r.stderr.splitlines()
    assert r.exit_code == 1
    assert len(lines) == 1002
    assert lines[999] == f"{p}:1001: 1 cells, header has 14"
    assert lines[1000] == f"{p}: 500 more problems not listed (at most 1,000 a file are)"
    assert lines[1001] == f"error: {p}: 1500 problems in 1500 rows"
    if out_format == "json":
        found = json.loads(r.stdout)
        assert (len(found["problems"]), found["clean"]) == (1001, False)
        assert found["problems"][-1] == lines[1000]


def test_check_names_a_merge_conflict_and_how_to_resolve_it(tmp_path):
    p = tmp_path / "runs.csv"
    row = "2026-08-11T17:11:1{}Z,Aurora,c,1,12,pass,1.000,,,,,,10,\n"
    p.write_text(",".join(HEADER) + "\n<<<<<<< HEAD\n" + row.format(7) + "=======\n"
                 + row.format(8) + ">>>>>>> b\n")
    r = run_group("check", p)
    assert r.exit_code == 1
    assert r.stderr.splitlines() == [
        f"{p}:2-6: a git merge conflict (marker lines <<<<<<<, =======, >>>>>>>): keep the "
        "rows of both sides (not the common ancestor's lines between ||||||| and =======, if "
        "any) and delete the marker lines; a results repository with merge=union in "
        ".gitattributes (ezpz-amsc init) merges appended rows without conflicts",
        f"error: {p}: 1 problem in 2 rows"]
