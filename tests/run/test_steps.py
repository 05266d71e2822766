"""Reading the steps (run/steps.py): both JSON paths held to ``json.loads``, hostile
and broken lines, which rank is read, long lines and the memory they cost.

The skim of other ranks' lines in a shared file has its own file, test_skim.py.
"""

from __future__ import annotations

import errno
import json
import math
import os
import tracemalloc
from pathlib import Path

import pytest
from helpers import (
    EXPECTED,
    FIXTURE_NAMES,
    MFU_NOTE,
    NO_THROUGHPUT_NOTE,
    REPO,
    RUNS,
    error_line,
    fail_for,
    fail_reading_midway,
    good_run,
    notes_of,
    one_row,
    run_cli,
    simple_steps,
    snapshot,
    step,
    write_jsonl,
    write_run,
    write_run_info,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.export import export_run
from ezpz_amsc.options import ExportOptions
from ezpz_amsc.results.schema import MAX_LINE_BYTES
from ezpz_amsc.run import steps as steps_mod
from ezpz_amsc.run.layout import MetricsSource, RankFiles, find_run_files
from ezpz_amsc.run.steps import SERIES, Steps, read_steps

try:
    import orjson
except ImportError:  # the tool works without it; so must its tests
    orjson = None


# --------------------------------------------------------------------- both JSON paths


# orjson (the ``fast`` extra) is used when importable; the stdlib path is the
# scanner fast path with ``json.loads`` as the authority. The tests below run on
# each available path via the ``json_path`` fixture, and the differential tests
# hold both to ``json.loads`` itself.


PATHS = ["stdlib", pytest.param("orjson", marks=pytest.mark.skipif(
    orjson is None, reason="orjson not installed (extra 'fast')"))]


def _only_json_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference: every line through json.loads (scanner fast path and skim off)."""
    def refuse(text: str, idx: int):
        raise StopIteration(idx)

    monkeypatch.setattr(steps_mod, "FAST_LOADS", None)
    monkeypatch.setattr(steps_mod, "_scan_once", refuse)
    monkeypatch.setattr(steps_mod, "SKIM", False)  # and other ranks' lines parsed too


@pytest.fixture(params=PATHS)
def json_path(request, monkeypatch):
    monkeypatch.setattr(steps_mod, "FAST_LOADS", orjson.loads if request.param == "orjson"
                        else None)
    return request.param


def read_bytes_file(tmp_path: Path, data: bytes, interleaved: bool) -> steps_mod.Steps:
    if interleaved:
        p = tmp_path / "metrics.jsonl"
        p.write_bytes(data)
        return read_steps(MetricsSource("interleaved", tmp_path, single=p), max_line=1 << 16)
    p = tmp_path / "metrics-0.jsonl"
    p.write_bytes(data)
    return read_steps(MetricsSource("per-rank", tmp_path, per_rank={0: p}), max_line=1 << 16)


def test_env_var_forces_stdlib(monkeypatch):
    monkeypatch.setenv("EZPZ_AMSC_JSON", "stdlib")
    assert steps_mod._fast_loads() is None
    monkeypatch.setenv("EZPZ_AMSC_JSON", "")
    assert steps_mod._fast_loads() is (orjson.loads if orjson else None)


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_runs_read_like_json_loads(json_path, name, monkeypatch):
    source = find_run_files(RUNS / name).metrics
    got = snapshot(read_steps(source))
    _only_json_loads(monkeypatch)
    assert got == snapshot(read_steps(source))
    assert got["step"], "fixture has steps"


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_rows_identical_on_both_paths(name, monkeypatch):
    rows = []
    for loads in [None] + ([orjson.loads] if orjson else []):
        monkeypatch.setattr(steps_mod, "FAST_LOADS", loads)
        rows.append(one_row(run_cli(RUNS / name, "--config", "c")))
    assert all(r == rows[0] for r in rows)
    assert int(rows[0]["steps"]) > 0


# (line, expected) — expected: step value, loss value (None = NaN), counters.
HOSTILE = [
    ('{"metrics": {"train/iter": 1, "train/loss": NaN}}', dict(loss=None, nonfinite=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": Infinity}}', dict(loss=None, nonfinite=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": -Infinity}}', dict(loss=None, nonfinite=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": 1e400}}', dict(loss=None, nonfinite=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": ' + str(10**400) + '}}',
     dict(loss=None, nonfinite=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": ' + str(2**64) + '}}', dict(loss=2.0**64)),
    ('{"metrics": {"train/iter": 1, "train/loss": true, "loss": 2.5}}', dict(loss=2.5)),
    ('{"metrics": {"train/iter": 1, "train/loss": "8.0", "loss": 3}}', dict(loss=3.0)),
    ('{"metrics": {"train/iter": "1", "iter": 4, "train/loss": 1.5}}', dict(step=4.0, loss=1.5)),
    ('\ufeff{"metrics": {"train/iter": 1, "train/loss": 1.5}}', dict(loss=1.5)),
    ('  {"metrics": {"train/iter": 1, "train/loss": 1.5}}  ', dict(loss=1.5)),
    ('{"metrics": {"train/iter": 1, "train/loss": 1.5, "s": "\\ud800"}}', dict(loss=1.5)),
    ('{"metrics": {"train/iter": 1, "train/loss": 1.5}} trailing', dict(bad=1)),
    ('{"metrics": {"train/iter": 1, "train/loss": 1.5}, "metrics": 7}', dict(not_steps=1)),
    ('[1, 2]', dict(bad=1)),
    ('{"metrics": {"precision/x": "bf16", "flag": true}}', dict(not_steps=1)),
    ('{"metrics": {"other/x": 1}}', dict(step=None, loss=None)),
    ("[" * 5000 + "]" * 5000, dict(bad=1)),
]


@pytest.mark.parametrize("line,expected", HOSTILE)
def test_hostile_lines(json_path, tmp_path, monkeypatch, line, expected):
    good = json.dumps(step(9, loss=0.5))
    data = (good + "\n" + line + "\n").encode("utf-8", "surrogatepass")
    s = read_bytes_file(tmp_path, data, interleaved=False)
    n_rows = 1 if expected.get("bad") or expected.get("not_steps") else 2
    assert len(s) == n_rows
    assert s.bad_lines == expected.get("bad", 0)
    assert s.not_steps == expected.get("not_steps", 0)
    assert s.nonfinite["loss"] == expected.get("nonfinite", 0)
    if n_rows == 2:
        want_step, want_loss = expected.get("step", 1.0), expected.get("loss")
        got_step, got_loss = s.step[1], s.series["loss"][1]
        assert math.isnan(got_step) if want_step is None else got_step == want_step
        assert math.isnan(got_loss) if want_loss is None else got_loss == want_loss
    got = snapshot(s)
    _only_json_loads(monkeypatch)
    assert got == snapshot(read_bytes_file(tmp_path, data, interleaved=False))


def test_utf16_line_is_read_by_json_loads_rules(json_path, tmp_path):
    # json.loads detects UTF-16 from the BOM; neither fast path does, so both defer.
    line = json.dumps(step(1, loss=1.5))  # one line, no newline byte to split UTF-16 on
    s = read_bytes_file(tmp_path, line.encode("utf-16"), interleaved=False)
    assert len(s) == 1 and s.series["loss"][0] == 1.5 and s.bad_lines == 0


@pytest.mark.parametrize("rank", [2**64, -(2**63) - 1, 10**30])
def test_huge_rank_stays_an_int_rank(json_path, tmp_path, rank):
    # orjson turns integers beyond 64 bits into floats; json keeps ints.
    recs = [step(1, loss=1.0), {**step(2, loss=2.0), "rank": rank}]
    p = write_jsonl(tmp_path / "metrics.jsonl", recs)
    s = read_steps(MetricsSource("interleaved", tmp_path, single=p))
    assert len(s) == 1
    assert s.other_ranks == {rank: 1}


def test_truncated_last_line_with_nan(json_path, tmp_path):
    data = (json.dumps(step(1, loss=1.0)) + '\n{"metrics": {"train/iter": 2, "train/loss": NaN'
            ).encode()
    s = read_bytes_file(tmp_path, data, interleaved=False)
    assert len(s) == 1 and s.truncated_last_line and s.bad_lines == 0


def test_cli_row_on_both_paths_with_nan_lines(json_path, tmp_path):
    run = tmp_path / "run"
    recs = [step(i, dt=0.5, tps=1000.0 * i, loss=1.0 / i) for i in range(1, 6)]
    lines = [json.dumps(r) for r in recs]
    lines.insert(3, '{"timestamp": 1795990003.5, "rank": 0, "metrics": {"train/iter": 3.5, '
                    '"train/dt": 0.5, "train/tps": NaN, "train/loss": Infinity}}')
    write_jsonl(run / "metrics-0.jsonl", lines)
    write_run_info(run)
    result = run_cli(run, "--config", "c")
    row = one_row(result)
    assert row["steps"] == "6"
    assert row["throughput_tokens_per_sec"] == "3500.000"  # median of 2000..5000, NaN dropped
    assert row["final_loss"] == "0.200000"
    assert "dropped 2 non-finite values (tps 1, loss 1)" in result.stderr


_scalar = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True),
    st.booleans(), st.none(), st.text(max_size=3), st.lists(st.integers(), max_size=2))


_keys = st.sampled_from(
    [*steps_mod.STEP_KEYS, *(k for ks in steps_mod.SERIES_KEYS.values() for k in ks), "x/y"])


_record = st.fixed_dictionaries(
    {}, optional={"timestamp": _scalar, "rank": st.one_of(st.integers(0, 2), _scalar),
                  "metrics": st.one_of(st.dictionaries(_keys, _scalar, max_size=6), _scalar)})


_line = st.one_of(_record.map(json.dumps), st.text(max_size=20),
                  st.sampled_from(["NaN", "{", "[]", "\ufeff{}", "{\"metrics\": {}} x"]))


@pytest.mark.slow
@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_line, max_size=8), interleaved=st.booleans(), newline=st.booleans())
def test_random_lines_read_like_json_loads(json_path, tmp_path_factory, lines, interleaved,
                                           newline):
    tmp = tmp_path_factory.mktemp("h")
    data = ("\n".join(lines) + ("\n" if newline else "")).encode("utf-8", "surrogatepass")
    got = snapshot(read_bytes_file(tmp, data, interleaved))
    with pytest.MonkeyPatch.context() as mp:
        _only_json_loads(mp)
        want = snapshot(read_bytes_file(tmp, data, interleaved))
    assert got == want
    assert set(got["series"]) == set(SERIES)


# --------------------------------------------------------------- what counts as a step


def test_metrics_without_steps_is_an_error_when_pass(tmp_path):
    run = tmp_path / "r"
    write_run_info(run)
    write_jsonl(run / "metrics-0.jsonl", [{"timestamp": 1.0, "rank": 0,
                                          "metrics": {"precision/x": "bf16"}}])
    line = error_line(run_cli(run, "--config", "c"))
    assert "no step records" in line


def test_bool_and_list_values_are_not_metrics(tmp_path):
    run = tmp_path / "run"
    write_run_info(run)
    recs = [step(i, dt=1.0, loss=2.0) for i in range(1, 4)]
    recs.append({"timestamp": 1795990100.0, "rank": 0,
                 "metrics": {"train/iter": True, "train/dt": False, "opt/iter": [4]}})
    write_jsonl(run / "metrics-0.jsonl", recs)
    row = one_row(run_cli(run, "--config", "c"))
    assert row["steps"] == "3"
    assert row["wall_time_sec"] == "3.000"


def test_non_finite_values_dropped_and_counted(tmp_path):
    run = tmp_path / "run"
    write_run_info(run)
    lines = [json.dumps(step(i, dt=1.0, tps=100.0, loss=1.0)) for i in range(1, 5)]
    lines.append('{"timestamp": 1795990010.0, "rank": 0, "metrics": {"train/iter": 5, '
                 '"train/dt": NaN, "train/tps": Infinity, "train/loss": -Infinity}}')
    write_jsonl(run / "metrics-0.jsonl", lines)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert row["wall_time_sec"] == "4.000"
    assert row["final_loss"] == ""  # the last loss is -inf: 1.0 would be stale (diverged)
    assert row["steps"] == "5"
    assert "dropped 3 non-finite values (dt 1, tps 1, loss 1)" in r.stderr
    assert "final_loss left empty, not the stale 1 of step 4" in r.stderr


def test_bare_keys_and_tokens_per_sec(tmp_path):
    run = tmp_path / "run"
    write_run_info(run)
    recs = [{"timestamp": 1795990000.0 + 2 * i, "rank": 0,
             "metrics": {"train/step": i, "train/tokens_per_sec": 1000.0 * (i + 1),
                         "dt": 0.5, "loss": 3.0}} for i in range(0, 5)]
    write_jsonl(run / "metrics.jsonl", recs)
    row = one_row(run_cli(run, "--config", "c"))
    assert row["throughput_tokens_per_sec"] == "3500.000"  # median of 2000..5000
    assert row["wall_time_sec"] == "2.500"
    assert row["final_loss"] == "3.000000"


_GOOD = [json.dumps(step(i, dt=1.0)) for i in range(1, 4)]


@pytest.mark.parametrize("files,steps", [
    ({"metrics-0.jsonl": _GOOD[:1] + ["not json at all", "[1, 2, 3]", ""] + _GOOD[1:]}, "3"),
    # Rank 0's file held only garbage: its bad lines still count after the fall-back.
    ({"metrics-0.jsonl": ["garbage", "{not json"],
      "metrics-1.jsonl": [json.dumps(step(i, rank=1, dt=1.0)) for i in (1, 2)]}, "2"),
], ids=["between-steps", "empty-rank0"])
def test_garbage_lines_skipped_with_note(tmp_path, files, steps):
    run = tmp_path / "run"
    write_run_info(run, WORLD_SIZE_IN_USE="2", world_size="2")
    for name, lines in files.items():
        write_jsonl(run / name, lines)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == steps
    assert "skipped 2 unparsable lines" in r.stderr


def test_blank_final_line_after_a_bad_line_is_not_a_truncation(tmp_path):
    run = tmp_path / "run"
    write_run_info(run)
    p = run / "metrics-0.jsonl"
    lines = [json.dumps(step(i, dt=1.0)) for i in range(1, 4)]
    p.write_text("\n".join(lines) + "\n{broken\n   ")
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == "3"
    assert "skipped 1 unparsable line" in r.stderr
    assert "truncated" not in r.stderr


def test_truncated_last_line_is_skipped_with_note(tmp_path, fixture_run):
    run = fixture_run("fsdp_tp-1rank-launch")
    p = run / "metrics-0.jsonl"
    data = p.read_bytes()
    p.write_bytes(data + data.splitlines(keepends=True)[-1][:300])  # killed mid-write
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == "30"
    assert "last line of metrics-0.jsonl is truncated" in r.stderr


# -------------------------------------------------------------------------- which rank


def test_interleaved_two_rank_file_uses_rank_0_only(tmp_path):
    run = tmp_path / "run"
    write_run_info(run, WORLD_SIZE_IN_USE="2", world_size="2")
    recs = []
    for i in range(1, 6):
        recs.append(step(i, rank=1, dt=9.0, tps=1.0, loss=99.0))
        recs.append(step(i, rank=0, dt=1.0, tps=500.0 + i, loss=float(i)))
    write_jsonl(run / "metrics.jsonl", recs)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    # rank 0 logged: no "rank 0 logged no step" note
    assert notes_of(r) == ["throughput_tokens_per_sec_per_gpu derived as global / 2 gpus "
                           "(no per-GPU throughput logged)"]
    assert row["steps"] == "5"
    assert row["wall_time_sec"] == "5.000"
    assert row["throughput_tokens_per_sec"] == "503.500"
    assert row["throughput_tokens_per_sec_per_gpu"] == "251.750"
    assert row["final_loss"] == "5.000000"
    assert row["gpus"] == "2"


def test_interleaved_without_rank_0_uses_lowest_rank(tmp_path):
    run = tmp_path / "run"
    write_run_info(run, WORLD_SIZE_IN_USE="4", world_size="4")
    recs = [step(i, rank=r, dt=r / 10) for i in range(1, 4) for r in (3, 2)]
    write_jsonl(run / "metrics.jsonl", recs)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["wall_time_sec"] == "0.600"  # rank 2: 3 steps x 0.2
    assert "rank 0 logged no step; used rank 2" in r.stderr


def test_per_rank_empty_rank0_falls_back_to_next(tmp_path):
    run = tmp_path / "run"
    write_run_info(run, WORLD_SIZE_IN_USE="2", world_size="2")
    write_jsonl(run / "metrics-0.jsonl", [])
    write_jsonl(run / "metrics-1.jsonl", [step(i, rank=1, dt=0.75) for i in range(1, 4)])
    r = run_cli(run, "--config", "c")
    assert one_row(r)["wall_time_sec"] == "2.250"
    assert "used rank 1" in r.stderr


# ------------------------------------------------------------------------- read faults


def test_unreadable_metrics_file(tmp_path, monkeypatch):
    run = good_run(tmp_path / "run")
    fail_for(monkeypatch, run / "metrics-0.jsonl", errno.EACCES)
    line = error_line(run_cli(run, "--config", "c"))
    assert line == f"error: {run / 'metrics-0.jsonl'}: cannot read metrics file: Permission denied"


def test_read_error_midway_through_metrics(tmp_path, monkeypatch):
    run = good_run(tmp_path / "run")
    target = run / "metrics-0.jsonl"
    fail_reading_midway(monkeypatch, steps_mod, target)
    line = error_line(run_cli(run, "--config", "c"))
    assert line == f"error: {target}: cannot read metrics file: Input/output error"


# -------------------------------------------------------------------------- long lines


def test_long_line_note(tmp_path):
    # Needs a small line limit (not a CLI flag), so through the pipeline directly.
    run = write_run(tmp_path / "run", simple_steps(3))
    with open(run / "metrics-0.jsonl", "a") as f:
        f.write(json.dumps(step(4, dt=0.5, blob="x" * (1 << 20))) + "\n")
    result = export_run(run, ExportOptions(config="c", max_line_bytes=1 << 20))
    assert "skipped 1 line over 1 MiB unread" in result.notes
    assert result.row["steps"] == "3"


def test_long_line_skipped_with_a_note_small_limit(tmp_path):
    run = tmp_path / "run"
    recs = [step(1, dt=0.5, loss=3.0),
            '{"metrics": {"train/iter": 2, "pad": "' + "x" * 50_000 + '"}}',
            step(3, dt=0.5, loss=2.0)]
    write_jsonl(run / "metrics-0.jsonl", recs)
    write_run_info(run)
    res = export_run(run, ExportOptions(config="c", max_line_bytes=4096))
    assert res.row["steps"] == "2" and res.row["final_loss"] == "2.000000"
    assert "skipped 1 line over 4096 bytes unread" in res.notes


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["step", "garbage"])
def test_50_mb_line_under_the_limit_is_read(tmp_path, kind):
    run = tmp_path / "run"
    big = step(2, dt=0.5, loss=2.5)
    big["metrics"]["pad"] = "x" * (50 << 20)
    line = json.dumps(big) if kind == "step" else "{" + "x" * (50 << 20)
    write_jsonl(run / "metrics-0.jsonl", [step(1, dt=0.5, loss=3.0), line,
                                          step(3, dt=0.5, loss=2.0)])
    write_run_info(run)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == ("3" if kind == "step" else "2")
    assert ("skipped 1 unparsable line" in notes_of(r)) == (kind == "garbage")


def _write_long_line_run(run: Path, line_bytes: int) -> None:
    """Step 1, then one line of ``line_bytes`` NULs (a sparse hole: no disk used), step 2."""
    path = run / "metrics-0.jsonl"
    write_jsonl(path, [step(1, dt=0.5, loss=3.0)])
    with open(path, "r+b") as f:
        f.seek(0, os.SEEK_END)
        f.truncate(f.tell() + line_bytes)
        f.seek(0, os.SEEK_END)
        f.write(b"\n" + json.dumps(step(2, dt=0.5, loss=2.0)).encode() + b"\n")
    write_run_info(run)


def _peak_bytes(run: Path, opts: ExportOptions):
    tracemalloc.start()
    try:
        res = export_run(run, opts)
        return res, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_long_line_memory_is_bounded_by_the_limit_not_the_line(tmp_path):
    limit = 1 << 20
    _write_long_line_run(tmp_path / "run", 64 << 20)
    res, peak = _peak_bytes(tmp_path / "run", ExportOptions(config="c", max_line_bytes=limit))
    assert res.row["steps"] == "2" and "skipped 1 line over 1 MiB unread" in res.notes
    assert peak < 2 * limit + (8 << 20), peak  # the whole line would be 64 MiB


@pytest.mark.slow
def test_line_over_the_real_64_mib_default_is_skipped_without_holding_it(tmp_path):
    """The default limit end to end, on a 200 MiB line."""
    _write_long_line_run(tmp_path / "run", 200 << 20)
    res, peak = _peak_bytes(tmp_path / "run", ExportOptions(config="c"))
    assert res.row["steps"] == "2" and res.row["final_loss"] == "2.000000"
    assert "skipped 1 line over 64 MiB unread" in res.notes
    # readline(limit) builds one limit-sized chunk (briefly twice that while joining its
    # buffers); reading the line whole would hold all 200 MiB.
    assert peak < 2 * MAX_LINE_BYTES + (16 << 20), peak


_MODULES_AFTER_EXPORT = """
import json, sys
from ezpz_amsc.cli.group import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps("_hashlib" in sys.modules))
"""


@pytest.mark.slow
@pytest.mark.parametrize("extra, loaded", [
    ([], False), (["--append", "r.csv"], False),
    (["--append", "r.csv", "--provenance", "records"], True)])
def test_only_a_provenance_export_loads_openssl(tmp_path, extra, loaded):
    # hashlib brings OpenSSL (~3.8 MB resident) into every process that imports it
    import subprocess
    import sys

    run = str(REPO / "examples" / "runs" / "minimal-1rank")
    # tools/mutate.py measures subprocesses with coverage, which imports hashlib itself.
    env = {k: v for k, v in os.environ.items() if k != "MUTATE_COV_DIR"}
    p = subprocess.run([sys.executable, "-c", _MODULES_AFTER_EXPORT, run, "--config", "c", *extra],
                       capture_output=True, text=True, cwd=tmp_path, check=True, env=env)
    if extra:
        assert (tmp_path / "r.csv").read_text().startswith("timestamp,")
    else:
        assert p.stdout.startswith("timestamp,")
    assert json.loads(p.stdout.splitlines()[-1]) is loaded


# ------------------------------------------------------------------ the keys each series reads

# Written out, not taken from steps.py: a key dropped or misspelt there must fail here.
COUNTERS = ["train/iter", "train/step", "iter", "step", "epoch", "train/epoch"]
SERIES_TABLE = [("dt", "train/dt"), ("dt", "dt"), ("tps", "train/tps"),
                ("tps", "train/tokens_per_sec"), ("tps_per_gpu", "train/tps_per_gpu"),
                ("mfu", "train/mfu"), ("mfu", "mfu"), ("tflops", "train/tflops"),
                ("tflops", "tflops"), ("loss", "train/loss"), ("loss", "loss"),
                ("loss", "train_loss")]


def _one_record(tmp_path: Path, metrics: dict) -> steps_mod.Steps:
    line = json.dumps({"timestamp": 1795990000.0, "rank": 0, "metrics": metrics})
    return read_bytes_file(tmp_path, (line + "\n").encode(), interleaved=False)


@pytest.mark.parametrize("key", COUNTERS)
def test_each_step_counter_is_read(tmp_path, key):
    s = _one_record(tmp_path, {key: 7, "train/dt": 0.5})
    assert (list(s.step), s.step_key) == ([7.0], key)


def test_step_counters_in_order_of_preference(tmp_path):
    for n in range(len(COUNTERS)):
        d = tmp_path / str(n)
        d.mkdir()
        s = _one_record(d, {k: 10.0 * (i + 1) for i, k in enumerate(COUNTERS[n:])})
        assert (list(s.step), s.step_key) == ([10.0], COUNTERS[n])


@pytest.mark.parametrize("name,key", SERIES_TABLE)
def test_each_series_key_is_read(tmp_path, name, key):
    s = _one_record(tmp_path, {"train/iter": 1, key: 2.5})
    assert s.series[name].tolist() == [2.5]
    assert s.keys_used == {name: key}
    assert all(math.isnan(v) for n, a in s.series.items() if n != name for v in a)


@pytest.mark.parametrize("key", ["tokens_per_sec", "tps", "tps_per_gpu"])
def test_bare_throughput_keys_are_not_training_throughput(tmp_path, key):
    s = _one_record(tmp_path, {"train/iter": 1, "train/dt": 1.0, key: 300.0})
    assert math.isnan(s.series["tps"][0]) and math.isnan(s.series["tps_per_gpu"][0])
    assert s.ignored_throughput == {key: 1}


def test_epoch_counter_of_an_epoch_history_is_named_in_its_note(tmp_path):
    # fsdp's history: one record per epoch, train/epoch the only counter.
    recs = [{"timestamp": 1795990000.0 + 2 * i, "rank": 0,
             "metrics": {"train/epoch": i, "train/dt": 2.0, "train_loss": 1.0 / i}}
            for i in range(1, 4)]
    r = run_cli(write_run(tmp_path / "run", recs), "--config", "c")
    row = one_row(r)
    assert (row["steps"], row["wall_time_sec"], row["final_loss"]) == ("3", "6.000", "0.333333")
    assert any(n.startswith("records are epochs (train/epoch is the only counter)")
               for n in notes_of(r)), r.stderr


@pytest.mark.parametrize("head,tail", [("", "X"), ("", "x"), ("", "]"), ("x", ""), ("[", "")])
def test_data_around_a_record_is_an_unparsable_line(json_path, tmp_path, head, tail):
    good = json.dumps(step(1, dt=1.0))
    bad = f"{head}{json.dumps(step(2, dt=1.0))}{tail}"
    s = read_bytes_file(tmp_path, f"{good}\n{bad}\n".encode(), interleaved=False)
    assert (list(s.step), s.bad_lines, s.truncated_last_line) == ([1.0], 1, False)


@pytest.mark.parametrize("data", [b"", b"\n\n"])
def test_empty_metrics_file_is_not_a_truncated_line(tmp_path, data):
    s = read_bytes_file(tmp_path, data, interleaved=False)
    assert (len(s), s.bad_lines, s.truncated_last_line) == (0, 0, False)


def test_unranked_records_of_a_shared_file_belong_to_no_rank(tmp_path):
    recs = [step(1, dt=1.0), {"timestamp": 1.0, "metrics": {"train/iter": 1, "train/dt": 5.0}},
            step(2, dt=1.0), {"timestamp": 2.0, "metrics": {"train/iter": 2, "train/dt": 5.0}}]
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    s = read_bytes_file(tmp_path, data, interleaved=True)
    assert (list(s.series["dt"]), s.other_ranks) == ([1.0, 1.0], {None: 2})


def _ranked_first(i: int, rank: int, dt: float) -> str:
    # "rank" before "timestamp": a line the skim never passes over, so the reader judges it.
    return json.dumps({"rank": rank, "timestamp": 1795990000.0 + i,
                       "metrics": {"train/iter": i, "train/dt": dt}}) + "\n"


def test_per_rank_file_holding_another_rank_counts_it_apart(tmp_path):
    data = "".join(_ranked_first(i, r, dt) for i in (1, 2) for r, dt in ((0, 1.0), (12, 7.0)))
    s = read_bytes_file(tmp_path, data.encode(), interleaved=False)
    assert (s.rank, list(s.series["dt"]), s.other_ranks) == (0, [1.0, 1.0], {12: 2})


def test_files_named_by_local_rank_without_rank_0_read_the_lowest_rank(tmp_path):
    # metrics-0.jsonl holds ranks 12 and 13 (another node's local ranks 0 and 1).
    p = tmp_path / "metrics-0.jsonl"
    p.write_text("".join(_ranked_first(i, r, r / 4) for i in (1, 2, 3) for r in (13, 12)))
    s = read_steps(MetricsSource("per-rank", tmp_path, per_rank={0: p}))
    assert (s.rank, list(s.series["dt"]), s.other_ranks) == (12, [3.0, 3.0, 3.0], {13: 3})


def test_skipped_lines_of_a_rank_file_without_steps_are_kept_apart(tmp_path):
    p0, p1 = tmp_path / "metrics-0.jsonl", tmp_path / "metrics-1.jsonl"
    p0.write_bytes(b"{" + b"x" * (1 << 16) + b"}\nnot json\n[1,\n")
    p1.write_text("".join(json.dumps(step(i, rank=1, dt=0.5)) + "\n" for i in (1, 2)))
    s = read_steps(MetricsSource("per-rank", tmp_path, per_rank={0: p0, 1: p1}),
                   max_line=1 << 16)
    assert (s.rank, len(s), s.long_lines, s.bad_lines) == (1, 2, 1, 2)


def test_bare_throughput_is_counted_only_on_records_without_training_throughput(tmp_path):
    recs = [{"train/iter": 1, "train/tps": 100.0, "tokens_per_sec": 5.0},
            {"train/iter": 2, "train/tps": 200.0, "tokens_per_sec": 5.0},
            {"train/iter": 3, "tokens_per_sec": 5.0},
            {"train/iter": 4, "train/tps": 300.0, "tokens_per_sec": 5.0}]
    data = "".join(json.dumps({"rank": 0, "metrics": m}) + "\n" for m in recs)
    s = read_bytes_file(tmp_path, data.encode(), interleaved=False)
    assert s.ignored_throughput == {"tokens_per_sec": 1}


# --------------------------------------------------------------------- beside the series


def test_content_tokens_and_epoch_are_read_beside_the_series(tmp_path):
    recs = [
        {"timestamp": 1795990000.0, "rank": 0,
         "metrics": {"train/iter": 1, "train/epoch": 0, "train/tokens": 512, "train/dt": 0.5}},
        {"timestamp": 1795990001.0, "rank": 0,  # an eval record numbered by the step
         "metrics": {"train/iter": 1, "eval/loss": 3.0, "train/epoch": 7}},
        {"timestamp": 1795990002.0, "rank": 0,  # steps go on: its epoch is not read
         "metrics": {"train/iter": 2, "epoch": 1, "train/ntokens": 256, "loss": 1.0}},
        {"timestamp": 1795990003.0, "rank": 0,  # no usable number: NaN (or inf), never 0
         "metrics": {"train/iter": 1, "train/epoch": "x", "train/tokens": float("inf"),
                     "train/ntokens": 9, "dt": 0.5}},
        {"timestamp": 1795990004.0, "rank": 0,
         "metrics": {"train/iter": 1, "train/epoch": 3, "train/tokens": True, "dt": 0.5}},
        {"timestamp": 1795990005.0, "rank": 0,
         "metrics": {"train/iter": 2, "train/tokens": 10**400, "dt": 0.5}},
    ]
    s = read_bytes_file(tmp_path, "".join(json.dumps(r) + "\n" for r in recs).encode(), False)
    assert s.contentless == [1]
    assert (s.tokens_first, s.tokens_run) == (512.0, 1)  # then the column of the rest
    assert [x if x == x else None for x in s.tokens] == [None, 256.0, math.inf, None, None]
    # read where the step number does not increase: records 0, 1, 3 and 4
    assert {k: (v if v == v else None) for k, v in s.epochs.items()} == {
        0: 0.0, 1: 7.0, 3: None, 4: 3.0}
    got = steps_mod.epoch_values(s).tolist()
    assert [x if x == x else None for x in got] == [0.0, 7.0, 7.0, None, 3.0, 3.0]


# --------------------------------------------------------------------- gzipped metrics


def _gzip(path: Path, data: bytes) -> Path:
    import gzip

    gz = path.with_name(path.name + ".gz")
    gz.write_bytes(gzip.compress(data))
    path.unlink()
    return gz


@pytest.mark.parametrize(("run_name", "name"), [
    ("fsdp_tp-1rank-launch", "metrics-0.jsonl"), ("minimal-1rank", "metrics.jsonl")])
def test_gzipped_metrics_are_read_as_they_are(fixture_run, run_name, name):
    run = fixture_run(run_name)
    _gzip(run / name, (run / name).read_bytes())
    r = run_cli(run, "--config", "test/cfg")
    assert list(one_row(r).values()) == EXPECTED[run_name].split(",")
    assert notes_of(r) == [NO_THROUGHPUT_NOTE] * (run_name == "minimal-1rank") + [MFU_NOTE]


def test_a_gzipped_run_id_file_is_sniffed_and_read(tmp_path):
    run = good_run(tmp_path / "run")
    plain = one_row(run_cli(run, "--config", "c"))
    (run / "metrics-0.jsonl").rename(run / "20260811-182837.jsonl")
    _gzip(run / "20260811-182837.jsonl", (run / "20260811-182837.jsonl").read_bytes())
    assert one_row(run_cli(run, "--config", "c")) == plain


def test_a_cut_gzip_stream_is_a_truncated_file(tmp_path):
    """A job killed while writing its compressed metrics: the steps read so far count."""
    import gzip

    run = good_run(tmp_path / "run", n=40)
    data = gzip.compress((run / "metrics-0.jsonl").read_bytes(), mtime=0)
    (run / "metrics-0.jsonl").unlink()
    (run / "metrics-0.jsonl.gz").write_bytes(data[:-8])  # its lines, but no end marker
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == "40"
    assert "last line of metrics-0.jsonl.gz is truncated; ignored it" in notes_of(r)


def test_a_file_named_gz_that_is_not_gzip_is_an_error(tmp_path):
    run = write_run_info(tmp_path / "run").parent
    (run / "metrics-0.jsonl.gz").write_text(json.dumps(step(1, dt=1.0)) + "\n")
    line = error_line(run_cli(run, "--config", "c"))
    assert line.startswith(f"error: {run / 'metrics-0.jsonl.gz'}: cannot read metrics file: ")


def test_a_gzipped_file_is_hashed_as_it_is_on_disk(tmp_path):
    from helpers import sha256

    run = good_run(tmp_path / "run")
    gz = _gzip(run / "metrics-0.jsonl", (run / "metrics-0.jsonl").read_bytes())
    res = export_run(run, ExportOptions(config="c"), hash_files=True)
    assert res.read is not None
    assert res.read.digests[gz] == (gz.stat().st_size, sha256(gz))


# --------------------------------------------------------------------- a file's last record


def test_last_logged_step_reads_the_end_of_the_file(tmp_path):
    from ezpz_amsc.run.steps import TAIL_BYTES, last_logged_step

    p = tmp_path / "metrics-1.jsonl"
    recs = [step(i, rank=1, dt=0.5) for i in range(1, 2001)]  # 100 KB: more than one tail
    write_jsonl(p, recs)
    with open(p, "a") as f:
        f.write('{"timestamp": 1795990000.0, "rank": 1, "metr')  # killed mid-line
    assert p.stat().st_size > 4 * TAIL_BYTES
    epoch, last = last_logged_step(p, "train/iter")
    assert math.isnan(epoch) and last == 2000.0  # the cut line skipped, the one before read


def test_last_logged_step_carries_the_epoch(tmp_path):
    from ezpz_amsc.run.steps import last_logged_step

    p = tmp_path / "m.jsonl"
    write_jsonl(p, [{"timestamp": 1.0, "metrics": {"train/iter": 3, "train/epoch": 2}},
                    {"timestamp": 2.0, "metrics": {"precision/x": "bf16"}}])  # not a step
    assert last_logged_step(p, "train/iter") == (2.0, 3.0)


def test_last_logged_step_reads_further_back_for_a_wide_record(tmp_path):
    """A last record of 40 KiB: the first 16 KiB read holds no whole line, the next 64 do."""
    from ezpz_amsc.run.steps import TAIL_BYTES, TAIL_MAX_BYTES, last_logged_step

    p = tmp_path / "m.jsonl"
    wide = {**step(7, dt=1.0), "pad": "x" * 40_000}
    write_jsonl(p, [step(i, dt=1.0) for i in range(1, 7)] + [wide])
    assert TAIL_BYTES < 40_000 < TAIL_MAX_BYTES
    assert last_logged_step(p, "train/iter")[1] == 7.0
    huge = {**step(8, dt=1.0), "pad": "x" * (TAIL_MAX_BYTES + 10)}
    write_jsonl(p, [step(1, dt=1.0), huge])
    assert last_logged_step(p, "train/iter") is None  # no whole record in the last MiB


@pytest.mark.parametrize("case", ["missing", "gzip", "no-counter", "empty"])
def test_last_logged_step_is_unknown_when_it_cannot_be_read(tmp_path, case):
    from ezpz_amsc.run.steps import last_logged_step

    p = tmp_path / ("m.jsonl.gz" if case == "gzip" else "m.jsonl")
    if case == "gzip":
        p.write_bytes(b"\x1f\x8b")
    elif case == "no-counter":
        write_jsonl(p, [{"timestamp": 1.0, "metrics": {"train/step": 3}}])
    elif case == "empty":
        p.write_bytes(b"")
    assert last_logged_step(p, "train/iter") is None


def test_values_of_keys_reads_one_rank_in_a_window(tmp_path):
    from ezpz_amsc.run.steps import values_of_keys

    p = tmp_path / "metrics.jsonl"
    write_jsonl(p, [
        {"timestamp": 10.0, "rank": 0, "metrics": {"train/ckpt_s": 2.0}},
        {"timestamp": 11.0, "rank": 1, "metrics": {"train/ckpt_s": 50.0}},  # another rank
        {"timestamp": 12.0, "metrics": {"train/ckpt_s": 3.0, "ckpt_step": 5}},  # no rank: ok
        {"timestamp": 99.0, "rank": 0, "metrics": {"train/ckpt_s": 70.0}},  # outside
        {"timestamp": 13.0, "rank": 0, "metrics": {"train/ckpt_s": float("nan")}},
        "not json ckpt",
    ])
    steps = Steps(rank=0, files_read=[p])
    got = values_of_keys(steps, (b"ckpt",), lambda k: k.endswith("_s"), (10.0, 13.0))
    assert got == {"train/ckpt_s": [2.0, 3.0]}
    gone = Steps(rank=0, files_read=[tmp_path / "gone.jsonl"])
    assert values_of_keys(gone, (b"ckpt",), bool, (0.0, 1.0)) == {}
    assert values_of_keys(Steps(rank=0), (b"ckpt",), bool, (0.0, 1.0)) == {}


def test_values_of_keys_keeps_the_line_cap_the_steps_were_read_with(tmp_path):
    """The second pass skips a line the first pass skipped as too long: the cap a user
    gave travels with the steps, not the default."""
    from ezpz_amsc.run.steps import values_of_keys

    p = tmp_path / "metrics.jsonl"
    pad = "x" * 400
    write_jsonl(p, [
        {"timestamp": 10.0, "rank": 0, "metrics": {"train/iter": 1, "train/dt": 1.0}},
        {"timestamp": 11.0, "rank": 0, "metrics": {"train/iter": 2, "train/dt": 1.0,
                                                   "train/ckpt_s": 4.0, "pad": pad}},
        {"timestamp": 12.0, "rank": 0, "metrics": {"train/iter": 3, "train/dt": 1.0,
                                                   "train/ckpt_s": 2.0}},
    ])
    steps = read_steps(MetricsSource("interleaved", tmp_path, single=p), max_line=300)
    assert steps.max_line == 300 and steps.long_lines == 1 and len(steps) == 2
    got = values_of_keys(steps, (b"ckpt",), lambda k: k.endswith("_s"), (10.0, 13.0))
    assert got == {"train/ckpt_s": [2.0]}
    assert read_steps(MetricsSource("interleaved", tmp_path, single=p)).max_line > 300


def test_values_of_keys_reads_the_file_the_steps_came_from(tmp_path):
    """Rank 0's file held no step, so rank 1's was read: the second pass reads rank 1's
    too (the last file read), not the first file tried."""
    from ezpz_amsc.run.steps import values_of_keys

    (tmp_path / "metrics-0.jsonl").write_text("")
    write_jsonl(tmp_path / "metrics-1.jsonl", [
        {"timestamp": 11.0, "rank": 1, "metrics": {"train/iter": 1, "train/dt": 1.0}},
        {"timestamp": 12.0, "rank": 1, "metrics": {"train/iter": 2, "train/dt": 1.0,
                                                   "train/ckpt_s": 4.0}}])
    source = MetricsSource("per-rank", tmp_path, per_rank=RankFiles(tmp_path, {
        0: "metrics-0.jsonl", 1: "metrics-1.jsonl"}))
    steps = read_steps(source)
    assert (steps.rank, [f.name for f in steps.files_read]) == (
        1, ["metrics-0.jsonl", "metrics-1.jsonl"])
    got = values_of_keys(steps, (b"ckpt",), lambda k: k.endswith("_s"), (0.0, 99.0))
    assert got == {"train/ckpt_s": [4.0]}


@pytest.mark.slow
def test_the_fallback_past_50000_empty_rank_files_opens_each_once(tmp_path, monkeypatch):
    """Regression: when rank 0's file is empty, each rank tried copied the list of files
    tried so far (quadratic: 51 s at 100,000 ranks). Every file up to the first that holds
    steps is opened, once each, in rank order, and the details say so."""
    run = tmp_path / "run"
    n = 50_000
    write_run_info(run, GPUS_PER_NODE="12", world_size=str(n), WORLD_SIZE_IN_USE=str(n),
                   NUM_NODES="8334")
    for r in range(n - 1):
        os.close(os.open(run / f"metrics-{r}.jsonl", os.O_CREAT | os.O_WRONLY, 0o644))
    write_jsonl(run / f"metrics-{n - 1}.jsonl",
                [step(i, rank=n - 1, dt=0.5, tps=10.0) for i in (1, 2, 3)])
    opened = []
    real = steps_mod.open_regular
    monkeypatch.setattr(steps_mod, "open_regular", lambda p: (opened.append(p), real(p))[1])
    res = export_run(run, ExportOptions(config="c"))
    assert (res.row["steps"], res.details.rank) == ("3", n - 1)
    # then the cross-check reads the ends of three other ranks' files: first, middle, last
    assert opened == [run / f"metrics-{r}.jsonl" for r in (*range(n), 0, n // 2 - 1, n - 2)]
    assert res.details.files_read == [str(p) for p in opened[:n]]
    assert res.details.rank_files_not_read == 0
    assert f"rank 0 logged no step; used rank {n - 1}" in res.notes


# ------------------------------------------------------------------------ hashing beside the read


def test_hashing_leaves_the_skim_its_early_stop(tmp_path, monkeypatch):
    """A per-rank file hashed for a record is read as without hashing: the skim classifies its
    first 64 KB, then hands the rest to the line reader; the digest is still the whole file's."""
    from helpers import sha256

    from ezpz_amsc.run import skim as skim_mod
    from ezpz_amsc.run.steps import Digest, Digests

    run = write_run(tmp_path / "run", simple_steps(3000))
    path = run / "metrics-0.jsonl"
    assert path.stat().st_size > 4 * skim_mod.FIRST_READ_BYTES
    calls: list[int] = []
    real = skim_mod.classify_block
    monkeypatch.setattr(skim_mod, "classify_block", lambda *a: calls.append(a[1]) or real(*a))
    plain = read_steps(find_run_files(run).metrics)
    assert len(calls) == 1 and calls[0] <= skim_mod.FIRST_READ_BYTES
    digests = Digests()
    hashed = read_steps(find_run_files(run).metrics, MAX_LINE_BYTES, digests)
    assert len(calls) == 2 and calls[1] == calls[0]  # the same one block, hashing or not
    assert (len(hashed), list(hashed.series["tps"])) == (3000, list(plain.series["tps"]))
    assert digests == {path: Digest(path.stat().st_size, sha256(path))}
    assert digests.hashed_bytes == path.stat().st_size


def test_the_hash_budget_takes_whole_files_in_the_order_read(tmp_path):
    """Per-rank files read until one holds steps: each hashed while the budget lasts."""
    from helpers import sha256

    from ezpz_amsc.run.steps import Digest, Digests

    run = tmp_path / "run"
    write_jsonl(run / "metrics-0.jsonl", ["not json"])  # 9 bytes, no step
    write_jsonl(run / "metrics-1.jsonl", [step(i, rank=1, tps=5.0, dt=0.2) for i in (1, 2, 3)])
    write_run_info(run, WORLD_SIZE_IN_USE="2", world_size="2")
    first, second = run / "metrics-0.jsonl", run / "metrics-1.jsonl"
    size0, size1 = first.stat().st_size, second.stat().st_size
    for budget, hashed in [(None, 2), (size0 + size1, 2), (size0 + size1 - 1, 1), (size0, 1),
                           (size0 - 1, 0), (0, 0)]:
        digests = Digests(budget)
        steps = read_steps(find_run_files(run).metrics, MAX_LINE_BYTES, digests)
        assert (steps.rank, len(steps)) == (1, 3)
        want = {first: Digest(size0, sha256(first)), second: Digest(size1, sha256(second))}
        if hashed < 2:
            want[second] = Digest(size1, None)
        if hashed < 1:
            want[first] = Digest(size0, None)
        assert digests == want, budget
        assert digests.hashed_bytes == [0, size0, size0 + size1][hashed]


def test_an_empty_file_fits_any_budget(tmp_path):
    from ezpz_amsc.run.steps import Digest, Digests

    run = good_run(tmp_path / "run")
    (run / "metrics-0.jsonl").write_bytes(b"")
    digests = Digests(0)
    read_steps(find_run_files(run).metrics, MAX_LINE_BYTES, digests)
    empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # sha256 of b""
    assert digests[run / "metrics-0.jsonl"] == Digest(0, empty)


def test_a_read_that_fails_stops_the_hashing_thread(tmp_path, monkeypatch):
    """The parse raises: the thread stops reading at once (before the file closes), and no
    digest is kept."""
    import threading

    from ezpz_amsc.run.steps import Digests, _Hasher

    run = good_run(tmp_path / "run", n=500)
    stopping, reads = threading.Event(), []
    real_preadv, real_stop = os.preadv, _Hasher.stop

    def preadv(fd, buffers, offset):  # the first read returns only once stop() is called
        reads.append(offset)
        if len(reads) == 1:
            assert stopping.wait(10)
        return real_preadv(fd, buffers, offset)

    def stop(self):
        stopping.set()
        real_stop(self)

    def broken(f, limit):
        yield from []
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(steps_mod, "_HASH_BUFFER_BYTES", 1024)  # the file is ~60 chunks
    monkeypatch.setattr(steps_mod.os, "preadv", preadv)
    monkeypatch.setattr(_Hasher, "stop", stop)
    monkeypatch.setattr(steps_mod, "iter_lines", broken)
    monkeypatch.setattr(steps_mod, "SKIM", False)
    threads = threading.active_count()
    digests = Digests()
    with pytest.raises(AmscError) as e:
        read_steps(find_run_files(run).metrics, MAX_LINE_BYTES, digests)
    assert e.value.format_message() == (f"{run / 'metrics-0.jsonl'}: cannot read metrics file: "
                                        "Input/output error")
    assert digests == {}
    assert threading.active_count() == threads  # joined, not left running
    assert reads == [0]  # the read under way when stop() came, then no other


def test_a_file_the_hashing_thread_cannot_read_is_an_error(tmp_path, monkeypatch):
    from ezpz_amsc.run.steps import Digests

    run = good_run(tmp_path / "run")
    monkeypatch.delattr(steps_mod.os, "preadv")  # any failure of the thread: no digest
    with pytest.raises(AttributeError):
        read_steps(find_run_files(run).metrics, MAX_LINE_BYTES, Digests())

    def preadv(fd, buffers, offset):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(steps_mod.os, "preadv", preadv, raising=False)
    with pytest.raises(AmscError) as e:
        read_steps(find_run_files(run).metrics, MAX_LINE_BYTES, Digests())
    assert e.value.format_message() == (f"{run / 'metrics-0.jsonl'}: cannot read metrics file: "
                                        "Input/output error")


@pytest.mark.parametrize("tokens, first, run, rest", [
    ([512, 512.0, 512], 512.0, 3, []),  # one batch size: no column
    ([None, None], None, 2, []),  # no token count logged: no column either
    ([512, 512, 256, 512], 512.0, 2, [256.0, 512.0]),  # the column starts where it changes
    ([None, 512, 512], None, 1, [512.0, 512.0]),
    ([10**400, None, 7], None, 2, [7.0]),  # too large for a float: NaN, as absent
    ([-0.0, 0, 0.0], -0.0, 3, []),  # zero's sign is not kept: tokens count only when > 0
])
def test_tokens_are_held_as_a_leading_run_and_a_column(tmp_path, tokens, first, run, rest):
    from ezpz_amsc.run.reduce import _tokens_column

    recs = [{"timestamp": 1795990000.0 + i, "rank": 0,
             "metrics": {"train/iter": i + 1, "train/dt": 0.5,
                         **({} if t is None else {"train/tokens": t})}}
            for i, t in enumerate(tokens)]
    s = read_bytes_file(tmp_path, "".join(json.dumps(r) + "\n" for r in recs).encode(), False)
    assert (s.tokens_first if s.tokens_first == s.tokens_first else None, s.tokens_run) == (
        first, run)
    assert list(s.tokens) == rest
    column = _tokens_column(s).tolist()
    want = [first] * run + rest
    assert [x if x == x else None for x in column] == [
        None if x is None else float(x) for x in want]


def test_an_epoch_is_kept_only_where_it_changes(tmp_path):
    """Where the step number does not increase the epoch is read, and kept when it changed:
    a run without step numbers keeps one entry, not one per record."""
    plain = [{"timestamp": 1795990000.0 + i, "rank": 0, "metrics": {"train/dt": 0.5}}
             for i in range(50)]
    s = read_bytes_file(tmp_path, "".join(json.dumps(r) + "\n" for r in plain).encode(), False)
    assert len(s) == 50 and s.step_key is None
    assert list(s.epochs) == [0] and math.isnan(s.epochs[0])
    # train/iter 1, 1, 1, 2, 1, 1, 1, 1, 1: read at every record but the fourth
    epochs = [0, 0, 1, 5, 1, None, None, -0.0, 0.0]
    recs = [{"timestamp": 1795990000.0 + i, "rank": 0,
             "metrics": {"train/iter": 2 if i == 3 else 1, "train/dt": 0.5,
                         **({} if e is None else {"train/epoch": e})}}
            for i, e in enumerate(epochs)]
    s = read_bytes_file(tmp_path, "".join(json.dumps(r) + "\n" for r in recs).encode(), False)
    kept = {k: (None if v != v else (v, math.copysign(1, v))) for k, v in s.epochs.items()}
    assert kept == {0: (0.0, 1.0), 2: (1.0, 1.0), 5: None, 7: (0.0, -1.0), 8: (0.0, 1.0)}
    got = steps_mod.epoch_values(s).tolist()
    assert [x if x == x else None for x in got] == [0.0, 0.0, 1.0, 1.0, 1.0, None, None, -0.0,
                                                     0.0]
