"""The ezpz.finalize hook and install(): a row at the end of training, never a dead job.

Also what the hook writes beside the row (its provenance record) and what it
does with a retried job.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import (
    HOOK_ENV,
    MFU_NOTE,
    NO_THROUGHPUT_NOTE,
    REPO,
    copy_run,
    hold_lock,
    is_step,
    one_row,
    parse_csv,
    records_in,
    retried_launch,
    rewrite,
    run_cli,
    run_group,
    sha256,
    write_run_info,
)
from standin_history import StandInHistory

import ezpz_amsc
from ezpz_amsc import hook
from ezpz_amsc.errors import AmscError, SeveralAttempts
from ezpz_amsc.flow import finalize
from ezpz_amsc.flow.export import export_run
from ezpz_amsc.hook import finalize_hook, run_dir_of, wrap_finalize
from ezpz_amsc.options import ExportOptions
from ezpz_amsc.records.folder import record_name
from ezpz_amsc.records.record import load_record
from ezpz_amsc.results.schema import HEADER, PROCESS_START_SLACK_SEC
from ezpz_amsc.text import opt

pytestmark = pytest.mark.usefixtures("clean_hook_env")

RUN = "fsdp_tp-1rank-launch"
# The export's one note on a shipped run, as the hook logs it (at WARNING).
MFU_WARNING = f"ezpz-amsc: note: {MFU_NOTE}"


class Bare:
    """A history object with nothing on it: rank and run dir must come from elsewhere."""


@pytest.fixture
def warnings_seen(caplog):
    """The warning lines the hook logged."""
    caplog.set_level(logging.INFO, logger="ezpz_amsc")
    return lambda: [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def _cli_row(run: Path, *args: str) -> dict[str, str]:
    rows = parse_csv(run_cli(run, "--config", "fsdp_tp/tp1", *args).stdout)
    assert len(rows) == 1
    return rows[0]


def test_writes_header_and_row_next_to_the_run(fixture_run, monkeypatch, warnings_seen):
    run = fixture_run(RUN)
    expected = _cli_row(run)
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "fsdp_tp/tp1")
    assert finalize_hook(Bare(), run) is None
    assert parse_csv((run / "amsc.csv").read_text()) == [expected]
    assert warnings_seen() == [MFU_WARNING]
    assert not list(run.glob(".amsc.csv.*"))  # no temp file left behind


def test_status_and_wall_time_from_the_environment(fixture_run, monkeypatch, warnings_seen):
    run = fixture_run(RUN)
    expected = _cli_row(run, "--status", "fail", "--wall-time-sec", "754.25")
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "fsdp_tp/tp1")
    monkeypatch.setenv("EZPZ_AMSC_STATUS", "fail")
    monkeypatch.setenv("EZPZ_AMSC_WALL_TIME_SEC", "754.25")
    finalize_hook(Bare(), str(run))
    row = parse_csv((run / "amsc.csv").read_text())[0]
    assert row == expected
    assert (row["status"], row["wall_time_sec"]) == ("fail", "754.250")
    assert warnings_seen() == [
        # in the hook's words: the variable that set it
        "ezpz-amsc: note: wall_time_sec from EZPZ_AMSC_WALL_TIME_SEC; summed step time is 1.148",
        MFU_WARNING]


def test_appends_to_a_results_file(fixture_run, tmp_path, monkeypatch, warnings_seen):
    runs = [fixture_run(RUN), fixture_run("minimal-1rank")]
    results = tmp_path / "results" / "all.csv"
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    monkeypatch.setenv("EZPZ_AMSC_APPEND", str(results))
    for run in runs:
        finalize_hook(Bare(), run)
    text = results.read_text()
    assert text.count("timestamp,system,config") == 1
    assert [r["steps"] for r in parse_csv(text)] == [_cli_row(r)["steps"] for r in runs]
    assert not any((r / "amsc.csv").exists() for r in runs)
    # one per run, at WARNING (minimal logs no tokens/s: its row says so too)
    assert warnings_seen() == [MFU_WARNING, f"ezpz-amsc: note: {NO_THROUGHPUT_NOTE}", MFU_WARNING]


def test_the_same_history_and_run_is_exported_once(fixture_run, tmp_path, monkeypatch,
                                                   warnings_seen, caplog):
    """A host that calls the hook and an install()ed wrapper must not double the row."""
    run = fixture_run(RUN)
    results = tmp_path / "all.csv"
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    monkeypatch.setenv("EZPZ_AMSC_APPEND", str(results))
    history = Bare()
    finalize_hook(history, run)
    finalize_hook(history, run)  # remembered on the history: skipped, said at INFO
    assert warnings_seen() == [MFU_WARNING]  # the notes of the one export
    assert caplog.records[-1].getMessage() == (
        f"ezpz-amsc: {run} already exported by this history; not writing it twice")
    # Another History exporting the same run: the results file's duplicate check refuses it.
    finalize_hook(Bare(), run)
    assert len(parse_csv(results.read_text())) == 1
    first, warning = warnings_seen()  # a refused export logs its failure, not its notes
    assert first == MFU_WARNING
    assert "is already at line 2" in warning


@pytest.mark.parametrize("setup", [
    {},                                    # no EZPZ_AMSC_CONFIG: nothing at all
    {"EZPZ_AMSC_CONFIG": ""},
    {"EZPZ_AMSC_CONFIG": "c", "RANK": "1"},
    {"EZPZ_AMSC_CONFIG": "c", "PMI_RANK": "3"},
    {"EZPZ_AMSC_CONFIG": "c", "OMPI_COMM_WORLD_RANK": "7"},
    {"EZPZ_AMSC_CONFIG": "c", "rank_attr": 2},
    {"EZPZ_AMSC_CONFIG": "c", "rank_attr": 5, "RANK": "0"},  # the history's own rank wins
], ids=["unset", "empty", "RANK", "PMI_RANK", "OMPI", "history.rank", "history-over-env"])
def test_silent_no_op_off_rank_0_or_without_a_config(fixture_run, monkeypatch, warnings_seen,
                                                     setup):
    run = fixture_run(RUN)
    history = Bare()
    for k, v in setup.items():
        if k == "rank_attr":
            history.rank = v
        else:
            monkeypatch.setenv(k, v)
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    finalize_hook(history, run)
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before
    assert warnings_seen() == []


@pytest.mark.parametrize("env, outdir, line", [
    ({"RANK": "zero"}, "RUN", "ezpz-amsc: no row written for RUN: RANK='zero' is not a rank"),
    ({"EZPZ_AMSC_APPEND": " "}, "RUN", "ezpz-amsc: no row written for RUN: EZPZ_AMSC_APPEND is "
     "set but empty (is the variable that should hold it unset?); set it to a path, or unset it"),
    ({"EZPZ_AMSC_PROVENANCE": "~no-such-user-x"}, "RUN", "ezpz-amsc: no row written for RUN: "
     "EZPZ_AMSC_PROVENANCE='~no-such-user-x': cannot expand ~no-such-user-x: no such user"),
    ({}, None, "ezpz-amsc: no row written: finalize was given no outdir and the history object "
     "has neither _jsonl_path nor _report_dir"),
], ids=["rank", "empty-append", "unknown-user", "no-outdir"])
def test_a_reason_not_to_export_is_its_exact_line(fixture_run, monkeypatch, warnings_seen, env,
                                                  outdir, line):
    run = fixture_run(RUN)
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    finalize_hook(Bare(), run if outdir else None)
    assert warnings_seen() == [line.replace("RUN", str(run))]


def test_the_historys_own_rank_attribute_is_ezpzs_private_one(fixture_run, monkeypatch,
                                                              warnings_seen):
    """ezpz's History keeps its rank in ``_rank``: rank 3 there exports nothing."""
    run = fixture_run(RUN)
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.setenv("RANK", "0")  # the history's own rank wins over the launcher's
    history = Bare()
    history._rank = 3
    finalize_hook(history, run)
    assert not (run / "amsc.csv").exists() and warnings_seen() == []
    history._rank = 0
    finalize_hook(history, run)
    assert (run / "amsc.csv").is_file()


def _boom(exc):
    def export_run(run_dir, opts, **_):
        raise exc
    return export_run


# (environment, how to break the run / target, fragment of the one warning line)
FAILURES = [
    ({}, "missing-dir", "no-such-run: no such directory"),
    ({}, "file-not-dir", "not a directory"),
    ({}, "empty-dir", "no metrics found"),
    ({}, "no-outdir", "finalize was given no outdir"),
    ({"RANK": "zero"}, None, "RANK='zero' is not a rank"),
    ({"EZPZ_AMSC_CONFIG": "   "}, None, "EZPZ_AMSC_CONFIG='   ' is not a one-line label"),
    ({"EZPZ_AMSC_CONFIG": "a\nb"}, None, "is not a one-line label"),
    ({"EZPZ_AMSC_STATUS": "ok"}, None, "EZPZ_AMSC_STATUS must be pass or fail, got 'ok'"),
    ({"EZPZ_AMSC_WALL_TIME_SEC": "1h"}, None, "EZPZ_AMSC_WALL_TIME_SEC must be a positive"),
    ({"EZPZ_AMSC_WALL_TIME_SEC": "-5"}, None, "EZPZ_AMSC_WALL_TIME_SEC must be a positive"),
    ({"EZPZ_AMSC_WALL_TIME_SEC": "nan"}, None, "EZPZ_AMSC_WALL_TIME_SEC must be a positive"),
    ({"EZPZ_AMSC_APPEND": ""}, None, "EZPZ_AMSC_APPEND is set but empty (is the variable "
     "that should hold it unset?); set it to a path, or unset it"),
    ({"EZPZ_AMSC_APPEND": "  "}, None, "EZPZ_AMSC_APPEND is set but empty"),
    ({"EZPZ_AMSC_PROVENANCE": ""}, None, "EZPZ_AMSC_PROVENANCE is set but empty"),
    ({"EZPZ_AMSC_APPEND": "~no-such-user-x/r.csv"}, None,
     "EZPZ_AMSC_APPEND='~no-such-user-x/r.csv': cannot expand ~no-such-user-x: no such user"),
    ({}, "append-under-a-file", "exists and is not a folder"),
    ({}, "append-is-a-dir", "is a directory"),
    ({}, "append-other-header", "existing header differs from this tool's (lacks timestamp, "
     "system, config, nodes and 10 more; has date, machine, score); refusing to append — write "
     "to a new file the file's:  date,machine,score this tool's: timestamp,system,config,"),
    ({}, "row-file-is-a-dir", "amsc.csv: is a directory; cannot write a file there"),
    ({}, "no-provenance", "cannot tell"),
    ({}, RuntimeError("exploded inside export"), "RuntimeError: exploded inside export"),
    ({}, MemoryError(), "MemoryError"),
    ({}, RecursionError("deep"), "RecursionError: deep"),
]


@pytest.mark.slow
@pytest.mark.parametrize("env, breakage, fragment", FAILURES,
                         ids=[f"{b if isinstance(b, str) else type(b).__name__}-{sorted(e)}"
                              for e, b, _ in FAILURES])
def test_every_failure_is_one_warning_and_never_raises(fixture_run, tmp_path, monkeypatch,
                                                       warnings_seen, env, breakage, fragment):
    run = fixture_run(RUN)
    outdir: Path | None = run
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    append = tmp_path / "results.csv"
    if breakage == "missing-dir":
        outdir = tmp_path / "no-such-run"
    elif breakage == "file-not-dir":
        outdir = run / "run_info.json"
    elif breakage == "empty-dir":
        outdir = tmp_path / "empty"
        write_run_info(outdir)
    elif breakage == "no-outdir":
        outdir = None
    elif breakage == "append-under-a-file":
        append = run / "run_info.json" / "results.csv"
    elif breakage == "append-is-a-dir":
        append = tmp_path
    elif breakage == "append-other-header":
        append.write_text("date,machine,score\n2026-01-01,x,1\n")
    elif breakage == "row-file-is-a-dir":
        (run / "amsc.csv").mkdir()
    elif breakage == "no-provenance":
        for p in [*run.rglob("run_info.json"), *run.rglob("report-*.md")]:
            p.unlink()
    elif isinstance(breakage, BaseException):
        monkeypatch.setattr("ezpz_amsc.flow.export.export_run", _boom(breakage))
    if breakage and str(breakage).startswith("append"):
        monkeypatch.setenv("EZPZ_AMSC_APPEND", str(append))
    before = append.read_bytes() if append.is_file() else None

    assert finalize_hook(Bare(), outdir) is None

    lines = warnings_seen()
    assert len(lines) == 1, lines
    assert lines[0].startswith("ezpz-amsc: no row written")
    assert fragment in lines[0]
    assert "\n" not in lines[0]
    assert not (run / "amsc.csv").is_file()
    assert not (run / "amsc.json").exists()  # a record never stands without its row
    assert not list(run.glob(".amsc.*"))
    assert (append.read_bytes() if append.is_file() else None) == before


class _LooksLikeOne(Exception):
    """Has format_message like the old click-based error, but is not an AmscError."""

    def format_message(self) -> str:
        return "pass --gpus N"


@pytest.mark.parametrize("exc, warning", [
    (AmscError("cannot tell gpus; pass " + opt("gpus", "N")),
     "cannot tell gpus; pass --gpus N (when exporting by hand: ezpz-amsc RUN_DIR --config "
     "LABEL ...)"),
    (AmscError("cannot tell wall_time_sec; pass " + opt("wall_time_sec", "SECONDS")),
     "cannot tell wall_time_sec; pass EZPZ_AMSC_WALL_TIME_SEC=SECONDS"),
    (_LooksLikeOne("raw text"), "_LooksLikeOne: raw text"),
])
def test_hook_recognises_the_error_by_type(fixture_run, monkeypatch, caplog, exc, warning):
    def boom(run_dir, opts, **_):
        raise exc

    monkeypatch.setattr("ezpz_amsc.flow.export.export_run", boom)
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.delenv("RANK", raising=False)
    run = fixture_run("minimal-1rank")
    caplog.set_level(logging.WARNING)
    finalize_hook(object(), run)
    assert [r.getMessage() for r in caplog.records] == [
        f"ezpz-amsc: no row written for {run}: {warning}"]


class _BrokenStr(Exception):
    def __str__(self) -> str:
        raise ValueError("no text")


def test_an_exception_whose_text_cannot_be_had_is_named_by_its_type(fixture_run, monkeypatch,
                                                                    caplog):
    monkeypatch.setattr("ezpz_amsc.flow.export.export_run", _boom(_BrokenStr()))
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    run = fixture_run("minimal-1rank")
    caplog.set_level(logging.WARNING)
    finalize_hook(object(), run)
    assert [r.getMessage() for r in caplog.records] == [
        f"ezpz-amsc: no row written for {run}: _BrokenStr"]


@pytest.mark.slow
def test_the_hook_waits_for_the_lock_as_long_as_its_variable_says(fixture_run, tmp_path,
                                                                   monkeypatch, caplog):
    results = tmp_path / "res.csv"
    holder = hold_lock(results, tmp_path / "ready")
    try:
        monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
        monkeypatch.setenv("EZPZ_AMSC_APPEND", str(results))
        monkeypatch.setenv("EZPZ_AMSC_LOCK_TIMEOUT", "0.2")
        run = fixture_run("minimal-1rank")
        caplog.set_level(logging.WARNING)
        finalize_hook(object(), run)
    finally:
        holder.kill()
        holder.wait()
    assert [r.getMessage() for r in caplog.records] == [
        f"ezpz-amsc: no row written for {run}: {results}: still locked by another writer after "
        "0.2 s; retry, or raise EZPZ_AMSC_LOCK_TIMEOUT"]


@pytest.mark.parametrize("var, value, reason", [
    *[("EZPZ_AMSC_LOCK_TIMEOUT", value, "must be 0 to 86,400 seconds (a day)")
      for value in ["soon", "-1", "inf", "nan", "1e12"]],
    *[("EZPZ_AMSC_HASH_BUDGET", value,
       "must be a number of bytes (e.g. 512M, 2G, or 0 to hash no metrics file)")
      for value in ["lots", "1.5G", "٣"]],
])
@pytest.mark.parametrize("append", [False, True])
def test_a_bad_variable_is_one_warning_and_no_row(fixture_run, tmp_path, monkeypatch, caplog,
                                                  var, value, reason, append):
    # Refused whether or not the row goes to a results file: a typo is never taken for
    # the default.
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    if append:
        monkeypatch.setenv("EZPZ_AMSC_APPEND", str(tmp_path / "res.csv"))
    monkeypatch.setenv(var, value)
    run = fixture_run("minimal-1rank")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    caplog.set_level(logging.WARNING)
    finalize_hook(object(), run)
    assert [r.getMessage() for r in caplog.records] == [
        f"ezpz-amsc: no row written for {run}: {var} {reason}, got {value!r}"]
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("exc", [KeyboardInterrupt, SystemExit])
def test_interrupts_from_outside_still_stop_the_job(fixture_run, monkeypatch, exc):
    """Ctrl-C, or a SIGTERM handler calling sys.exit, must not be swallowed by the hook."""
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    monkeypatch.setattr("ezpz_amsc.flow.export.export_run", _boom(exc()))
    with pytest.raises(exc):
        finalize_hook(Bare(), fixture_run(RUN))


def test_without_logging_configured_the_warning_is_one_stderr_line(tmp_path):
    code = ("from ezpz_amsc.hook import finalize_hook; "
            f"finalize_hook(object(), {str(tmp_path / 'gone')!r}); print('job goes on')")
    env = {**os.environ, "EZPZ_AMSC_CONFIG": "cfg"}
    for name in HOOK_ENV[1:]:
        env.pop(name, None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=REPO)
    assert (out.returncode, out.stdout) == (0, "job goes on\n")
    lines = out.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("ezpz-amsc: no row written: ")
    assert lines[0].endswith("gone: no such directory; pass the run directory ezpz wrote")


def _at(history: Bare, jsonl: str | None, report: str | None) -> Bare:
    if jsonl:
        history._jsonl_path = jsonl
    if report:
        history._report_dir = report
    return history


@pytest.mark.parametrize("outdir, jsonl, report, expected", [
    ("out/given", "elsewhere/m.jsonl", "elsewhere", "out/given"),
    (None, "o/s/metrics-0.jsonl", "o/s", "o/s"),
    (None, "o/s/metrics-0.jsonl", "o/s/train", "o/s"),   # dataset_fname subfolder
    (None, "o/s/metrics/m.jsonl", "o/s", "o/s"),
    (None, "o/s/metrics-0.jsonl", None, "o/s"),
    (None, None, "o/s", "o/s"),
    (None, "a/m.jsonl", "b", "b"),                       # unrelated: where run_info.json is
    ("", "o/s/metrics-0.jsonl", "o/s", "o/s"),           # an empty outdir is none
])
def test_run_dir_is_the_one_finalize_wrote(outdir, jsonl, report, expected):
    assert run_dir_of(_at(Bare(), jsonl, report), outdir) == Path(expected)


# ----------------------------------------------------------------------- a retried job


def test_several_attempts_is_its_own_error_type(tmp_path):
    run, _, _ = retried_launch(tmp_path)
    with pytest.raises(SeveralAttempts) as info:
        export_run(run, ExportOptions(config="c"))
    assert info.value.attempts == 2
    assert "pass --attempt last" in str(info.value)


@pytest.mark.parametrize("after_first", [-0.5, 0.5, PROCESS_START_SLACK_SEC],
                         ids=["started-before", "started-within-the-slack",
                              "started-at-the-slack"])
def test_hook_on_a_retried_job_exports_the_last_attempt(tmp_path, monkeypatch, caplog,
                                                        after_first):
    """This process started 0.5 s before the second attempt's first record (or as long
    after it as a process start may be late): the first attempt is an earlier launch's
    into the folder."""
    from ezpz_amsc.results.schema import format_timestamp

    run, _, second = retried_launch(tmp_path)
    started = second[0]["timestamp"] + after_first
    assert started - PROCESS_START_SLACK_SEC <= second[0]["timestamp"]  # exactly, at the edge
    expected = one_row(run_cli(run, "--config", "c", "--attempt", "last"))
    assert expected["steps"] == "30"
    messages = _hook_on(run, monkeypatch, caplog, started, level=logging.INFO)
    assert parse_csv((run / "amsc.csv").read_text()) == [expected]
    assert [m for m in messages if "no row written" in m] == []
    notes = [m for m in messages if m.startswith("ezpz-amsc: note: ")]
    assert notes[0] == ("ezpz-amsc: note: the records hold 2 attempts; exported the last, the "
                        "records this process wrote since it started at "
                        f"{format_timestamp(started)} (the others are an earlier launch's into "
                        "the folder; --attempt last)")
    # The run's provenance record says how the row was made, so that it can be reproduced.
    record = json.loads((run / "amsc.json").read_text())
    assert record["options"]["attempt"] == "last"
    assert record["row"] == expected
    again = run_group("reproduce", run / "amsc.json")
    assert again.exit_code == 0, again.stdout + again.stderr


def test_hook_counts_as_its_own_only_records_up_to_1_s_before_it_started(tmp_path,
                                                                          monkeypatch, caplog):
    """The process start is known to the whole second: a record stamped up to 1 s before
    it may be its own, one stamped earlier is an earlier launch's. Started 1.5 s after
    the second attempt's first record, the hook exports the records from 0.5 s after it."""
    run, _, second = retried_launch(tmp_path)
    started = second[0]["timestamp"] + 1.5
    own = [r for r in second if r["timestamp"] >= started - 1.0]
    assert 0 < len(own) < len(second)
    _hook_on(run, monkeypatch, caplog, started)
    (row,) = parse_csv((run / "amsc.csv").read_text())
    assert row["steps"] == str(len(own))


def _paused_and_faster(tmp_path: Path) -> tuple[Path, list[dict]]:
    """The launch run (one process, 30 steps) with a 120 s pause after step 15 and its rate
    1.5x higher after it: the command line reads two attempts (a throughput change across
    a long pause, no save time logged)."""
    run = copy_run(RUN, tmp_path)
    recs = rewrite(run / "metrics-0.jsonl", lambda r: {
        **r, "timestamp": r["timestamp"] + 120.0, "metrics": {
            **r["metrics"], "train/tps": r["metrics"]["train/tps"] * 1.5,
            "train/tps_per_gpu": r["metrics"]["train/tps_per_gpu"] * 1.5}}
        if is_step(r) and r["metrics"]["train/iter"] > 15 else r)
    return run, [r for r in recs if is_step(r)]


def _hook_on(run: Path, monkeypatch, caplog, started: float | None,
             level: int = logging.WARNING) -> list[str]:
    """The hook run on ``run`` as a process started at ``started``: its log lines at
    ``level`` and above."""
    monkeypatch.setattr(finalize, "process_start", lambda: started)
    for name in ("EZPZ_AMSC_APPEND", "EZPZ_AMSC_STATUS", "EZPZ_AMSC_WALL_TIME_SEC", "RANK",
                 "PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    caplog.set_level(logging.INFO, logger="ezpz_amsc")
    finalize_hook(object(), run)
    return [r.getMessage() for r in caplog.records if r.levelno >= level]


def test_hook_exports_every_record_its_own_process_wrote_as_one_attempt(
        tmp_path, monkeypatch, caplog, json_paths):
    """Issue 33: the command line splits the run in two; the hook, whose process started
    before the first record, knows they are all its own: one row of the 30 steps."""
    import statistics

    from ezpz_amsc.results.schema import format_timestamp

    run, steps = _paused_and_faster(tmp_path)
    cli = run_cli(run, "--config", "c")
    assert cli.exit_code == 1 and "the records hold 2 attempts" in cli.stderr
    started = steps[0]["timestamp"] - 5.0
    warnings = _hook_on(run, monkeypatch, caplog, started)
    row = parse_csv((run / "amsc.csv").read_text())[0]
    tps = statistics.median(r["metrics"]["train/tps"] for r in steps[1:])
    assert (row["steps"], row["throughput_tokens_per_sec"]) == ("30", f"{tps:.3f}")
    assert ("ezpz-amsc: note: this process wrote the records since it started at "
            f"{format_timestamp(started)}: one attempt, though the command line would split "
            "them in 2 (a throughput change across a pause, a counter that repeats)") in warnings
    assert [w for w in warnings if "no row written" in w] == []


@pytest.mark.parametrize("started", [None, "after"], ids=["start-unknown", "no-record-its-own"])
def test_hook_writes_no_row_where_it_cannot_tell_its_own_attempt(tmp_path, monkeypatch, caplog,
                                                                 started):
    """Two attempts by the command line's rules, and either the process start is unknown
    (no /proc) or every record predates it: the command line's refusal is the one warning."""
    run, _, second = retried_launch(tmp_path)
    when = None if started is None else second[-1]["timestamp"] + 60.0
    warnings = _hook_on(run, monkeypatch, caplog, when)
    assert not (run / "amsc.csv").exists()
    assert warnings == [
        f"ezpz-amsc: no row written for {run}: the records hold 2 attempts (a retried or "
        "resumed job): #1 steps 1..20 from 2026-11-29T22:19:13Z (20 records, 1 rank); #2 steps "
        "1..30 from 2026-11-29T22:29:13Z (30 records, 1 rank): step numbers start again (step "
        "1 after step 20); pass --attempt last, or --attempt N for one of them (when exporting "
        "by hand: ezpz-amsc RUN_DIR --config LABEL ...)"]


# ------------------------------------------------ the provenance record beside the row


def test_hook_writes_amsc_json_beside_amsc_csv(History, fixture_run, tmp_path, monkeypatch,
                                               caplog):
    caplog.set_level(logging.INFO, logger="ezpz_amsc")
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "fsdp_tp/tp1")
    monkeypatch.setenv("EZPZ_AMSC_WALL_TIME_SEC", "99.5")
    wrap_finalize(History)
    out = tmp_path / "out"
    History(fixture_run("fsdp_tp-1rank-launch")).finalize(out)
    (row,) = parse_csv((out / "amsc.csv").read_text())
    rec = load_record(out / "amsc.json")
    assert rec["row"] == row
    assert row["wall_time_sec"] == "99.500"
    assert rec["options"]["wall_time_sec"] == 99.5 and rec["options"]["config"] == "fsdp_tp/tp1"
    assert rec["exported"]["results_file"] == str(out / "amsc.csv")
    assert [f["path"] for f in rec["files"]] == ["metrics-0.jsonl", "run_info.json"]
    assert rec["files"][0]["sha256"] == sha256(out / "metrics-0.jsonl")
    assert rec["run_dir"] == str(out)
    # What the CLI would record for the same run and options, but for the time of writing.
    result = run_group("reproduce", out / "amsc.json")
    assert result.exit_code == 0, result.stdout
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    # The job log speaks the hook's words: the variable that set the wall time. The record
    # holds no notes (only what reproduce needs and the row used).
    assert warnings[0].startswith("ezpz-amsc: note: wall_time_sec from EZPZ_AMSC_WALL_TIME_SEC; ")
    assert all(w.startswith("ezpz-amsc: note: ") for w in warnings) and len(warnings) == 2
    assert "details" not in rec and "--wall-time-sec" not in "".join(warnings)


def test_hook_appends_and_writes_the_record_into_the_provenance_folder(History, fixture_run,
                                                                        tmp_path, monkeypatch):
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.setenv("EZPZ_AMSC_APPEND", str(results))
    monkeypatch.setenv("EZPZ_AMSC_PROVENANCE", str(folder))
    wrap_finalize(History)
    History(fixture_run("fsdp_tp-1rank-launch")).finalize(tmp_path / "out")
    assert not (tmp_path / "out" / "amsc.json").exists()
    (path,) = records_in(folder)
    assert path.name == record_name(load_record(path)["row"])
    assert run_group("check", results, "--provenance", folder, "-q").exit_code == 0
    # Without a folder, an appended row has no record anywhere.
    monkeypatch.delenv("EZPZ_AMSC_PROVENANCE")
    History(fixture_run("minimal-1rank")).finalize(tmp_path / "out2")
    assert len(parse_csv(results.read_text())) == 2
    assert records_in(folder) == [path] and not (tmp_path / "out2" / "amsc.json").exists()


def test_hook_provenance_folder_without_append_is_a_note(fixture_run, monkeypatch, caplog,
                                                         tmp_path):
    caplog.set_level(logging.WARNING, logger="ezpz_amsc")
    run = fixture_run("minimal-1rank")
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.setenv("EZPZ_AMSC_PROVENANCE", str(tmp_path / "records"))
    finalize_hook(object(), run)
    assert (run / "amsc.json").is_file() and not (tmp_path / "records").exists()
    assert [r.getMessage() for r in caplog.records][-2] == (
        "ezpz-amsc: note: EZPZ_AMSC_PROVENANCE is used only with EZPZ_AMSC_APPEND; the record "
        f"is {run / 'amsc.json'}")


def test_hook_duplicate_record_is_one_warning_and_no_row(fixture_run, monkeypatch, caplog,
                                                         tmp_path):
    caplog.set_level(logging.WARNING, logger="ezpz_amsc")
    run = fixture_run("minimal-1rank")
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.setenv("EZPZ_AMSC_APPEND", str(results))
    monkeypatch.setenv("EZPZ_AMSC_PROVENANCE", str(folder))
    finalize_hook(object(), run)
    results.write_text(",".join(HEADER) + "\n")  # the row is gone, its record is not
    caplog.clear()
    finalize_hook(object(), run)
    (line,) = [r.getMessage() for r in caplog.records]
    assert line.startswith(f"ezpz-amsc: no row written for {run}: {folder}/")
    assert (f"a record of this run (2026-11-29T22:21:30Z, localhost, c, 1, 1) exists, but "
            f"{results} holds no row of it; not replacing it") in line
    assert results.read_text() == ",".join(HEADER) + "\n"


# ezpz's logging, as ezpz.log.get_logger sets it up when ezpz.history is imported
# (ezpz 0.26.1, conf/hydra/job_logging/custom.yaml): handlers on the root logger only,
# a terminal handler writing to stdout and a JSON file, root at INFO, other loggers kept.
EZPZ_LIKE_LOGGING = """
import logging.config
logging.config.dictConfig({
    "version": 1, "disable_existing_loggers": False,
    "formatters": {"simple": {"format": "[%(name)s][%(levelname)s] - %(message)s"}},
    "handlers": {
        "term": {"class": "logging.StreamHandler", "stream": "ext://sys.stdout",
                 "formatter": "simple", "level": "INFO"},
        "json_file": {"class": "logging.FileHandler", "filename": LOG_FILE, "level": "INFO"},
    },
    "root": {"handlers": ["term", "json_file"], "level": "INFO"},
})
"""


def _job(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, the hook's variables replaced by ``env``."""
    full = {k: v for k, v in os.environ.items() if k not in HOOK_ENV} | env
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full, cwd=REPO)


@pytest.mark.slow
def test_hook_notes_reach_a_job_log_without_logging_setup(fixture_run):
    run = fixture_run("minimal-1rank")
    out = _job("from ezpz_amsc.hook import finalize_hook; "
               f"finalize_hook(object(), {str(run)!r}); print('job goes on')",
               {"EZPZ_AMSC_CONFIG": "c"})
    assert (out.returncode, out.stdout) == (0, "job goes on\n")
    assert out.stderr.splitlines() == [
        f"ezpz-amsc: note: {NO_THROUGHPUT_NOTE}",
        "ezpz-amsc: note: mfu is 0.0 on every step (ezpz writes 0.0 when it does not know the "
        "device's peak FLOPS); left empty",
        f"ezpz-amsc: wrote the 'c' row for {run} to {run / 'amsc.csv'}, its provenance record "
        f"to {run / 'amsc.json'}"]
    assert (run / "amsc.json").is_file()


@pytest.mark.slow
def test_under_ezpz_logging_the_lines_go_where_ezpz_logs(fixture_run, tmp_path):
    """Root handlers as ezpz sets them: stdout and the JSON log, nothing on stderr."""
    run, log_file = fixture_run(RUN), tmp_path / "job.jsonl"
    code = (f"LOG_FILE = {str(log_file)!r}\n{EZPZ_LIKE_LOGGING}\n"
            "from ezpz_amsc.hook import finalize_hook\n"
            f"finalize_hook(object(), {str(run)!r})\n"
            f"finalize_hook(object(), {str(tmp_path / 'gone')!r})\n")
    out = _job(code, {"EZPZ_AMSC_CONFIG": "c", "EZPZ_AMSC_APPEND": str(tmp_path / "r.csv")})
    assert (out.returncode, out.stderr) == (0, "")
    expected = [
        f"[ezpz_amsc][WARNING] - {MFU_WARNING}",
        f"[ezpz_amsc][INFO] - ezpz-amsc: appended the 'c' row for {run} to {tmp_path / 'r.csv'}",
        f"[ezpz_amsc][WARNING] - ezpz-amsc: no row written: {tmp_path / 'gone'}: no such "
        "directory; pass the run directory ezpz wrote"]
    assert out.stdout.splitlines() == expected
    assert log_file.read_text().splitlines() == [line.split(" - ", 1)[1] for line in expected]


@pytest.mark.slow
def test_after_install_a_missing_config_is_one_warning_on_stderr(ezpz_pkg, tmp_path):
    ezpz_pkg("history")
    src = str(REPO / "examples" / "runs" / RUN)
    code = ("import sys, ezpz_amsc; assert ezpz_amsc.install()\n"
            "from ezpz.history import History\n"
            f"History({src!r}).finalize({str(tmp_path / 'out')!r}); print('job goes on')")
    out = _job(code, {"PYTHONPATH": os.pathsep.join(sys.path)})
    assert (out.returncode, out.stdout) == (0, "job goes on\n")
    assert out.stderr.splitlines() == [
        f"ezpz-amsc: no row written for {tmp_path / 'out'}: {NO_CONFIG.format('not set')}"]
    assert not (tmp_path / "out" / "amsc.csv").exists()


# --- install(): wrapping History.finalize for ezpz releases that call no hooks ---


@pytest.fixture
def History():
    """A fresh stand-in class per test, so wrapping one test's class leaves the others alone."""
    return type("History", (StandInHistory,), {})


def test_wrapping_keeps_signature_name_doc_and_return_value(History, fixture_run, tmp_path,
                                                             monkeypatch):
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    original = History.finalize
    wrap_finalize(History)
    assert History.finalize is not original
    assert inspect.signature(History.finalize) == inspect.signature(original)
    assert (History.finalize.__name__, History.finalize.__doc__) == (
        original.__name__, original.__doc__)
    h = History(fixture_run(RUN))
    assert h.finalize(tmp_path / "out") is h.returned
    assert (tmp_path / "out" / "amsc.csv").is_file()


@pytest.mark.parametrize("call", [
    lambda h, d: h.finalize(d),
    lambda h, d: h.finalize(outdir=d, plot=False),
    lambda h, d: h.finalize(d, "run-name", "train", save=True),
], ids=["positional", "keyword", "with-dataset_fname"])
def test_wrapped_finalize_exports_the_outdir_it_was_given(History, fixture_run, tmp_path,
                                                         monkeypatch, warnings_seen, call):
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    wrap_finalize(History)
    out = tmp_path / "out"
    call(History(fixture_run(RUN)), out)
    assert len(parse_csv((out / "amsc.csv").read_text())) == 1
    assert warnings_seen() == [MFU_WARNING]


@pytest.mark.parametrize("run_name, dataset_fname, where", [
    (None, None, "outputs/History-2026-11-29-221908/2026-11-29-221908"),
    ("fsdp", "train", "outputs/fsdp/2026-11-29-221908"),
])
def test_wrapped_finalize_finds_the_folder_it_chose(History, fixture_run, tmp_path, monkeypatch,
                                                    warnings_seen, run_name, dataset_fname,
                                                    where):
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    wrap_finalize(History)
    src = fixture_run(RUN)
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    History(src).finalize(run_name=run_name, dataset_fname=dataset_fname)
    assert [p.relative_to(work).as_posix() for p in work.rglob("amsc.csv")] == [f"{where}/amsc.csv"]
    assert warnings_seen() == [MFU_WARNING]


NO_CONFIG = ("EZPZ_AMSC_CONFIG is {} in this process, so the row has no config label; "
             "export EZPZ_AMSC_CONFIG=LABEL in the job script (and check that the launcher "
             "passes it on to the ranks), or export by hand: ezpz-amsc RUN_DIR --config LABEL")


@pytest.mark.parametrize("config, how", [(None, "not set"), ("", "empty")])
def test_installed_without_a_config_says_why_there_is_no_row(History, fixture_run, tmp_path,
                                                            monkeypatch, warnings_seen, config,
                                                            how):
    if config is not None:
        monkeypatch.setenv("EZPZ_AMSC_CONFIG", config)
    wrap_finalize(History)
    History(fixture_run(RUN)).finalize(tmp_path / "out")
    assert warnings_seen() == [f"ezpz-amsc: no row written for {tmp_path / 'out'}: "
                               + NO_CONFIG.format(how)]
    assert not (tmp_path / "out" / "amsc.csv").exists()
    # The folder finalize chose is named too; with no folder at all, the reason alone.
    monkeypatch.chdir(tmp_path)
    History(fixture_run("minimal-1rank")).finalize(None, "named")
    assert warnings_seen()[-1].startswith(
        f"ezpz-amsc: no row written for {Path('outputs/named') / StandInHistory.stamp}: ")
    finalize_hook(Bare(), None, asked=True)
    assert warnings_seen()[-1] == "ezpz-amsc: no row written: " + NO_CONFIG.format(how)


def test_installed_without_a_config_is_silent_off_rank_0(History, fixture_run, tmp_path,
                                                        monkeypatch, warnings_seen):
    monkeypatch.chdir(tmp_path)
    wrap_finalize(History)
    History(fixture_run(RUN), rank=1).finalize(tmp_path / "out")
    monkeypatch.setenv("RANK", "3")
    finalize_hook(Bare(), tmp_path / "out", asked=True)
    assert warnings_seen() == []


@pytest.mark.parametrize("append, records", [(False, False), (True, False), (True, True)])
def test_one_line_says_where_the_row_went(fixture_run, tmp_path, monkeypatch, caplog, append,
                                          records):
    caplog.set_level(logging.INFO, logger="ezpz_amsc")
    run = fixture_run(RUN)
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    if append:
        monkeypatch.setenv("EZPZ_AMSC_APPEND", str(tmp_path / "r.csv"))
    if records:
        monkeypatch.setenv("EZPZ_AMSC_PROVENANCE", str(tmp_path / "recs"))
    finalize_hook(Bare(), run)
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    if not append:
        where = f"wrote the 'c' row for {run} to {run / 'amsc.csv'}, its provenance record " \
                f"to {run / 'amsc.json'}"
    else:
        where = f"appended the 'c' row for {run} to {tmp_path / 'r.csv'}" + (
            f", its provenance record to {tmp_path / 'recs'}" if records else "")
    assert infos == [f"ezpz-amsc: {where}"]


@pytest.mark.parametrize("level, handler", [(logging.WARNING, True), (logging.INFO, False)],
                         ids=["info-filtered", "no-handler"])
def test_the_where_line_is_a_warning_where_info_would_not_show(fixture_run, monkeypatch, capsys,
                                                               level, handler):
    """INFO filtered out, or no handler at all (Python's last resort shows WARNING only)."""
    run = fixture_run(RUN)
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    seen: list[tuple[int, str]] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append((record.levelno, record.getMessage()))

    logger = logging.getLogger("ezpz_amsc")
    monkeypatch.setattr(logger, "propagate", False)  # pytest's own handlers are on the root
    monkeypatch.setattr(logger, "level", level)
    keep = Keep(logging.DEBUG)
    if handler:
        logger.addHandler(keep)
    try:
        finalize_hook(Bare(), run)
    finally:
        logger.removeHandler(keep)
    where = (f"ezpz-amsc: wrote the 'c' row for {run} to {run / 'amsc.csv'}, its provenance "
             f"record to {run / 'amsc.json'}")
    if handler:
        assert seen[-1] == (logging.WARNING, where)
    else:
        assert capsys.readouterr().err.splitlines()[-1] == where


def test_append_path_from_the_environment_expands_home(fixture_run, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.setenv("EZPZ_AMSC_APPEND", "~/results/r.csv")
    finalize_hook(Bare(), fixture_run(RUN))
    assert len(parse_csv((tmp_path / "results" / "r.csv").read_text())) == 1


def test_wrapped_finalize_reads_outdir_off_the_call(fixture_run, tmp_path, monkeypatch):
    """A finalize that leaves no _jsonl_path or _report_dir: only the call names the folder."""
    src = fixture_run(RUN)

    class Plain:
        def update(self, metrics):  # pragma: no cover - never called
            pass

        def finalize(self, outdir=None, plot=True):
            shutil.copytree(src, outdir)

    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    wrap_finalize(Plain)
    Plain().finalize(tmp_path / "out", plot=False)
    assert len(parse_csv((tmp_path / "out" / "amsc.csv").read_text())) == 1
    Plain().finalize(outdir=tmp_path / "out2")
    assert (tmp_path / "out2" / "amsc.csv").is_file()


def test_wrapping_twice_wraps_once(History, fixture_run, tmp_path, monkeypatch):
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    monkeypatch.setenv("EZPZ_AMSC_APPEND", str(tmp_path / "all.csv"))
    wrap_finalize(History)
    first = History.finalize
    wrap_finalize(History)
    assert History.finalize is first
    History(fixture_run(RUN)).finalize(tmp_path / "out")
    assert len(parse_csv((tmp_path / "all.csv").read_text())) == 1


def test_a_failing_finalize_propagates_and_exports_nothing(History, fixture_run, tmp_path,
                                                           monkeypatch):
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    wrap_finalize(History)
    h = History(fixture_run(RUN))
    with pytest.raises(TypeError):
        h.finalize(tmp_path / "out", no_such_arg=1)
    h.source = tmp_path / "missing"
    with pytest.raises(FileNotFoundError):
        h.finalize(tmp_path / "out")
    assert not (tmp_path / "out" / "amsc.csv").exists()


def test_a_failing_export_leaves_finalize_result_intact(History, fixture_run, tmp_path,
                                                        monkeypatch, warnings_seen):
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    monkeypatch.setenv("EZPZ_AMSC_STATUS", "maybe")
    wrap_finalize(History)
    h = History(fixture_run(RUN))
    assert h.finalize(tmp_path / "out") is h.returned
    assert h.calls == [tmp_path / "out"]
    assert len(warnings_seen()) == 1


_NOTHING_WRAPPED = ("ezpz-amsc: install() wrapped nothing, so no row will be written at the "
                    "end of training: ")


def _install_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "ezpz_amsc" and r.levelno >= logging.WARNING]


def test_install_without_ezpz_returns_false_and_touches_nothing(ezpz_pkg, caplog):
    """Issue 35: never silently: one warning line says why."""
    ezpz_pkg("absent")
    before = dict(sys.modules)
    assert ezpz_amsc.install() is False
    assert {k for k in sys.modules if k not in before} <= {"ezpz_amsc.hook", "ezpz_amsc._ezpz"}
    assert _install_warnings(caplog) == [_NOTHING_WRAPPED
                                         + "ezpz is not installed in this Python"]


def test_install_with_the_pypi_namesake_returns_false_without_importing_it(ezpz_pkg, caplog):
    ezpz_pkg("namesake")
    assert ezpz_amsc.install() is False
    assert "ezpz" not in sys.modules
    assert _install_warnings(caplog) == [
        _NOTHING_WRAPPED + "the installed ezpz has no history module (the unrelated PyPI "
        "package of that name?)"]


@pytest.mark.parametrize(("history_src", "why"), [
    ("raise ImportError('No module named torch')\n",
     "importing ezpz.history failed (ImportError: No module named torch)"),
    ("History = None\n", "ezpz.history has no History class"),
    ("class History:\n    def finalize(self, outdir=None):\n        pass\n",  # no update()
     "ezpz.history.History has no finalize and update methods: not ezpz's"),
], ids=["import-fails", "no-class", "not-ezpz-history"])
def test_install_refuses_an_ezpz_history_that_is_not_the_real_one(ezpz_pkg, caplog,
                                                                  history_src, why):
    ezpz_pkg({"ezpz/__init__.py": "", "ezpz/history.py": history_src})
    assert ezpz_amsc.install() is False
    assert _install_warnings(caplog) == [_NOTHING_WRAPPED + why]


def test_install_of_the_real_history_warns_nothing(ezpz_pkg, caplog):
    ezpz_pkg("history")
    assert ezpz_amsc.install() is True
    assert _install_warnings(caplog) == []


def test_install_wraps_the_real_history_once(ezpz_pkg, fixture_run, tmp_path, monkeypatch):
    ezpz_pkg("history")
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "cfg")
    assert ezpz_amsc.install() is True
    from ezpz.history import History as Real

    wrapped = Real.finalize
    assert getattr(wrapped, hook._WRAPPED_ATTR) is True
    assert ezpz_amsc.install() is True
    assert Real.finalize is wrapped
    Real(fixture_run(RUN)).finalize(tmp_path / "out")
    assert len(parse_csv((tmp_path / "out" / "amsc.csv").read_text())) == 1
    assert StandInHistory.finalize is not wrapped  # only ezpz's class was touched


# ------------------------------------------------ a failed run that logged no step


def _failed_before_a_step(tmp_path: Path, timings: dict[str, str] | None) -> Path:
    """The launch run as if it had failed in its first step: finalize() ran, its
    run_info.json written at 1795990061.5 (with ``timings``), but no step was logged."""
    run = copy_run(RUN, tmp_path)
    info = run / "run_info.json"
    if timings is not None:
        info.write_text(json.dumps({**json.loads(info.read_text()), "Timings": timings}))
    (run / "metrics-0.jsonl").write_text("")
    os.utime(info, (1795990061.5, 1795990061.5))
    return run


def _hook_row(run: Path, monkeypatch, caplog) -> tuple[dict[str, str], list[str]]:
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.setenv("EZPZ_AMSC_STATUS", "fail")
    caplog.set_level(logging.INFO, logger="ezpz_amsc")
    finalize_hook(Bare(), run)
    rows = parse_csv((run / "amsc.csv").read_text())
    return rows[0], [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


@pytest.mark.parametrize("key", ["timings/end-to-end", "main/total"])
def test_hook_times_a_run_without_steps_from_run_info(tmp_path, monkeypatch, caplog, key):
    """hf and diffusion pass finalize their Timings: the job ran 61.5 s, ending when
    run_info.json was written."""
    run = _failed_before_a_step(tmp_path, {"main/setup_torch": "3.00s", key: "61.50s"})
    row, warnings = _hook_row(run, monkeypatch, caplog)
    assert (row["timestamp"], row["wall_time_sec"], row["status"], row["steps"]) == (
        "2026-11-29T22:06:40Z", "61.500", "fail", "")
    assert warnings == [
        "ezpz-amsc: note: no step was logged: timestamp 2026-11-29T22:06:40Z and wall_time_sec "
        "61.500 are the job's, from run_info.json's Timings, ending when it was written"]
    record = json.loads((run / "amsc.json").read_text())
    assert (record["options"]["timestamp"], record["options"]["wall_time_sec"]) == (
        "2026-11-29T22:06:40Z", 61.5)  # the row can be made again by hand
    assert run_group("reproduce", run / "amsc.json").exit_code == 0


def test_hook_times_a_run_without_steps_from_its_process(tmp_path, monkeypatch, caplog):
    import time

    from ezpz_amsc.results.schema import format_timestamp

    run = _failed_before_a_step(tmp_path, {"main/setup_torch": "oops"})  # no duration
    started = finalize.process_start()
    assert started is not None and time.time() - 86400 < started <= time.time()
    row, warnings = _hook_row(run, monkeypatch, caplog)
    assert row["timestamp"] == format_timestamp(started)
    assert abs(float(row["wall_time_sec"]) - (time.time() - started)) < 60
    assert warnings[0].endswith("are the job's, from this process's start time until now")


def test_process_start_is_when_the_process_started():
    import time

    code = ("import time; from ezpz_amsc.flow.finalize import process_start; "
            "print(process_start(), time.time())")
    assert finalize.process_start() <= time.time()  # this one started earlier, when not known
    before = time.time()
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # this checkout's code (mutation testing's)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env).stdout.split()
    started, now = float(out[0]), float(out[1])
    # /proc/stat's boot time is whole seconds: the start can read up to 1 s early (and the
    # clock can step a little); a wrong field or sign is hours off
    assert before - 2.0 <= started <= now


def test_hook_without_a_job_time_still_asks_for_the_flags(tmp_path, monkeypatch, caplog):
    run = _failed_before_a_step(tmp_path, None)
    monkeypatch.setattr(finalize, "process_start", lambda: None)  # not Linux: no /proc
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.setenv("EZPZ_AMSC_STATUS", "fail")
    caplog.set_level(logging.INFO, logger="ezpz_amsc")
    finalize_hook(Bare(), run)
    assert not (run / "amsc.csv").exists()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        f"ezpz-amsc: no row written for {run}: cannot tell timestamp, wall_time_sec (no step "
        "was logged); pass --timestamp YYYY-MM-DDTHH:MM:SSZ EZPZ_AMSC_WALL_TIME_SEC=SECONDS "
        "(when exporting by hand: ezpz-amsc RUN_DIR --config LABEL ...)"]


def test_hook_wall_time_from_the_environment_wins(tmp_path, monkeypatch, caplog):
    run = _failed_before_a_step(tmp_path, {"timings/end-to-end": "61.50s"})
    monkeypatch.setenv("EZPZ_AMSC_WALL_TIME_SEC", "900")
    row, _ = _hook_row(run, monkeypatch, caplog)
    assert (row["timestamp"], row["wall_time_sec"]) == ("2026-11-29T22:06:40Z", "900.000")


# ---------------------------------------------------------------------------- the hash budget


def test_a_run_over_the_hash_budget_gets_its_row_and_an_unhashed_record(fixture_run, monkeypatch,
                                                                         caplog):
    caplog.set_level(logging.WARNING, logger="ezpz_amsc")
    run = fixture_run("fsdp_tp-2rank")
    expected = _cli_row(run)
    metrics = run / "metrics-0.jsonl"
    size = metrics.stat().st_size
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "fsdp_tp/tp1")
    monkeypatch.setenv("EZPZ_AMSC_HASH_BUDGET", "1K")
    finalize_hook(Bare(), run)
    assert parse_csv((run / "amsc.csv").read_text()) == [expected]
    rec = load_record(run / "amsc.json")
    assert rec["files"] == [
        {"path": "metrics-0.jsonl", "role": "metrics", "size": size, "sha256": None,
         "not_hashed": "over the hash budget of 1024 bytes"},
        {"path": "run_info.json", "role": "run_info",
         "size": (run / "run_info.json").stat().st_size, "sha256": sha256(run / "run_info.json")}]
    unhashed = (f"ezpz-amsc: note: metrics-0.jsonl ({size} bytes) is not hashed in the provenance "
                "record: over EZPZ_AMSC_HASH_BUDGET=1024 bytes, so reproduce cannot compare it; "
                "raise EZPZ_AMSC_HASH_BUDGET to hash it")
    assert unhashed in [r.getMessage() for r in caplog.records]
    # reproduce says what it could not compare, and still compares the row
    result = run_group("reproduce", run / "amsc.json")
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.splitlines() == [
        f"{run / 'amsc.json'}: identical row (14 cells); 1 source file unchanged, 1 not compared",
        f"  metrics-0.jsonl: not compared: no sha256 in the record (over the hash budget of "
        f"1024 bytes), same size ({size} bytes)"]
    data = json.loads(run_group("reproduce", run / "amsc.json", "--format", "json").stdout)
    assert (data["files_unchanged"], data["files_changed"]) == (1, [])
    assert data["files_not_compared"] == [result.stdout.splitlines()[1].strip()]
    # a record from elsewhere that says no more than "no sha256"
    rec = json.loads((run / "amsc.json").read_text())
    del rec["files"][0]["not_hashed"]
    (run / "other.json").write_text(json.dumps(rec))
    assert run_group("reproduce", run / "other.json").stdout.splitlines()[1] == (
        f"  metrics-0.jsonl: not compared: no sha256 in the record (not hashed), same size "
        f"({size} bytes)")
    # a change of size is seen without a sha256
    with metrics.open("a") as f:
        f.write("\n")
    result = run_group("reproduce", run / "amsc.json")
    assert result.stdout.splitlines() == [
        f"{run / 'amsc.json'}: identical row (14 cells); but source files changed:",
        f"  metrics-0.jsonl: changed: {size} -> {size + 1} bytes (no sha256 to compare: over "
        "the hash budget of 1024 bytes)"]
    assert result.exit_code == 0


def test_check_provenance_takes_records_with_unhashed_files(fixture_run, tmp_path, monkeypatch):
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.setenv("EZPZ_AMSC_APPEND", str(results))
    monkeypatch.setenv("EZPZ_AMSC_PROVENANCE", str(folder))
    monkeypatch.setenv("EZPZ_AMSC_HASH_BUDGET", "0")
    finalize_hook(Bare(), fixture_run("minimal-1rank"))
    (path,) = records_in(folder)
    assert [f["sha256"] for f in load_record(path)["files"] if f["role"] == "metrics"] == [None]
    result = run_group("check", results, "--provenance", folder)
    assert (result.exit_code, result.stderr) == (0, "")
    assert result.stdout.endswith(f"; 1 record in {folder}, one per row\n")


def test_within_the_budget_every_file_is_hashed(fixture_run, monkeypatch):
    run = fixture_run("minimal-1rank")
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.setenv("EZPZ_AMSC_HASH_BUDGET", str((run / "metrics.jsonl").stat().st_size))
    finalize_hook(Bare(), run)
    files = load_record(run / "amsc.json")["files"]
    assert files[0]["sha256"] == sha256(run / "metrics.jsonl")
    assert not [f for f in files if "not_hashed" in f]
