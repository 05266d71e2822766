"""Provenance records (records/): what a record holds, its name, all or nothing with the
row, and what a record never holds."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import socket
import time
from pathlib import Path

import pytest
from helpers import (
    error_line,
    export_with_records,
    five_runs,
    parse_csv,
    records_in,
    run_cli,
    run_group,
    sha256,
    step,
    write_jsonl,
    write_run,
    write_run_info,
)

import ezpz_amsc
from ezpz_amsc.errors import AmscError
from ezpz_amsc.records import folder as folder_mod
from ezpz_amsc.records import record as record_mod
from ezpz_amsc.records.folder import record_name
from ezpz_amsc.records.record import SCHEMA, load_record
from ezpz_amsc.results.schema import HEADER
from ezpz_amsc.run.layout import find_run_files
from ezpz_amsc.run.steps import Digests, read_steps

pytestmark = pytest.mark.usefixtures("clean_hook_env")

RUN = "fsdp_tp-2rank"


# ---------------------------------------------------------------- the record's content


def test_record_of_a_shipped_run_field_by_field(fixture_run, tmp_path):
    run = fixture_run(RUN)
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    before = time.time()
    result = export_with_records([run], results, folder, "--warmup", "2")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.splitlines()[-1] == f"note: wrote 1 provenance record to {folder}"
    (path,) = records_in(folder)
    assert path.name == "20261129T221843Z_localhost_agpt-x_1n-2g_" + hashlib.sha256(
        b"2026-11-29T22:18:43Z\0localhost\0agpt/x\x001\x002").hexdigest()[:8] + ".json"
    rec = json.loads(path.read_text())
    (row,) = parse_csv(results.read_text())
    as_json = json.loads(run_cli(run, "--config", "agpt/x", "--warmup", "2", "--format", "json",
                                 "-q").stdout)

    assert list(rec) == ["schema", "tool", "row", "options", "run_dir", "exported", "files",
                         "values", "sha256_of"]
    assert rec["schema"] == SCHEMA == 2
    assert rec["tool"] == {"name": "ezpz-amsc", "version": ezpz_amsc.__version__}
    assert rec["row"] == row == as_json["row"]
    assert list(rec["row"]) == list(HEADER)
    assert rec["row"]["throughput_tokens_per_sec"] == "3931.999"  # 3930.349 with --warmup 1
    assert rec["options"] == {
        "config": "agpt/x", "system": None, "nodes": None, "gpus": None, "status": "pass",
        "error": "", "warmup": 2, "reducer": "median", "wall_time_sec": None, "timestamp": None,
        "attempt": None, "max_line_bytes": 64 << 20}
    assert rec["run_dir"] == str(run) and Path(rec["run_dir"]).is_absolute()
    exported = rec["exported"]
    assert set(exported) == {"at", "host", "user", "results_file"}
    assert exported["results_file"] == str(results)
    assert exported["host"] == socket.gethostname()  # what host_name() stands in for
    at = time.mktime(time.strptime(exported["at"], "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    assert before - 1 <= at <= time.time() + 1
    assert rec["files"] == [
        {"path": "metrics-0.jsonl", "role": "metrics", "size": 204276,
         "sha256": sha256(run / "metrics-0.jsonl")},
        {"path": "run_info.json", "role": "run_info",
         "size": (run / "run_info.json").stat().st_size, "sha256": sha256(run / "run_info.json")},
    ]
    # The values the row used, each with the file and field it came from: counts only.
    assert rec["values"] == {
        "system": {"value": "localhost", "from": [{"file": "run_info.json", "field": "MACHINE"}]},
        "nodes": {"value": 1, "from": [{"file": "run_info.json", "field": "NUM_NODES",
                                        "value": 1}]},
        "gpus": {"value": 2, "from": [
            {"file": "run_info.json", "field": "WORLD_SIZE_IN_USE", "value": 2},
            {"file": "run_info.json", "field": "world_size", "value": 2}]}}
    # Of the run_info.json sections and the launch command, only a sha256 (canonical JSON).
    run_info = json.loads((run / "run_info.json").read_text())
    assert rec["sha256_of"] == {
        k: _canonical(run_info[k]) for k in ("Python", "Torch", "Distributed",
                                             "Environment Variables")} | {
        "EZPZ_RUN_COMMAND": _canonical(run_info["Distributed"]["EZPZ_RUN_COMMAND"])}
    text = path.read_text()
    assert "mpirun" not in text and "PATH" not in text and "details" not in text
    assert as_json["row"] == rec["row"]


def _canonical(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def test_record_names_the_report_when_placement_came_from_it(fixture_run, tmp_path):
    run = fixture_run("minimal-1rank")
    (run / "run_info.json").unlink()
    folder, results = tmp_path / "records", tmp_path / "r.csv"
    result = run_cli(run, "--config", "c", "--append", results, "--provenance", folder)
    assert result.exit_code == 0, result.stderr
    (row,) = parse_csv(results.read_text())
    (path,) = records_in(folder)
    rec = load_record(path)
    report = run / "train" / "report-train.md"
    assert rec["row"] == row
    assert rec["files"] == [
        {"path": "metrics.jsonl", "role": "metrics", "size": 7403,
         "sha256": sha256(run / "metrics.jsonl")},
        {"path": "train/report-train.md", "role": "report", "size": report.stat().st_size,
         "sha256": sha256(report)},
    ]
    assert rec["sha256_of"] == {}
    assert rec["values"]["gpus"]["from"][0]["file"] == "train/report-train.md"
    assert rec["exported"]["results_file"] == str(results)


def test_launch_command_and_sections_are_hashed_never_copied(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "metrics.jsonl", [step(i, tps=100.0 + i, dt=0.5) for i in range(1, 6)])
    launch = "['mpiexec', '--np', '1', '--ppn', '1', 'python3']"
    info = write_run_info(run, EZPZ_RUN_COMMAND=launch, PBS_JOBID="8123.pbs", GPUS_PER_NODE="1",
                          WORLD_SIZE_IN_USE="1")
    doc = json.loads(info.read_text())
    doc["Environment Variables"] = {"PBS_JOBID": "8123.aurora-pbs", "EZPZ_RUN_COMMAND": "other"}
    doc["Python"] = {"Version": "3.12.1"}
    info.write_text(json.dumps(doc))
    rec = _record_of(run, tmp_path)
    # Distributed's launch command first (the one placement reads), as JSON text.
    assert rec["sha256_of"] == {"Python": _canonical({"Version": "3.12.1"}),
                                "Distributed": _canonical(doc["Distributed"]),
                                "Environment Variables": _canonical(doc["Environment Variables"]),
                                "EZPZ_RUN_COMMAND": _canonical(launch)}
    assert rec["values"]["ranks_per_node"] == {"value": 1, "from": [
        {"file": "run_info.json", "field": "EZPZ_RUN_COMMAND", "value": 1, "flag": "--ppn"}]}
    assert rec["values"]["nodes"] == {"value": 1, "from": [
        {"file": "run_info.json", "field": "EZPZ_RUN_COMMAND", "value": 1}]}
    text = json.dumps(rec)
    assert "8123" not in text and "mpiexec" not in text and "3.12.1" not in text


def _record_of(run: Path, tmp_path: Path, *args: object) -> dict:
    folder = tmp_path / f"records-{run.name}"
    result = run_cli(run, "--config", "c", "--append", tmp_path / f"{run.name}.csv",
                     "--provenance", folder, "-q", *args)
    assert result.exit_code == 0, result.stderr
    (path,) = records_in(folder)
    return load_record(path)


def test_the_metrics_digest_covers_every_byte_read_in_one_pass(tmp_path):
    """Long lines skipped unread, a truncated tail, a second pass for rank 1: all hashed."""
    run = tmp_path / "run"
    lines = [json.dumps(step(i, rank=1, tps=10.0 * i, dt=0.1)) for i in range(1, 5)]
    lines.insert(2, json.dumps({"metrics": {"x": "y" * 5000}, "rank": 1}))  # over the limit
    (run).mkdir()
    (run / "metrics.jsonl").write_text("\n".join(lines) + "\n{\"rank\": 1, \"metr")
    write_run_info(run)
    digests = Digests()
    steps = read_steps(find_run_files(run).metrics, 4096, digests)
    assert (steps.rank, len(steps), steps.long_lines) == (1, 4, 1)  # read twice, hashed once
    data = (run / "metrics.jsonl").read_bytes()
    assert digests == {run / "metrics.jsonl": (len(data), hashlib.sha256(data).hexdigest())}


def test_per_rank_files_read_before_the_chosen_one_are_recorded_too(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "metrics-0.jsonl", ["not json"])
    write_jsonl(run / "metrics-1.jsonl", [step(i, rank=1, tps=5.0, dt=0.2) for i in (1, 2, 3)])
    write_run_info(run, WORLD_SIZE_IN_USE="2", world_size="2")
    rec = _record_of(run, tmp_path)
    assert [(f["path"], f["role"], f["sha256"]) for f in rec["files"][:2]] == [
        ("metrics-0.jsonl", "metrics", sha256(run / "metrics-0.jsonl")),
        ("metrics-1.jsonl", "metrics", sha256(run / "metrics-1.jsonl"))]


# ------------------------------------------------------------------------------- names


def test_record_names_are_safe_readable_and_unique():
    row = dict.fromkeys(HEADER, "")
    row |= {"timestamp": "2026-08-11T17:11:17Z", "system": "Aurora", "nodes": "2", "gpus": "24"}
    names = {cfg: record_name(row | {"config": cfg})
             for cfg in ("agpt/bs1", "agpt bs1", "agpt-bs1", "AGPT/bs1", "../../etc", "", "√")}
    assert names["agpt/bs1"].startswith("20260811T171117Z_Aurora_agpt-bs1_2n-24g_")
    assert len(set(names.values())) == len(names)  # same slug, other identity: other name
    assert len({n.lower() for n in names.values()}) == len(names)  # case-insensitive disks too
    for name in names.values():
        assert name.endswith(".json") and "/" not in name and not name.startswith((".", "-"))
        assert re.fullmatch(r"[A-Za-z0-9._+-]+", name)
    long_name = record_name(row | {"config": "x" * 1000, "system": "s" * 1000})
    assert len(long_name) < 200
    assert record_name(row | {"config": "agpt/bs1"}) == names["agpt/bs1"]  # stable


# ---------------------------------------------------------------------- all or nothing


@pytest.mark.slow
def test_a_failed_record_write_leaves_no_row_and_no_record(fixture_run, tmp_path, monkeypatch):
    runs = five_runs(fixture_run)
    results, folder = tmp_path / "res.csv", tmp_path / "sub" / "records"
    real = folder_mod._write_new
    calls = []

    def write_new(dir_fd, name, data):
        calls.append(name)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(dir_fd, name, data)

    monkeypatch.setattr(folder_mod, "_write_new", write_new)
    result = export_with_records(runs, results, folder)
    waiting = folder_mod.pending_folder(folder, results)
    assert error_line(result) == (f"error: {waiting / calls[2]}: cannot write: "
                                  "No space left on device")
    assert result.exit_code == 1
    assert not results.exists()  # created under the lock, removed again while still held
    assert not (tmp_path / "sub").exists()  # the records' folders made for it, too
    # An existing results file is left byte for byte; the records folder stays as it was.
    results.write_text(",".join(HEADER) + "\n")
    folder.mkdir(parents=True)
    calls.clear()
    assert export_with_records(runs, results, folder).exit_code == 1
    assert results.read_text() == ",".join(HEADER) + "\n"
    assert records_in(folder) == [] and list(folder.iterdir()) == []


@pytest.mark.slow
def test_a_failed_row_write_leaves_no_record(fixture_run, tmp_path, monkeypatch):
    runs = five_runs(fixture_run)
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    results.write_text(",".join(HEADER) + "\n")

    def write_all(fd, data):
        os.write(fd, data[:10])  # part of the rows, then the disk is full
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("ezpz_amsc.results.append.write_all", write_all)
    result = export_with_records(runs, results, folder)
    assert error_line(result) == (f"error: {results}: cannot write results file: No space left "
                                  "on device; file left as it was")
    assert results.read_text() == ",".join(HEADER) + "\n"
    assert not folder.exists()  # the records written under the lock were taken back


@pytest.mark.slow
def test_a_duplicate_refusal_writes_neither(fixture_run, tmp_path):
    runs = five_runs(fixture_run)
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    assert export_with_records(runs[:2], results, folder).exit_code == 0
    before = (results.read_bytes(), {p: p.read_bytes() for p in records_in(folder)})
    result = export_with_records(runs[1:], results, folder)  # runs[1] is already there
    assert "is already at line 3 of" in error_line(result)
    assert (results.read_bytes(), {p: p.read_bytes() for p in records_in(folder)}) == before


@pytest.fixture
def one_published(fixture_run, tmp_path):
    """RUN appended to res.csv with its record: (run, results, records folder, record)."""
    run = fixture_run(RUN)
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    assert export_with_records([run], results, folder).exit_code == 0
    (path,) = records_in(folder)
    return run, results, folder, path


def test_a_record_without_its_row_is_never_replaced(one_published):
    """The row was removed from the results file by hand: its record still blocks a rewrite,
    and --allow-duplicate does not get round it (a second record would leave the first
    without a row, and check --provenance failing)."""
    run, results, folder, path = one_published
    old = path.read_bytes()
    results.unlink()
    want = (f"error: {path}: a record of this run (2026-11-29T22:18:43Z, localhost, agpt/x, 1, 2) "
            f"exists, but {results} holds no row of it; not replacing it (if that row was "
            "removed on purpose, remove the record too; if the record belongs to another "
            "results file, give each results file its own records folder)")
    assert error_line(export_with_records([run], results, folder)) == want
    assert error_line(export_with_records([run], results, folder, "--allow-duplicate")) == want
    assert not results.exists() and path.read_bytes() == old
    assert [p.name for p in folder.iterdir()] == [path.name]  # no pending record left either


def test_allow_duplicate_writes_a_second_record_beside_the_first(one_published):
    run, results, folder, first = one_published
    old = first.read_bytes()
    result = export_with_records([run, run], results, folder, "--allow-duplicate",
                                 "--reducer", "mean")
    assert result.exit_code == 0, result.stderr
    names = [first.name, first.name.replace(".json", "-2.json"),
             first.name.replace(".json", "-3.json")]
    assert sorted(p.name for p in records_in(folder)) == sorted(names)
    assert first.read_bytes() == old
    rows = parse_csv(results.read_text())
    assert [load_record(folder / n)["row"] for n in names] == rows
    assert rows[0]["throughput_tokens_per_sec"] != rows[1]["throughput_tokens_per_sec"]
    # The same run three times: check says so, and pairs each row with its equal record.
    result = run_group("check", results, "--provenance", folder, "-q")
    assert result.stderr.splitlines() == [
        f"{results}:3: same run as line 2", f"{results}:4: same run as line 2",
        f"error: {results}: 2 problems in 3 rows and 3 records"]


def test_records_follow_the_umask(fixture_run, tmp_path):
    run = fixture_run(RUN)
    old = os.umask(0o002)
    try:
        assert run_cli(run, "--config", "c", "--append", tmp_path / "r.csv", "--provenance",
                       tmp_path / "r", "-q").exit_code == 0
    finally:
        os.umask(old)
    (path,) = records_in(tmp_path / "r")
    assert (path.stat().st_mode & 0o777, (tmp_path / "r").stat().st_mode & 0o777) == (0o664,
                                                                                       0o775)


def test_keep_going_records_the_rows_that_were_written(fixture_run, tmp_path):
    good = fixture_run(RUN)
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    result = export_with_records([good, tmp_path / "missing"], results, folder, "--keep-going")
    assert result.exit_code == 1
    (path,) = records_in(folder)
    assert load_record(path)["row"] == parse_csv(results.read_text())[0]


@pytest.mark.parametrize("where, fragment", [
    ("file", "not a folder; --provenance needs a folder for the records"),
    ("under-file", "exists and is not a folder"),
])
def test_a_bad_records_folder_fails_before_any_work(fixture_run, tmp_path, where, fragment):
    blocker = tmp_path / "blocker"
    blocker.write_text("x")
    folder = blocker if where == "file" else blocker / "records"
    results = tmp_path / "res.csv"
    result = export_with_records([fixture_run(RUN)], results, folder)
    assert fragment in error_line(result)
    assert not results.exists()


# ------------------------------------------------- each rule by value (mutation survivors)


def _build(run: Path, **opts: object) -> dict:
    """The record of ``run`` built in process: export_run + build_record."""
    from ezpz_amsc.flow.export import export_run
    from ezpz_amsc.options import ExportOptions

    o = ExportOptions(config="c", **opts)
    return record_mod.build_record(export_run(run, o, hash_files=True), o)


def test_the_run_info_hashed_is_the_one_placement_used_not_the_nearest(tmp_path):
    """The nearest run_info.json has no Distributed section: placement reads the parent's,
    and that one is recorded and its sections hashed, the unused nearer one is not."""
    run = tmp_path / "run"
    write_jsonl(run / "sub" / "metrics.jsonl", [step(i, tps=10.0, dt=0.5) for i in (1, 2, 3)])
    (run / "sub" / "run_info.json").write_text(json.dumps({"Python": {"Version": "nearest"}}))
    info = write_run_info(run)
    doc = json.loads(info.read_text())
    doc["Python"] = {"Version": "used"}
    info.write_text(json.dumps(doc))
    rec = _build(run)
    assert [(f["path"], f["role"]) for f in rec["files"]] == [
        ("sub/metrics.jsonl", "metrics"), ("run_info.json", "run_info")]
    assert rec["files"][1]["sha256"] == sha256(info)
    assert rec["sha256_of"] == {"Python": _canonical({"Version": "used"}),
                                "Distributed": _canonical(doc["Distributed"])}


def test_a_config_json_placement_used_is_recorded_as_config(tmp_path):
    run = write_run(tmp_path / "run", [step(i, tps=10.0, dt=0.5) for i in (1, 2, 3)],
                    world_size=None, WORLD_SIZE_IN_USE=None, MACHINE=None)
    (run / "config.json").write_text(json.dumps({"MACHINE": "Polaris", "world_size": 1}))
    rec = _build(run)
    assert rec["row"]["system"] == "Polaris"
    assert [(f["path"], f["role"], f["sha256"]) for f in rec["files"]] == [
        ("metrics-0.jsonl", "metrics", sha256(run / "metrics-0.jsonl")),
        ("run_info.json", "run_info", sha256(run / "run_info.json")),
        ("config.json", "config", sha256(run / "config.json"))]


def test_the_exporting_user_is_recorded():
    import getpass

    assert record_mod._user() == getpass.getuser()


def test_build_record_needs_hashed_files(tmp_path):
    from ezpz_amsc.flow.export import export_run
    from ezpz_amsc.options import ExportOptions

    run = write_run(tmp_path / "run", [step(i, tps=10.0, dt=0.5) for i in (1, 2, 3)])
    opts = ExportOptions(config="c")
    with pytest.raises(ValueError, match=r"^a record needs export_run\(\.\.\., hash_files=True\)$"):
        record_mod.build_record(export_run(run, opts), opts)


# --------------------------------------------------------------------- the file's bytes


def test_encode_writes_indented_utf8_strict_json():
    assert record_mod.encode({"a": [1], "s": "√"}) == (
        '{\n  "a": [\n    1\n  ],\n  "s": "√"\n}\n').encode()
    with pytest.raises(ValueError):
        record_mod.encode({"x": float("nan")})


def test_encode_keeps_a_lone_surrogate_escaped():
    assert record_mod.encode({"a": [1], "s": "a\ud800"}) == (
        b'{\n  "a": [\n    1\n  ],\n  "s": "a\\ud800"\n}\n')


def test_write_record_file_replaces_an_earlier_record_whole(tmp_path):
    path = tmp_path / "amsc.json"
    folder_mod.write_record_file(path, {"n": 1, "long": "x" * 50})
    folder_mod.write_record_file(path, {"n": 2})
    assert path.read_bytes() == b'{\n  "n": 2\n}\n'


# ---------------------------------------------------------------------------- naming


@pytest.mark.parametrize("text, limit, want", [
    ("Xy.z", 20, "Xy.z"),
    ("--" + "a" * 30, 20, "a" * 20),
    ("a" * 19 + "-b", 20, "a" * 19),
    ("a" * 19 + ".b", 20, "a" * 19),
    ("///", 8, "x"),
    ("", 8, "x"),
    ("a/b c", 8, "a-b-c"),
])
def test_slug(text, limit, want):
    assert folder_mod._slug(text, limit) == want


def test_record_name_caps_each_part():
    row = dict.fromkeys(HEADER, "")
    row |= {"timestamp": "1" * 30, "system": "s" * 50, "config": "c" * 100,
            "nodes": "9" * 10, "gpus": "8" * 10}
    tag = hashlib.sha256("\0".join(row[c] for c in ("timestamp", "system", "config", "nodes",
                                                     "gpus")).encode()).hexdigest()[:8]
    assert record_name(row) == (f"{'1' * 20}_{'s' * 40}_{'c' * 80}_{'9' * 8}n-{'8' * 8}g_"
                                f"{tag}.json")


def test_record_name_of_a_config_with_a_lone_surrogate():
    row = dict.fromkeys(HEADER, "")
    row |= {"timestamp": "2026-08-11T17:11:17Z", "system": "A", "config": "a\udc80",
            "nodes": "1", "gpus": "2"}
    key = "2026-08-11T17:11:17Z\0A\0a\udc80\x001\x002".encode("utf-8", "surrogatepass")
    assert record_name(row) == (f"20260811T171117Z_A_a_1n-2g_"
                                f"{hashlib.sha256(key).hexdigest()[:8]}.json")


def test_check_record_folder_names_what_it_cannot_create(tmp_path, monkeypatch):
    blocker = tmp_path / "f"
    blocker.write_text("x")
    with pytest.raises(AmscError) as e:
        folder_mod.check_record_folder(blocker)
    assert e.value.format_message() == (
        f"{blocker}: not a folder; --provenance needs a folder for the records")
    monkeypatch.setattr(os, "access", lambda *a, **k: False)  # root may write anywhere
    with pytest.raises(AmscError, match="cannot create record.json there"):
        folder_mod.check_record_folder(tmp_path)


# --------------------------------------------------------------------- reading records


def _minimal_record(**changes: object) -> dict:
    rec = {"schema": 1, "row": dict.fromkeys(HEADER, ""), "options": {}, "run_dir": "/r",
           "files": []}
    return {**rec, **changes}


@pytest.mark.parametrize("changes, why", [
    ({"schema": 0}, "no schema version"),
    ({"schema": True}, "no schema version"),
    ({"options": None}, "no options or run_dir"),
    ({"run_dir": 3}, "no options or run_dir"),
    ({"files": None}, "no files list"),
    ({"files": [1]}, "no files list"),
])
def test_a_record_of_the_wrong_shape_is_refused(tmp_path, changes, why):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_minimal_record(**changes)))
    with pytest.raises(AmscError) as e:
        load_record(path)
    assert e.value.format_message() == f"{path}: not an ezpz-amsc provenance record ({why})"


def test_a_record_of_the_minimal_shape_loads(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_minimal_record(schema=2)))
    assert load_record(path) == _minimal_record(schema=2)


_RECORD_CAP = 64 << 20


@pytest.mark.slow
@pytest.mark.parametrize("size, why", [
    (_RECORD_CAP, "not JSON"),  # read whole, then parsed
    (_RECORD_CAP + 1, "larger than 64 MiB"),  # refused unparsed
])
def test_the_record_size_cap(tmp_path, size, why):
    path = tmp_path / "big.json"
    with open(path, "wb") as f:
        f.truncate(size)  # sparse: NUL bytes, no JSON
    with pytest.raises(AmscError) as e:
        load_record(path)
    assert e.value.format_message() == f"{path}: not an ezpz-amsc provenance record ({why})"


@pytest.mark.parametrize("what", ["folder", "missing", "under-a-file"])
def test_load_record_says_why_it_cannot_read(tmp_path, what):
    (tmp_path / "f").write_text("x")
    path, want = {
        "folder": (tmp_path, "is a directory, not a provenance record"),
        "missing": (tmp_path / "none.json", "no such file"),
        "under-a-file": (tmp_path / "f" / "r.json", "cannot read: Not a directory"),
    }[what]
    with pytest.raises(AmscError) as e:
        load_record(path)
    assert e.value.format_message() == f"{path}: {want}"


def test_iter_records_reads_the_visible_json_files_only(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(_minimal_record()))
    (tmp_path / "b.json").write_text("[]")
    for name in ("notes.txt", ".tmp-c.json", "json"):
        (tmp_path / name).write_text("x")
    got = list(folder_mod.iter_records(tmp_path))
    assert got == [
        (tmp_path / "a.json", _minimal_record(), None),
        (tmp_path / "b.json", None,
         f"{tmp_path / 'b.json'}: not an ezpz-amsc provenance record (not a JSON object)")]


def test_iter_records_refuses_what_is_no_folder(tmp_path, monkeypatch):
    (tmp_path / "f").write_text("x")
    for path, what in ((tmp_path / "f", "not a folder"), (tmp_path / "no", "no such folder")):
        with pytest.raises(AmscError) as e:
            list(folder_mod.iter_records(path))
        assert e.value.format_message() == (
            f"{path}: {what}; --provenance needs the folder of the records")

    def listdir(p):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "listdir", listdir)
    with pytest.raises(AmscError) as e:
        list(folder_mod.iter_records(tmp_path))
    assert e.value.format_message() == f"{tmp_path}: cannot list: Permission denied"


# -------------------------------------------------------------- options of a record


def _options_rec(version: str | None = "9.9", **options: object) -> dict:
    rec = {"options": {"config": "c", "warmup": 3, **options}}
    if version is not None:
        rec["tool"] = {"name": "ezpz-amsc", "version": version}
    return rec


def test_unknown_options_left_unset_are_ignored():
    opts = record_mod.options_from_record(_options_rec(new_a=None, new_b=False, new_c=""), "r")
    assert (opts.config, opts.warmup) == ("c", 3)


@pytest.mark.parametrize("version, options, what, by", [
    ("9.9", {"new_b": True}, "option new_b", "9.9"),
    ("9.9", {"new_b": 0.5, "new_a": "x"}, "options new_a, new_b", "9.9"),
    (None, {"new_a": 1}, "option new_a", "?"),
])
def test_unknown_options_that_were_set_are_refused(version, options, what, by):
    with pytest.raises(AmscError) as e:
        record_mod.options_from_record(_options_rec(version, **options), "r.json")
    assert e.value.format_message() == (
        f"r.json: made with {what} that ezpz-amsc {ezpz_amsc.__version__} does not know; "
        f"reproduce it with ezpz-amsc {by} or later")


@pytest.mark.parametrize("options, why", [
    ({"config": "c", "warmup": -1}, "--warmup must be 0 or more, got -1"),
    ({"warmup": 1}, "missing 1 required positional argument: 'config'"),  # a TypeError
])
def test_recorded_options_that_cannot_be_used_are_refused(options, why):
    with pytest.raises(AmscError) as e:
        record_mod.options_from_record({"options": options}, "r.json")
    message = e.value.format_message()
    assert message.startswith("r.json: its options cannot be used: ") and message.endswith(why)


# ------------------------------------------------------- a record's schema, checked before use


@pytest.mark.parametrize("changes, why", [
    ({"files": [{"path": ["a"], "role": "metrics", "size": 1, "sha256": "x"}]},
     "files[0].path is not a string"),
    ({"files": [{"path": "a", "role": "metrics", "size": "1", "sha256": "x"}]},
     "files[0].size is not a whole number"),
    ({"files": [{"path": "a", "role": "metrics", "size": True, "sha256": "x"}]},
     "files[0].size is not a whole number"),
    ({"files": [{"path": "a", "role": "metrics", "size": 1}]},
     "files[0].sha256 is not a string or null"),  # null: unhashed, but never left out
    ({"files": [{"path": "a", "role": "metrics", "size": 1, "sha256": 7}]},
     "files[0].sha256 is not a string or null"),
    ({"files": [{"path": "a", "role": "metrics", "size": 1, "sha256": None, "not_hashed": 1}]},
     "files[0].not_hashed is not a string"),
    ({"options": {"config": 3}}, "options.config is not a string"),
    ({"options": {"config": "c", "max_line_bytes": "64"}},
     "options.max_line_bytes is not a whole number"),
    ({"options": {"config": "c", "max_line_bytes": 0}},
     "options.max_line_bytes is not from 1 to 67108864"),
    ({"options": {"config": "c", "max_line_bytes": 10**30}},
     "options.max_line_bytes is not from 1 to 67108864"),
    ({"options": {"config": "c", "warmup": 10**30}}, "options.warmup is not from 0 to 2147483648"),
    ({"options": {"config": "c", "nodes": 10**30}}, "options.nodes is not from 1 to 1000000"),
    ({"options": {"config": "c", "gpus": 0}}, "options.gpus is not from 1 to 1000000"),
    ({"options": {"config": "c", "wall_time_sec": float("inf")}},
     "options.wall_time_sec is not a finite number"),
    ({"files": [{"path": "a", "role": "metrics", "size": 10**30, "sha256": None}]},
     "files[0].size is not from 0 to 9223372036854775807"),
    ({"files": [{"path": "a", "role": "metrics", "size": -1, "sha256": None}]},
     "files[0].size is not from 0 to 9223372036854775807"),
    ({"schema": 10**30}, "schema is above 1000"),
    ({"run_dir": "/."}, "run_dir '/.' is not a run directory's absolute path"),
    ({"run_dir": "/var/.."}, "run_dir '/var/..' is not a run directory's absolute path"),
    ({"run_dir": "//"}, "run_dir '//' is not a run directory's absolute path"),
    ({"options": {"config": "c", "nodes": True}}, "options.nodes is not a whole number or null"),
    ({"options": {"config": "c", "wall_time_sec": "1"}}, "options.wall_time_sec is not a number "
                                                         "or null"),
    ({"options": {"config": "c", "warmup": 1.5}}, "options.warmup is not a whole number"),
    ({"tool": "ezpz-amsc"}, "tool is not an object"),
    ({"tool": {"version": 2}}, "tool.version is not a string"),
    ({"exported": {"host": 7}}, "exported.host is not a string or null"),
    ({"exported": []}, "exported is not an object"),
    ({"run_dir": "/"}, "run_dir '/' is not a run directory's absolute path"),
    ({"run_dir": "runs/x"}, "run_dir 'runs/x' is not a run directory's absolute path"),
    ({"tool": {"name": 1}}, "tool.name is not a string"),
    ({"exported": {"at": 5}}, "exported.at is not a string"),
    ({"exported": {"user": []}}, "exported.user is not a string or null"),
    ({"exported": {"results_file": 3}}, "exported.results_file is not a string or null"),
    ({"files": [{"path": "a", "role": None, "size": 1, "sha256": "x"}]},
     "files[0].role is not a string"),
    ({"run_dir": "/a\0b"}, "run_dir '/a\\x00b' is not a run directory's absolute path"),
    ({"run_dir": "r" * 100}, f"run_dir {'r' * 80!r} is not a run directory's absolute path"),
])
def test_a_crafted_record_is_one_line_naming_the_field(tmp_path, changes, why):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_minimal_record(**{"options": {"config": "c"}, **changes})))
    with pytest.raises(AmscError) as e:
        load_record(path)
    assert e.value.format_message() == f"{path}: not an ezpz-amsc provenance record ({why})"
    # ... and so on the command line: reproduce, and check --provenance, say it in one line
    assert error_line(run_group("reproduce", path)) == f"error: {e.value.format_message()}"


def test_the_fields_a_record_may_leave_out_or_set_null(tmp_path):
    path = tmp_path / "r.json"
    rec = _minimal_record(options={"config": "c", "max_line_bytes": 1, "nodes": None},
                          tool=None, exported={"host": None})
    path.write_text(json.dumps(rec))
    assert load_record(path) == rec


def test_the_bounds_of_a_record_s_numbers_are_included(tmp_path):
    """The largest schema number and file size a record may hold are taken, and an
    empty file's size."""
    path = tmp_path / "r.json"
    rec = _minimal_record(options={"config": "c"}, schema=1000, files=[
        {"path": "a", "role": "metrics", "size": 2**63 - 1, "sha256": None},
        {"path": "b", "role": "metrics", "size": 0, "sha256": None}])
    path.write_text(json.dumps(rec))
    assert load_record(path) == rec


def test_the_pending_folder_is_named_by_the_results_files_real_path(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    tag = hashlib.sha256(os.fsencode(tmp_path / "real" / "r.csv")).hexdigest()[:16]
    for results in (tmp_path / "real" / "r.csv", tmp_path / "link" / "r.csv"):
        assert folder_mod.pending_folder(tmp_path / "d", results) == (
            tmp_path / "d" / f".pending-{tag}")


def test_a_provenance_file_linked_out_of_the_run_is_not_hashed(fixture_run, tmp_path):
    """run_info.json a symbolic link to a file outside the run (/etc/shadow, say): the
    record names it, unhashed, and reads nothing of it; reproduce does not compare it."""
    run = fixture_run(RUN)
    outside = tmp_path / "outside.json"
    (run / "run_info.json").rename(outside)
    (run / "run_info.json").symlink_to(outside)
    rec = _build(run)
    assert rec["files"][1] == {"path": "run_info.json", "role": "run_info", "size": 0,
                               "sha256": None, "not_hashed": record_mod.OUTSIDE}
    assert rec["sha256_of"] == {}
    assert record_mod.OUTSIDE == "a symbolic link out of the run directory; not followed"
    (run / "config.json").symlink_to(outside)
    assert record_mod._outside(run, run / "config.json")
    assert not record_mod._outside(run, run / "metrics-0.jsonl")
    assert not record_mod._outside(run, run)


def test_old_format_records_are_still_read_and_reproduced(fixture_run, tmp_path):
    """A schema 1 record (copied sections, redacted, and details) reproduces as before."""
    run = fixture_run(RUN)
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    assert export_with_records([run], results, folder).exit_code == 0
    (path,) = records_in(folder)
    rec = json.loads(path.read_text())
    old = {k: v for k, v in rec.items() if k not in ("values", "sha256_of")} | {
        "schema": 1, "launch_command": "<redacted>", "job_ids": {}, "run_info": None,
        "details": {"notes": []}}
    path.write_text(json.dumps(old))
    assert load_record(path) == old
    r = run_group("reproduce", path)
    assert r.exit_code == 0, r.stderr
    assert r.stdout.startswith(f"{path}: identical row (14 cells); 2 source files unchanged")
    assert run_group("check", results, "--provenance", folder, "-q").exit_code == 0


@pytest.mark.parametrize("content", [b"", b"[1, 2]", b"not json", b"\xff\xfe"],
                         ids=["empty", "not-an-object", "not-json", "not-utf8"])
def test_a_run_info_that_is_no_object_is_hashed_whole_and_its_sections_not(tmp_path, content):
    """run_info.json that cannot be read as sections: the file's digest, no section's."""
    path = tmp_path / "run_info.json"
    path.write_bytes(content)
    sections, digest = record_mod._hash_run_info(path)
    assert sections == {}
    assert digest == {"size": len(content), "sha256": hashlib.sha256(content).hexdigest()}


def test_records_of_a_folder_that_is_not_there_name_the_option(tmp_path):
    for path, what in ((tmp_path / "gone", "no such folder"), (tmp_path / "f", "not a folder")):
        if what == "not a folder":
            path.write_text("")
        with pytest.raises(AmscError) as e:
            next(folder_mod.iter_records(path))
        assert str(e.value) == (f"{path}: {what}; --provenance needs the folder of the "
                                "records")
