"""The export subcommand: option values refused on the command line, batches of runs,
what ``--append`` says, ``--no-header``, and every note the export prints, each
silenced by ``--quiet``."""

from __future__ import annotations

import errno
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import (
    EXPECTED,
    HUGE,
    MFU_NOTE,
    NO_THROUGHPUT_NOTE,
    RUNS,
    copy_run,
    error_line,
    expected_row,
    good_run,
    launch,
    notes_of,
    one_row,
    outcome,
    parse_csv,
    run_cli,
    run_group,
    simple_steps,
    step,
    write_jsonl,
    write_run,
    write_run_info,
)

from ezpz_amsc.flow.export import export_many, export_run
from ezpz_amsc.options import ExportOptions
from ezpz_amsc.results.schema import HEADER

A = RUNS / "fsdp_tp-2rank"
B = RUNS / "fsdp_tp-1rank-launch"
C = RUNS / "minimal-1rank"


# -------------------------------------------------------------- option values (exit 2)


@pytest.mark.parametrize("args,fragment", [
    ([A], "missing option '--config'. Pass the benchmark label"),
    ([A, "--config", "   "], "invalid value for '--config': must not be empty"),
    ([A, "--config", "c", "--reducer", "p99"],
     "invalid value for '--reducer': 'p99' is not one of 'median', 'mean',"),
    ([A, "--config", "c", "--warmup", "x"], "'x' is not a valid integer"),
    ([A, "--config", "c", "--status", "ok"], "'ok' is not one of 'pass', 'fail'"),
    ([A, "--config", "c", "--gpus", "-3"],
     "invalid value for '--gpus': must be 1 or more, got -3"),
    ([A, "--config", "c", "--wall-time-sec", "-5"],
     "invalid value for '--wall-time-sec': must be a positive"),
    ([A, "--config", "c", "--wall-time-sec", "nan"],
     "invalid value for '--wall-time-sec': must be a positive"),
    ([A, "--config", "c", "--timestamp", "yesterday"],
     "invalid value for '--timestamp': must look like"),
    ([A, "--config", "a\nb"], "--config must be a single line"),
    ([A, "--config", "c", "--bogus"], "no such option"),
    ([RUNS / "does-not-exist", "--config", "c"], "no such directory"),
    ([A / "run_info.json", "--config", "c"], "not a directory"),
])
def test_usage_and_path_errors(args, fragment):
    line = error_line(run_cli(*args))
    assert fragment in line


def _invalid(flag: str, value: str, reason: str) -> tuple[list[str], str]:
    """A case of the table below: the flag and value, and the error line's text."""
    return [flag, value], f"invalid value for '{flag}': {reason}"


@pytest.mark.parametrize("args, line", [
    _invalid("--reducer", "avg", "'avg' is not one of 'median', 'mean', 'max', 'min', 'last'."),
    _invalid("--nodes", "0", "must be 1 or more, got 0"),
    _invalid("--gpus", "0", "must be 1 or more, got 0"),
    _invalid("--nodes", "1000001", "1000001 is not a plausible count (more than 1,000,000)"),
    _invalid("--gpus", "1000001", "1000001 is not a plausible count (more than 1,000,000)"),
    _invalid("--warmup", "-1", "must be 0 or more, got -1"),
    _invalid("--wall-time-sec", "-1", "must be a positive number of seconds, got -1.0"),
    _invalid("--wall-time-sec", "0", "must be a positive number of seconds, got 0.0"),
    _invalid("--wall-time-sec", "inf", "must be a positive number of seconds, got inf"),
    _invalid("--timestamp", "2026-08-11 17:11",
             "must look like 2026-08-11T17:11:17Z, got '2026-08-11 17:11'"),
    _invalid("--lock-timeout", "-1", "must be 0 to 86,400 seconds (a day), got -1.0"),
    _invalid("--lock-timeout", "nan", "must be 0 to 86,400 seconds (a day), got nan"),
    _invalid("--lock-timeout", "inf", "must be 0 to 86,400 seconds (a day), got inf"),
    _invalid("--lock-timeout", "1e300", "must be 0 to 86,400 seconds (a day), got 1e+300"),
    _invalid("--config", "",
             "must not be empty; pass the benchmark label, e.g. --config agpt-2b/bs1/seq2048/tp1"),
    _invalid("--append", "", "empty path (is the variable that should hold it unset?)"),
    _invalid("--append", " ", "empty path (is the variable that should hold it unset?)"),
    _invalid("--append", "~no-such-user-x/r.csv", "cannot expand ~no-such-user-x: no such user"),
])
def test_bad_command_line_values_exit_2(tmp_path, args, line):
    full = [A, *(["--config", "c"] if "--config" not in args else []), *args]
    for result in (run_cli(*full), run_group(*full)):
        assert error_line(result) == f"error: {line}"
        assert result.exit_code == 2
    assert not list(tmp_path.iterdir())


def test_append_after_equals_expands_home(tmp_path, monkeypatch):
    """The shell leaves ~ alone after '=': the tool expands it, never makes a folder '~'."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    result = run_group(A, "--config", "c", "--append=~/results/r.csv")
    assert result.exit_code == 0
    written = tmp_path / "home" / "results" / "r.csv"
    assert notes_of(result)[-1] == f"appended 1 row to {written}"
    assert len(parse_csv(written.read_text())) == 1
    assert not (tmp_path / "~").exists()


@pytest.mark.parametrize("flag,value", [("--gpus", "-1")])
def test_counts_below_one_from_flags_are_refused(tmp_path, flag, value):
    run = good_run(tmp_path / "run")
    result = run_cli(run, "--config", "c", flag, value)
    assert f"invalid value for '{flag}': must be 1 or more, got {value}" in error_line(result)
    assert result.exit_code == 2


@pytest.mark.parametrize("flag", ["--gpus", "--nodes"])
@pytest.mark.parametrize("value,shown", [(HUGE, "100000000000... (401 digits)")])
def test_absurd_count_from_flags_is_refused(tmp_path, flag, value, shown):
    run = good_run(tmp_path / "run")
    result = run_cli(run, "--config", "c", flag, value)
    assert error_line(result) == (f"error: invalid value for '{flag}': {shown} is not a "
                                  "plausible count (more than 1,000,000)")
    assert result.exit_code == 2


@pytest.mark.parametrize("flag", ["--config", "--system", "--error"])
@pytest.mark.parametrize("value", ["l1\nl2", "\udcff", "a\tb", "x\u2028"])
def test_unprintable_flag_text_is_refused(tmp_path, flag, value):
    run = good_run(tmp_path / "run")
    args = ["--config", "c", flag, value] if flag != "--config" else [flag, value]
    line = error_line(run_cli(run, *args))
    assert f"{flag} must be a single line of printable text" in line


@pytest.mark.parametrize("text", ["2026-8-1T1:1:1Z", "1000-1-1T0:0:0Z", "2026-08-11T23:59:61Z",
                                  "0001-01-01T00:00:00Z", "2026-08-11T17:11:17"])
def test_timestamp_flag_must_be_exactly_the_row_format(tmp_path, text):
    """Regression (fuzzer): strptime took non-padded fields and leap seconds verbatim."""
    run = good_run(tmp_path / "run")
    result = run_cli(run, "--config", "c", "--timestamp", text)
    line = error_line(result)
    assert (f"invalid value for '--timestamp': must look like 2026-08-11T17:11:17Z, "
            f"got {text!r}") in line
    assert result.exit_code == 2
    ok = one_row(run_cli(run, "--config", "c", "--timestamp", "2019-12-31T23:59:59Z"))
    assert ok["timestamp"] == "2019-12-31T23:59:59Z"


@pytest.mark.parametrize("text", ["2014-12-31T23:59:59Z", "2100-01-01T00:00:00Z"])
def test_timestamp_flag_outside_2015_to_now_is_refused(tmp_path, text):
    r = run_cli(launch(tmp_path), "--config", "c", "--timestamp", text)
    assert error_line(r) == (f"error: invalid value for '--timestamp': {text} is before 2015 "
                             "or later than now")
    assert r.exit_code == 2


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--config", "--system", "--error"])
@pytest.mark.parametrize("value", ["=1+1", "+SUM(A1:A9)", "@cmd", "-x", "-=1", "-0.5 nodes", "-",
                                   "-2+3+cmd|' /C calc'!A0", "-1+HYPERLINK(\"x\")", "+1e5x"])
def test_formula_like_flag_is_refused(tmp_path, flag, value):
    args = ["--config", "c", flag, value] if flag != "--config" else [flag, value]
    r = run_cli(launch(tmp_path), *args)
    assert error_line(r) == (f"error: invalid value for '{flag}': {value!r} would run as a formula "
                             "when the CSV is opened in a spreadsheet (it starts with =, +, -, @, "
                             "a tab or a carriage return and is not a number)")
    assert r.exit_code == 2


@pytest.mark.parametrize("value", ["-5", "-0.5", "+1.5e3", "-.5", "a=b", "x-y", "a -1"])
def test_negative_numbers_and_inner_signs_are_fine(tmp_path, value):
    row = one_row(run_cli(launch(tmp_path), "--config", value, "--error", value))
    assert (row["config"], row["error"]) == (value, value)


# ----------------------------------------------------------------------------- batches


def test_batch_rows_in_order_one_header(tmp_path):
    r = run_cli(C, A, B, "--config", "c")
    assert r.exit_code == 0, r.stderr
    rows = parse_csv(r.stdout)
    assert [x["steps"] for x in rows] == ["34", "30", "30"]
    assert [x["gpus"] for x in rows] == ["1", "2", "1"]
    assert r.stdout.count("timestamp,system") == 1


def test_batch_append_single_write(tmp_path):
    out = tmp_path / "runs.csv"
    assert run_cli(A, B, "--config", "c", "--append", out).exit_code == 0
    assert len(parse_csv(out.read_text())) == 2


def test_batch_with_a_failure_writes_nothing(tmp_path):
    out = tmp_path / "runs.csv"
    bad1, bad2 = tmp_path / "missing1", tmp_path / "missing2"
    r = run_cli(A, bad1, B, bad2, "--config", "c", "--append", out)
    assert r.exit_code == 1
    errs = r.stderr.splitlines()
    assert errs[0].startswith(f"error: {bad1}: ") and errs[1].startswith(f"error: {bad2}: ")
    assert "2 runs failed; nothing written" in errs[2]
    assert not out.exists()
    assert "Traceback" not in r.stderr


# --keep-going: the rows that worked go out, the command still fails, and its last line says
# how many rows went where. {a} and {c}: copies of fsdp_tp-2rank and minimal-1rank; {bad}: a
# copy of minimal-1rank whose metrics file is empty; {gone}: no such folder; {out}: the
# results file, already holding the rows of the runs in `held`.
_BROKEN = ("error: {bad}/metrics.jsonl: no step records (lines with numeric 'metrics'); if the "
           "run failed, pass --status fail")
_GONE = "error: {gone}: no such directory; pass the run directory ezpz wrote"
_NOTES = [f"note: {MFU_NOTE} (runs {{a}}, {{c}})", f"note: {{c}}: {NO_THROUGHPUT_NOTE}"]
_NAMES = {"a": "fsdp_tp-2rank", "c": "minimal-1rank"}


@pytest.mark.parametrize("runs, args, held, stderr, rows", [
    pytest.param(["bad", "gone"], [], [], [_BROKEN, _GONE, "error: 2 runs failed; no row written"],
                 [], id="all-fail-stdout"),
    pytest.param(["bad", "gone"], ["--append", "{out}"], [],
                 [_BROKEN, _GONE, "error: 2 runs failed; no row written"], None,
                 id="all-fail-append"),
    pytest.param(["a", "bad", "c"], [], [],
                 [*_NOTES, _BROKEN, "error: 1 run failed; 2 rows written to stdout"], ["a", "c"],
                 id="some-fail-stdout"),
    pytest.param(["gone", "a", "bad", "c"], ["--format", "json"], [],
                 [*_NOTES, _GONE, _BROKEN, "error: 2 runs failed; 2 rows written to stdout"],
                 ["a", "c"], id="some-fail-json"),
    pytest.param(["a", "bad", "c"], ["--append", "{out}"], [],
                 [*_NOTES, "note: appended 2 rows to {out}", _BROKEN,
                  "error: 1 run failed; 2 rows appended to {out}"], ["a", "c"],
                 id="some-fail-append"),
    pytest.param(["gone", "c"], ["--append", "{out}"], ["a"],
                 [f"note: {{c}}: {NO_THROUGHPUT_NOTE}", f"note: {{c}}: {MFU_NOTE}",
                  "note: appended 1 row to {out}", _GONE,
                  "error: 1 run failed; 1 row appended to {out}"], ["a", "c"],
                 id="some-fail-append-to-a-file-with-rows"),
    pytest.param(["a", "bad", "c"], ["--append", "{out}", "--skip-existing"], ["a", "c"],
                 [*_NOTES,
                  "note: the run (2026-11-29T22:18:43Z, localhost, test/cfg, 1, 2) is already at "
                  "line 2 of {out}; skipped it (--skip-existing)",
                  "note: the run (2026-11-29T22:21:30Z, localhost, test/cfg, 1, 1) is already at "
                  "line 3 of {out}; skipped it (--skip-existing)",
                  _BROKEN, "error: 1 run failed; no row written"], ["a", "c"],
                 id="some-fail-the-rest-skipped"),
])
def test_keep_going_says_how_many_rows_went_where(fixture_run, tmp_path, runs, args, held,
                                                  stderr, rows):
    paths = {key: fixture_run(name) for key, name in _NAMES.items()}
    bad = copy_run("minimal-1rank", tmp_path / "broken")
    (bad / "metrics.jsonl").write_text("")
    paths.update(bad=bad, gone=tmp_path / "gone", out=tmp_path / "results.csv")
    if held:
        paths["out"].write_text(",".join(HEADER) + "\n"
                                + "".join(EXPECTED[_NAMES[k]] + "\n" for k in held))
    result = run_group(*[paths[k] for k in runs], "--config", "test/cfg", "--keep-going",
                       *[arg.format(**paths) for arg in args])
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [line.format(**paths) for line in stderr]
    want = [expected_row(_NAMES[k]) for k in rows or []]
    if "--append" in args:
        assert result.stdout == ""
        if rows is None:
            assert not paths["out"].exists()
        else:
            assert parse_csv(paths["out"].read_text()) == want
    elif not want:
        assert result.stdout == ""  # not even a header
    elif "json" in args:
        assert [json.loads(line)["row"] for line in result.stdout.splitlines()] == want
    else:
        assert parse_csv(result.stdout) == want


def test_batch_same_dir_twice_is_a_duplicate(tmp_path):
    out = tmp_path / "runs.csv"
    line = error_line(run_cli(A, A, "--config", "c", "--append", out))
    assert "rows 1 and 2 of this export are the same run" in line


def test_batch_errors_name_the_path_once(tmp_path):
    missing = tmp_path / "gone"
    empty = tmp_path / "empty"
    empty.mkdir()
    for spelled in (str(missing), f"{missing}/"):
        result = run_group(spelled, empty, A, "--config", "c")
        assert (result.exit_code, result.stdout) == (1, "")
        assert result.stderr.splitlines()[:2] == [
            f"error: {missing}: no such directory; pass the run directory ezpz wrote",
            f"error: {empty}: no metrics found (looked for metrics-<rank>.jsonl, metrics.jsonl "
            "or a <run_id>.jsonl with 'metrics' records, each also as .jsonl.gz); if the run "
            "failed, pass --status fail",
        ]


def test_batch_error_without_the_path_gets_it(tmp_path):
    run = tmp_path / "r"
    shutil.copytree(RUNS / "minimal-1rank", run)
    (run / "run_info.json").unlink()
    for report in run.rglob("report-*.md"):
        report.unlink()
    result = run_group(run, A, "--config", "c", "--keep-going")
    assert result.exit_code == 1
    assert [r["config"] for r in parse_csv(result.stdout)] == ["c"]
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("error: ")]
    assert errors[0].startswith(f"error: {run}: cannot tell system, gpus, nodes of this run")
    assert errors[1] == "error: 1 run failed; 1 row written to stdout"


@pytest.mark.parametrize("runs, said", [([A], "appended 1 row to"),
                                        ([A, RUNS / "minimal-1rank"], "appended 2 rows to")])
def test_append_says_what_it_did(tmp_path, runs, said):
    out = tmp_path / "sub" / "results.csv"
    result = run_group(*runs, "--config", "c", "--append", out)
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.splitlines()[-1] == f"note: {said} {out}"
    assert len(parse_csv(out.read_text())) == len(runs)
    quiet = run_group(*runs, "--config", "d", "--append", out, "-q")
    assert outcome(quiet) == (0, "", "")
    assert len(parse_csv(out.read_text())) == 2 * len(runs)


def test_json_with_several_runs_is_json_lines():
    result = run_group(A, RUNS / "minimal-1rank", "--config", "c", "--format", "json")
    lines = result.stdout.splitlines()
    assert len(lines) == 2
    assert [json.loads(ln)["row"]["steps"] for ln in lines] == [
        one_row(run_cli(r, "--config", "c"))["steps"] for r in (A, RUNS / "minimal-1rank")]


def test_batch_says_a_shared_note_once_naming_the_runs(tmp_path):
    a, b = RUNS / "minimal-1rank", RUNS / "fsdp_tp-2rank"
    # --warmup 32 leaves minimal-1rank 2 steps, the 30-step fsdp_tp runs none: their rate
    # cells are left empty (a failed run is recorded), with one note for both
    flags = ("--config", "c", "--warmup", "32", "--status", "fail")
    r = run_cli(a, b, *flags)
    assert len(parse_csv(r.stdout)) == 2
    empty = ("throughput_tokens_per_sec, throughput_tokens_per_sec_per_gpu and tflops left "
             "empty: 0 steps after --warmup 32 (30 steps logged) is not a measurement of the "
             "run's rate")
    assert notes_of(r) == [f"{MFU_NOTE} (all 2 runs)", f"{b}: {empty}"]
    c = RUNS / "fsdp_tp-1rank-launch"
    r = run_cli(a, b, c, *flags)
    assert notes_of(r) == [f"{MFU_NOTE} (all 3 runs)", f"{empty} (runs {b}, {c})"]


def test_no_header():
    r = run_cli(RUNS / "fsdp_tp-2rank", "--config", "c", "--no-header")
    assert r.exit_code == 0
    assert len(r.stdout.splitlines()) == 1
    assert r.stdout.startswith("2026-11-29T22:18:43Z,")


# ------------------------------------------------------------------ notes, and --quiet


def test_error_text_on_a_passing_run_gets_a_note():
    r = run_cli(RUNS / "minimal-1rank", "--config", "c", "--error", "OOM at step 9")
    assert one_row(r)["error"] == "OOM at step 9"  # kept as given: only the note is added
    assert notes_of(r) == [NO_THROUGHPUT_NOTE, MFU_NOTE, "--error 'OOM at step 9' is set but "
                           "the status is pass; pass --status fail if the run failed"]
    failed = run_cli(RUNS / "minimal-1rank", "--config", "c", "--error", "OOM", "--status",
                     "fail")
    assert notes_of(failed) == [MFU_NOTE]


@pytest.mark.parametrize(("values", "note"), [
    ([1.0, float("nan"), 3.0], "dropped 1 non-finite value (tps 1)"),
    ([float("nan"), float("inf"), 3.0, 4.0], "dropped 2 non-finite values (tps 2)"),
])
def test_counted_notes_agree_with_their_count(tmp_path, values, note):
    recs = [step(i, dt=1.0, tps=v) for i, v in enumerate(values, 1)]
    write_jsonl(tmp_path / "run" / "metrics-0.jsonl", recs)
    write_run_info(tmp_path / "run", world_size="1")
    r = run_cli(tmp_path / "run", "--config", "c", "--warmup", "0")
    assert note in notes_of(r)
    assert "derived as global / 1 gpu (no per-GPU" in r.stderr  # not "1 gpus"


Build = Callable[[Path], tuple[Path, list[str]]]


def rank0_silent(tmp: Path) -> tuple[Path, list[str]]:
    run = write_run(tmp / "run", [], metrics_name="metrics-0.jsonl")
    write_jsonl(run / "metrics-1.jsonl", [step(i, rank=1, dt=0.5, tps=9.0) for i in (1, 2, 3)])
    return run, []


def nonfinite(tmp: Path) -> tuple[Path, list[str]]:
    recs = simple_steps(4)
    recs[2]["metrics"]["train/tps"] = float("nan")
    return write_run(tmp / "run", recs), []


def unparsable(tmp: Path) -> tuple[Path, list[str]]:
    recs: list = simple_steps(4)
    recs.insert(2, '{"timestamp": 1, "rank": 0, "metrics": {"train/iter": 2')
    return write_run(tmp / "run", recs), []


def truncated(tmp: Path) -> tuple[Path, list[str]]:
    run = write_run(tmp / "run", simple_steps(4))
    with open(run / "metrics-0.jsonl", "a") as f:
        f.write('{"timestamp": 1795990005.0, "rank": 0, "metrics": {"train/it')
    return run, []


def no_finalize(tmp: Path) -> tuple[Path, list[str]]:
    write_jsonl(tmp / "run" / "metrics-0.jsonl", simple_steps(4))
    return tmp / "run", ["--system", "Aurora", "--nodes", "1", "--gpus", "1"]


def wall_flag(tmp: Path) -> tuple[Path, list[str]]:
    return write_run(tmp / "run", simple_steps(4)), ["--wall-time-sec", "99"]


def per_gpu_only(tmp: Path) -> tuple[Path, list[str]]:
    recs = [step(i, dt=0.5, tps_per_gpu=500.0) for i in (1, 2, 3)]
    return write_run(tmp / "run", recs, world_size="2", WORLD_SIZE_IN_USE="2"), []


def global_only(tmp: Path) -> tuple[Path, list[str]]:
    return write_run(tmp / "run", simple_steps(3), world_size="2", WORLD_SIZE_IN_USE="2"), []


def mfu_zero(tmp: Path) -> tuple[Path, list[str]]:
    return write_run(tmp / "run", simple_steps(3, mfu=0.0)), []


def one_step(tmp: Path) -> tuple[Path, list[str]]:
    return write_run(tmp / "run", simple_steps(1)), ["--status", "fail"]


def out_of_order(tmp: Path) -> tuple[Path, list[str]]:
    recs = simple_steps(4)
    recs[1], recs[2] = recs[2], recs[1]
    return write_run(tmp / "run", recs), []


def no_step_key(tmp: Path) -> tuple[Path, list[str]]:
    recs = simple_steps(4)
    del recs[3]["metrics"]["train/iter"]
    return write_run(tmp / "run", recs), []


def restarted(tmp: Path) -> tuple[Path, list[str]]:
    again = [{**r, "timestamp": r["timestamp"] + 600} for r in simple_steps(3)]
    return write_run(tmp / "run", simple_steps(3) + again), ["--attempt", "last"]


def run_info_bad_json(tmp: Path) -> tuple[Path, list[str]]:
    run = write_run(tmp / "run", simple_steps(3))
    (run / "run_info.json").write_text("{not json")
    return run, ["--system", "Aurora", "--nodes", "1", "--gpus", "1"]


def run_info_not_utf8(tmp: Path) -> tuple[Path, list[str]]:
    run = write_run(tmp / "run", simple_steps(3))
    (run / "run_info.json").write_bytes(b'{"Distributed": {"MACHINE": "\xff"}}')
    return run, ["--system", "Aurora", "--nodes", "1", "--gpus", "1"]


def run_info_no_section(tmp: Path) -> tuple[Path, list[str]]:
    run = write_run(tmp / "run", simple_steps(3))
    (run / "run_info.json").write_text(json.dumps({"Paths": {}}))
    return run, ["--system", "Aurora", "--nodes", "1", "--gpus", "1"]


def odd_count(tmp: Path) -> tuple[Path, list[str]]:
    return write_run(tmp / "run", simple_steps(3), world_size="two"), []


def gpus_not_multiple(tmp: Path) -> tuple[Path, list[str]]:
    return (write_run(tmp / "run", simple_steps(3), GPUS_PER_NODE="4", NUM_NODES="2"),
            ["--gpus", "6"])


def logged_every_10(tmp: Path) -> tuple[Path, list[str]]:
    recs = [step(i, dt=0.5, tps=1000.0, loss=1.0) for i in range(10, 301, 10)]
    return write_run(tmp / "run", recs), []


def logged_every_10_flag(tmp: Path) -> tuple[Path, list[str]]:
    run, _ = logged_every_10(tmp)
    return run, ["--wall-time-sec", "1234"]


def logged_with_holes(tmp: Path) -> tuple[Path, list[str]]:
    recs = [step(i, dt=0.5, tps=1000.0) for i in (1, 2, 3, 4, 8, 9, 10)]
    return write_run(tmp / "run", recs), []


NOTE_CASES: list[tuple[str, Build, list[str]]] = [
    ("rank0-silent", rank0_silent, ["rank 0 logged no step; used rank 1"]),
    ("non-finite", nonfinite, ["dropped 1 non-finite value (tps 1)"]),
    ("unparsable", unparsable, ["skipped 1 unparsable line"]),
    ("truncated", truncated,
     ["last line of metrics-0.jsonl is truncated; ignored it",
      "run looks unfinished (metrics-0.jsonl ends in a truncated line); status stays 'pass'; "
      "pass --status fail if the job failed"]),
    ("no-finalize", no_finalize,
     ["run looks unfinished (no run_info.json and no report: History.finalize() did not run)"]),
    ("wall-flag", wall_flag, ["wall_time_sec from --wall-time-sec; summed step time is 2.000"]),
    ("per-gpu-only", per_gpu_only,
     ["throughput_tokens_per_sec derived as per-GPU x 2 gpus (no global throughput logged)"]),
    ("global-only", global_only,
     ["throughput_tokens_per_sec_per_gpu derived as global / 2 gpus"]),
    ("mfu-zero", mfu_zero, ["mfu is 0.0 on every step", "left empty"]),
    ("one-step", one_step, ["throughput_tokens_per_sec left empty: 0 steps after --warmup 1 (1 "
                            "step logged) is not a measurement of the run's rate"]),
    ("out-of-order", out_of_order, ["records were out of order; sorted 4 steps"]),
    ("no-step-key", no_step_key,
     ["left out 1 record without train/iter (eval batches, summaries): not training steps"]),
    ("restarted", restarted,
     ["exported attempt #2 steps 1..3 from 2026-11-29T22:16:41Z (3 records) of 2; "
      "left out 3 records of the others"]),
    ("run-info-bad-json", run_info_bad_json, ["skipped run_info.json: not valid JSON"]),
    ("run-info-not-utf8", run_info_not_utf8, ["skipped run_info.json: not UTF-8"]),
    ("run-info-no-section", run_info_no_section, ["run_info.json has no 'Distributed' section"]),
    ("odd-count", odd_count, ["ignored world_size='two' from run_info.json: not a usable count"]),
    ("gpus-not-multiple", gpus_not_multiple, ["--gpus 6 is not a multiple of GPUS_PER_NODE 4"]),
    ("logged-every-10", logged_every_10,
     ["wall_time_sec is estimated for all the steps: the 30 logged steps' 15.000 s plus 270 "
      "steps not logged, each gap at the mean of the logged step times that bound it (9 "
      "before the first logged step at 0.5 s), ~300 steps (logged every 10 steps, steps "
      "10..300)"]),
    ("logged-every-10-flag", logged_every_10_flag,
     ["wall_time_sec from --wall-time-sec; summed step time is 15.000 and covers 30 of ~300"]),
    ("logged-with-holes", logged_with_holes,
     ["wall_time_sec is estimated for all the steps: the 7 logged steps' 3.500 s plus 3 steps "
      "not logged, each gap at the mean of the logged step times that bound it, ~10 steps "
      "(logged with gaps, steps 1..10)"]),
]


@pytest.mark.parametrize(("build", "expected"), [c[1:] for c in NOTE_CASES],
                         ids=[c[0] for c in NOTE_CASES])
def test_note_is_printed(tmp_path, build, expected):
    run, args = build(tmp_path)
    result = run_cli(run, "--config", "c", *args)
    one_row(result)
    notes = "\n".join(notes_of(result))
    for fragment in expected:
        assert fragment in notes, result.stderr


@pytest.mark.parametrize(("build", "expected"), [c[1:] for c in NOTE_CASES],
                         ids=[c[0] for c in NOTE_CASES])
def test_quiet_silences_note(tmp_path, build, expected):
    run, args = build(tmp_path)
    loud = run_cli(run, "--config", "c", *args)
    quiet = run_cli(run, "--config", "c", *args, "-q")
    assert notes_of(loud)
    assert quiet.stderr == ""
    assert one_row(quiet) == one_row(loud)


def newest_first(tmp: Path) -> tuple[Path, list[str]]:
    # Written newest first: sorted, the warmup step is step 1 and the final loss step 4's.
    recs = [step(i, dt=0.5, tps=1000.0 + i, loss=5.0 - i) for i in (4, 3, 2, 1)]
    return write_run(tmp / "run", recs), []


def one_step_number(tmp: Path) -> tuple[Path, list[str]]:
    recs = [step(7, ts=1795990000.0 + i, dt=0.5, tps=1000.0 + i) for i in range(3)]
    return write_run(tmp / "run", recs), ["--attempt", "last"]


def nodes_over_gpus(tmp: Path) -> tuple[Path, list[str]]:
    return write_run(tmp / "run", simple_steps(3)), ["--nodes", "3", "--gpus", "2"]


def logged_every_2nd(tmp: Path) -> tuple[Path, list[str]]:
    return write_run(tmp / "run", [step(i, dt=0.5, tps=1000.0) for i in (2, 4, 6, 8)]), []


GLOBAL_1 = ("throughput_tokens_per_sec_per_gpu derived as global / 1 gpu "
            "(no per-GPU throughput logged)")
T0 = "2026-11-29T22:06:41Z"  # step 1 of step()'s clock
# The cells each path derives and every note it prints, in order (nothing spurious):
# name: (timestamp, system, nodes, gpus, wall_time_sec, tps, tps/gpu, mfu, final_loss, steps)
VALUE_CASES: dict[str, tuple[Build, tuple[str, ...], list[str]]] = {
    "rank0-silent": (rank0_silent, (T0, "localhost", "1", "1", "1.500", "9.000", "9.000", "", "",
                                    "3"), ["rank 0 logged no step; used rank 1", GLOBAL_1]),
    "non-finite": (nonfinite, (T0, "localhost", "1", "1", "2.000", "1003.000", "1003.000", "",
                               "2.000000", "4"),
                   ["dropped 1 non-finite value (tps 1)", GLOBAL_1]),
    "wall-flag": (wall_flag, (T0, "localhost", "1", "1", "99.000", "1003.000", "1003.000", "",
                              "2.000000", "4"),
                  ["wall_time_sec from --wall-time-sec; summed step time is 2.000", GLOBAL_1]),
    # 500 per GPU on 2 GPUs is 1000 in all, not 250
    "per-gpu-only": (per_gpu_only, (T0, "localhost", "1", "2", "1.500", "1000.000", "500.000", "",
                                    "", "3"),
                     ["throughput_tokens_per_sec derived as per-GPU x 2 gpus "
                      "(no global throughput logged)"]),
    "global-only": (global_only, (T0, "localhost", "1", "2", "1.500", "1002.500", "501.250", "",
                                  "2.000000", "3"),
                    ["throughput_tokens_per_sec_per_gpu derived as global / 2 gpus "
                     "(no per-GPU throughput logged)"]),
    "mfu-zero": (mfu_zero, (T0, "localhost", "1", "1", "1.500", "1002.500", "1002.500", "",
                            "2.000000", "3"), [GLOBAL_1, MFU_NOTE]),
    "out-of-order": (out_of_order, (T0, "localhost", "1", "1", "2.000", "1003.000", "1003.000",
                                    "", "2.000000", "4"),
                     ["records were out of order; sorted 4 steps by step key, then timestamp",
                      GLOBAL_1]),
    "newest-first": (newest_first, (T0, "localhost", "1", "1", "2.000", "1003.000", "1003.000",
                                    "", "1.000000", "4"),
                     ["records were out of order; sorted 4 steps by step key, then timestamp",
                      GLOBAL_1]),
    "gpus-not-multiple": (gpus_not_multiple, (T0, "localhost", "2", "6", "1.500", "1002.500",
                                              "167.083", "", "2.000000", "3"),
                          ["--gpus 6 is not a multiple of GPUS_PER_NODE 4",
                           "throughput_tokens_per_sec_per_gpu derived as global / 6 gpus "
                           "(no per-GPU throughput logged)"]),
    "nodes-over-gpus": (nodes_over_gpus, (T0, "localhost", "3", "2", "1.500", "1002.500",
                                          "501.250", "", "2.000000", "3"),
                        ["nodes 3 exceeds gpus 2: some nodes ran no rank",
                         "throughput_tokens_per_sec_per_gpu derived as global / 2 gpus "
                         "(no per-GPU throughput logged)"]),
    "logged-every-2nd": (logged_every_2nd, ("2026-11-29T22:06:42Z", "localhost", "1", "1",
                                            "4.000", "1000.000", "1000.000", "", "", "4"),
                         ["wall_time_sec is estimated for all the steps: the 4 logged steps' "
                          "2.000 s plus 4 steps not logged, each gap at the mean of the "
                          "logged step times that bound it (1 before the first logged step "
                          "at 0.5 s), ~8 steps (logged every 2 steps, steps 2..8); pass "
                          "--wall-time-sec for the job's real time", GLOBAL_1]),
    "logged-every-10-flag": (logged_every_10_flag, ("2026-11-29T22:06:50Z", "localhost", "1", "1",
                                                    "1234.000", "1000.000", "1000.000", "",
                                                    "1.000000", "30"),
                             ["wall_time_sec from --wall-time-sec; summed step time is 15.000 "
                              "and covers 30 of ~300 steps (logged every 10 steps, steps "
                              "10..300)", GLOBAL_1]),
    "logged-with-holes": (logged_with_holes, (T0, "localhost", "1", "1", "5.000", "1000.000",
                                              "1000.000", "", "", "7"),
                          ["wall_time_sec is estimated for all the steps: the 7 logged steps' "
                           "3.500 s plus 3 steps not logged, each gap at the mean of the "
                           "logged step times that bound it, ~10 steps (logged with gaps, "
                           "steps 1..10); pass --wall-time-sec for the job's real time",
                           GLOBAL_1]),
}
VALUE_COLUMNS = ("timestamp", "system", "nodes", "gpus", "wall_time_sec",
                 "throughput_tokens_per_sec", "throughput_tokens_per_sec_per_gpu", "mfu",
                 "final_loss", "steps")


@pytest.mark.parametrize("name", list(VALUE_CASES))
def test_each_path_publishes_its_values_and_only_its_notes(tmp_path, name):
    build, cells, notes = VALUE_CASES[name]
    run, args = build(tmp_path)
    result = run_cli(run, "--config", "c", *args)
    row = one_row(result)
    assert tuple(row[k] for k in VALUE_COLUMNS) == cells
    assert (row["status"], row["tflops"], row["error"]) == ("pass", "", "")
    assert notes_of(result) == notes


def _steps_without_time(tmp: Path) -> tuple[Path, list[str]]:
    recs = [{"rank": 0, "metrics": {"train/iter": i, "train/tps": 5.0}} for i in (1, 2)]
    return write_run(tmp / "run", recs), []


def _negative_step_times(tmp: Path) -> tuple[Path, list[str]]:
    return write_run(tmp / "run", [step(i, dt=-1.0, tps=5.0) for i in (1, 2, 3)]), []


def _failed_without_steps(tmp: Path) -> tuple[Path, list[str]]:
    return write_run(tmp / "run", []), ["--status", "fail"]


def _no_step_records(tmp: Path) -> tuple[Path, list[str]]:
    return write_run(tmp / "run", []), []


def _two_files_no_step_records(tmp: Path) -> tuple[Path, list[str]]:
    run = write_run(tmp / "run", [])
    write_jsonl(run / "metrics-1.jsonl", [])
    return run, []


ASK = "pass --timestamp YYYY-MM-DDTHH:MM:SSZ --wall-time-sec SECONDS"
NO_STEPS = "no step records (lines with numeric 'metrics'); if the run failed, pass --status fail"


@pytest.mark.parametrize(("build", "error"), [
    (_failed_without_steps, f"cannot tell timestamp, wall_time_sec (no step was logged); {ASK}"),
    (_steps_without_time,
     f"cannot tell timestamp, wall_time_sec (the steps do not record it); {ASK}"),
    (_negative_step_times, "cannot tell wall_time_sec (the steps do not record it; all 3 step "
                           "times logged are zero or negative); pass --wall-time-sec SECONDS"),
    (_no_step_records, f"RUN/metrics-0.jsonl: {NO_STEPS}"),
    (_two_files_no_step_records, f"RUN/metrics-0.jsonl, RUN/metrics-1.jsonl: {NO_STEPS}"),
    (one_step_number, "throughput_tokens_per_sec would come from 0 steps after --warmup 1 (1 "
                      "step logged): one step is not a measurement of the run's rate; if the run "
                      "failed, pass --status fail (the rate cells are then left empty)"),
], ids=["failed-no-steps", "no-timestamps", "negative-dt", "no-step-records", "two-files",
        "one-step-number"])
def test_refusals_name_what_is_missing_and_the_flag(tmp_path, build, error):
    run, args = build(tmp_path)
    result = run_cli(run, "--config", "c", *args)
    assert outcome(result) == (1, "", f"error: {error.replace('RUN', str(run))}\n")


def test_a_step_time_alone_is_no_rate_to_refuse(tmp_path):
    """One step that logged only dt: its sum is the wall time; no rate comes from it."""
    result = run_cli(write_run(tmp_path / "run", [step(1, dt=0.5)]), "--config", "c")
    assert (one_row(result)["wall_time_sec"], one_row(result)["steps"]) == ("0.500", "1")
    assert notes_of(result) == [NO_THROUGHPUT_NOTE]


def test_truncated_note_names_the_file_read_last(tmp_path):
    run, _ = rank0_silent(tmp_path)
    with open(run / "metrics-1.jsonl", "a") as f:
        f.write('{"timestamp": 1795990005.0, "rank": 1, "metrics": {"train/it')
    result = run_cli(run, "--config", "c")
    assert one_row(result)["throughput_tokens_per_sec"] == "9.000"
    assert notes_of(result) == [
        "rank 0 logged no step; used rank 1",
        "last line of metrics-1.jsonl is truncated; ignored it",
        "run looks unfinished (metrics-1.jsonl ends in a truncated line); status stays 'pass'; "
        "pass --status fail if the job failed", GLOBAL_1]


def test_long_line_note_in_bytes_below_one_mib(tmp_path):
    recs: list = simple_steps(3)
    recs.insert(1, json.dumps({"rank": 0, "metrics": {"pad": "x" * 800_000}}))
    run = write_run(tmp_path / "run", recs)
    res = export_run(run, ExportOptions(config="c", max_line_bytes=768 << 10))
    assert "skipped 1 line over 786432 bytes unread" in res.notes
    assert res.row["steps"] == "3"


def test_a_row_the_dashboard_would_reject_is_never_printed(tmp_path, monkeypatch):
    import ezpz_amsc.run.columns as columns
    monkeypatch.setattr(columns, "dashboard_problems", lambda row: ["nodes 0 < 1", "gpus"])
    result = run_cli(write_run(tmp_path / "run", simple_steps(3)), "--config", "c")
    assert outcome(result) == (1, "", "error: internal: row would be rejected by the dashboard: "
                                      "nodes 0 < 1; gpus\n")


def test_files_are_hashed_only_when_asked(tmp_path):
    run = write_run(tmp_path / "run", simple_steps(3))
    assert export_run(run, ExportOptions(config="c")).read is None
    [(_, plain)], [] = export_many([str(run)], ExportOptions(config="c"))
    assert plain.read is None
    read = export_run(run, ExportOptions(config="c"), hash_files=True).read
    assert read is not None and read.metrics == [run / "metrics-0.jsonl"]
    assert read.digests[run / "metrics-0.jsonl"].size == (run / "metrics-0.jsonl").stat().st_size


def test_unfinished_note_keeps_status_fail(tmp_path):
    run, args = no_finalize(tmp_path)
    result = run_cli(run, "--config", "c", "--status", "fail", *args)
    assert one_row(result)["status"] == "fail"
    (note,) = [n for n in notes_of(result) if "unfinished" in n]
    assert "status stays 'fail'" in note
    assert "pass --status fail" not in note


def test_unfinished_status_stays_pass(tmp_path):
    run, args = truncated(tmp_path)
    assert one_row(run_cli(run, "--config", "c", *args))["status"] == "pass"


def test_report_alone_counts_as_finished(tmp_path):
    run, args = no_finalize(tmp_path)
    (run / "train").mkdir()
    (run / "train" / "report-train.md").write_text("# Report\n\nno distributed section\n")
    result = run_cli(run, "--config", "c", *args)
    assert one_row(result) == {
        "timestamp": "2026-11-29T22:06:41Z", "system": "Aurora", "config": "c", "nodes": "1",
        "gpus": "1", "status": "pass", "wall_time_sec": "2.000",
        "throughput_tokens_per_sec": "1003.000", "throughput_tokens_per_sec_per_gpu": "1003.000",
        "mfu": "", "tflops": "", "final_loss": "2.000000", "steps": "4", "error": ""}
    # the report is the finalize evidence: no "run looks unfinished" note, only the derivation
    assert notes_of(result) == ["throughput_tokens_per_sec_per_gpu derived as global / 1 gpu "
                                "(no per-GPU throughput logged)"]


@pytest.mark.parametrize("args", [["--warmup", "-1"], ["--reducer", "mode"]])
def test_quiet_still_shows_errors(tmp_path, args):
    run = write_run(tmp_path / "run", simple_steps(3))
    result = run_cli(run, "--config", "c", "-q", *args)
    assert result.exit_code != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")


def test_quiet_still_shows_missing_provenance_error(tmp_path):
    write_jsonl(tmp_path / "run" / "metrics-0.jsonl", simple_steps(3))
    result = run_cli(tmp_path / "run", "--config", "c", "--quiet")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: cannot tell system, gpus, nodes")
    assert result.stdout == ""


@pytest.mark.parametrize("err, text", [
    (errno.EACCES, "Permission denied (check its permissions and those of the folders above it)"),
    (errno.ELOOP, "Too many levels of symbolic links"),
    (errno.ENOTDIR, "no such directory; pass the run directory ezpz wrote"),
])
def test_a_run_dir_that_cannot_be_reached_is_one_error_line(tmp_path, monkeypatch, err, text):
    # a folder on the way that the user may not search makes stat() fail, not "not found"
    run = tmp_path / "locked" / "run"
    real_stat = Path.stat

    def stat(self, *args, **kwargs):
        if self == run:
            raise OSError(err, os.strerror(err), str(self))
        return real_stat(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", stat)
    result = run_cli(run, "--config", "c")
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"error: {run}: {text}\n"


# ------------------------------------------------------------- what a plain export loads

_LOADED_BY_EXPORT = """
import json, sys
from ezpz_amsc.cli.group import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""
# What an export to stdout never needs: loading it is the fixed cost every export pays
# (docs/performance.md, "What each command imports").
NOT_FOR_STDOUT = {
    "ezpz_amsc.results.append", "ezpz_amsc.results.rows",
    "ezpz_amsc.results.fields", "ezpz_amsc.results.validate", "ezpz_amsc.fs.create",
    "ezpz_amsc.fs.access", "ezpz_amsc.cli.progress",
    "ezpz_amsc.cli.explain", "ezpz_amsc.run.devices", "ezpz_amsc.records.record",
    "ezpz_amsc.records.folder", "click.shell_completion", "fcntl", "sqlite3", "_strptime",
}


def _loaded_by(tmp_path: Path, *args: str) -> set[str]:
    import subprocess
    import sys

    # tools/mutate.py measures subprocesses with coverage, which imports modules of its own.
    env = {k: v for k, v in os.environ.items() if k != "MUTATE_COV_DIR"}
    p = subprocess.run([sys.executable, "-c", _LOADED_BY_EXPORT, str(C), "--config", "c", *args],
                       capture_output=True, text=True, cwd=tmp_path, check=True, env=env)
    *rows, modules = p.stdout.splitlines()
    if not args:
        assert [row["steps"] for row in parse_csv("".join(r + "\n" for r in rows))] == ["34"]
    return set(json.loads(modules))


@pytest.mark.slow
def test_an_export_to_stdout_loads_nothing_it_does_not_use(tmp_path):
    loaded = _loaded_by(tmp_path)
    assert {"ezpz_amsc.flow.export", "ezpz_amsc.flow.publish", "numpy"} <= loaded
    assert loaded & NOT_FOR_STDOUT == set()


@pytest.mark.slow
def test_an_append_loads_the_append_machinery(tmp_path):
    # The same probe sees what an append needs: the set above is not empty by accident.
    loaded = _loaded_by(tmp_path, "--append", "r.csv", "-q")
    assert (tmp_path / "r.csv").read_text().count("\n") == 2
    assert {"ezpz_amsc.results.append", "ezpz_amsc.results.rows", "ezpz_amsc.fs.create",
            "fcntl"} <= loaded
    assert "ezpz_amsc.run.devices" not in loaded


def test_json_says_what_the_append_did_with_each_row(tmp_path):
    """--format json with --append: each object says whether its row was appended, skipped
    (--skip-existing, with the line the run is at) or finished from an interrupted export."""
    out = tmp_path / "r.csv"
    first = run_cli(A, "--config", "c", "--append", out, "--format", "json", "-q")
    assert json.loads(first.stdout)["append"] == {"file": str(out), "outcome": "appended"}
    again = run_cli(A, C, "--config", "c", "--append", out, "--skip-existing",
                    "--format", "json", "-q")
    assert again.exit_code == 0, again.stderr
    told = [json.loads(line)["append"] for line in again.stdout.splitlines()]
    assert told == [{"file": str(out), "outcome": "skipped", "line": 2},
                    {"file": str(out), "outcome": "appended"}]
    plain = run_cli(A, "--config", "c", "--format", "json", "-q")
    assert "append" not in json.loads(plain.stdout)
