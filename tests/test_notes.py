"""Every ``note:`` the export can print, each triggered by a run that earns it.

Each case builds a small run directory, exports it through the CLI, and checks
that the row still comes out and that stderr carries the note; ``--quiet``
must silence every one of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import RUNS, one_row, run_cli, step, write_jsonl, write_run_info

from ezpz_amsc.export import ExportOptions, export_run

Build = Callable[[Path], tuple[Path, list[str]]]


def _run(tmp: Path, records: list, *, run_info: dict | None = None,
         name: str = "metrics-0.jsonl") -> Path:
    write_jsonl(tmp / "run" / name, records)
    write_run_info(tmp / "run", **(run_info or {}))
    return tmp / "run"


def _steps(n: int, **metrics) -> list[dict]:
    return [step(i, dt=0.5, tps=1000.0 + i, loss=2.0, **metrics) for i in range(1, n + 1)]


def rank0_silent(tmp: Path) -> tuple[Path, list[str]]:
    run = _run(tmp, [], name="metrics-0.jsonl")
    write_jsonl(run / "metrics-1.jsonl", [step(i, rank=1, dt=0.5, tps=9.0) for i in (1, 2, 3)])
    return run, []


def nonfinite(tmp: Path) -> tuple[Path, list[str]]:
    recs = _steps(4)
    recs[2]["metrics"]["train/tps"] = float("nan")
    return _run(tmp, recs), []


def unparsable(tmp: Path) -> tuple[Path, list[str]]:
    recs: list = _steps(4)
    recs.insert(2, '{"timestamp": 1, "rank": 0, "metrics": {"train/iter": 2')
    return _run(tmp, recs), []


def truncated(tmp: Path) -> tuple[Path, list[str]]:
    run = _run(tmp, _steps(4))
    with open(run / "metrics-0.jsonl", "a") as f:
        f.write('{"timestamp": 1795990005.0, "rank": 0, "metrics": {"train/it')
    return run, []


def no_finalize(tmp: Path) -> tuple[Path, list[str]]:
    write_jsonl(tmp / "run" / "metrics-0.jsonl", _steps(4))
    return tmp / "run", ["--system", "Aurora", "--nodes", "1", "--gpus", "1"]


def wall_flag(tmp: Path) -> tuple[Path, list[str]]:
    return _run(tmp, _steps(4)), ["--wall-time-sec", "99"]


def per_gpu_only(tmp: Path) -> tuple[Path, list[str]]:
    recs = [step(i, dt=0.5, tps_per_gpu=500.0) for i in (1, 2, 3)]
    return _run(tmp, recs, run_info={"world_size": "2", "WORLD_SIZE_IN_USE": "2"}), []


def global_only(tmp: Path) -> tuple[Path, list[str]]:
    return _run(tmp, _steps(3), run_info={"world_size": "2", "WORLD_SIZE_IN_USE": "2"}), []


def mfu_zero(tmp: Path) -> tuple[Path, list[str]]:
    return _run(tmp, _steps(3, mfu=0.0)), []


def one_step(tmp: Path) -> tuple[Path, list[str]]:
    return _run(tmp, _steps(1)), []


def out_of_order(tmp: Path) -> tuple[Path, list[str]]:
    recs = _steps(4)
    recs[1], recs[2] = recs[2], recs[1]
    return _run(tmp, recs), []


def no_step_key(tmp: Path) -> tuple[Path, list[str]]:
    recs = _steps(4)
    del recs[3]["metrics"]["train/iter"]
    return _run(tmp, recs), []


def restarted(tmp: Path) -> tuple[Path, list[str]]:
    again = [{**r, "timestamp": r["timestamp"] + 600} for r in _steps(2)]
    return _run(tmp, _steps(3) + again), ["--attempt", "last"]


def run_info_bad_json(tmp: Path) -> tuple[Path, list[str]]:
    run = _run(tmp, _steps(3))
    (run / "run_info.json").write_text("{not json")
    return run, ["--system", "Aurora", "--nodes", "1", "--gpus", "1"]


def run_info_not_utf8(tmp: Path) -> tuple[Path, list[str]]:
    run = _run(tmp, _steps(3))
    (run / "run_info.json").write_bytes(b'{"Distributed": {"MACHINE": "\xff"}}')
    return run, ["--system", "Aurora", "--nodes", "1", "--gpus", "1"]


def run_info_no_section(tmp: Path) -> tuple[Path, list[str]]:
    run = _run(tmp, _steps(3))
    (run / "run_info.json").write_text(json.dumps({"Paths": {}}))
    return run, ["--system", "Aurora", "--nodes", "1", "--gpus", "1"]


def odd_count(tmp: Path) -> tuple[Path, list[str]]:
    return _run(tmp, _steps(3), run_info={"world_size": "two"}), []


def gpus_not_multiple(tmp: Path) -> tuple[Path, list[str]]:
    return _run(tmp, _steps(3), run_info={"GPUS_PER_NODE": "4", "NUM_NODES": "2"}), ["--gpus", "6"]


def logged_every_10(tmp: Path) -> tuple[Path, list[str]]:
    recs = [step(i, dt=0.5, tps=1000.0, loss=1.0) for i in range(10, 301, 10)]
    return _run(tmp, recs), []


def logged_every_10_flag(tmp: Path) -> tuple[Path, list[str]]:
    run, _ = logged_every_10(tmp)
    return run, ["--wall-time-sec", "1234"]


def logged_with_holes(tmp: Path) -> tuple[Path, list[str]]:
    recs = [step(i, dt=0.5, tps=1000.0) for i in (1, 2, 3, 4, 8, 9, 10)]
    return _run(tmp, recs), []


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
    ("one-step", one_step, ["--warmup 1 leaves no dt or tps values; reduced all 1 step"]),
    ("out-of-order", out_of_order, ["records were out of order; sorted 4 steps"]),
    ("no-step-key", no_step_key,
     ["left out 1 record without train/iter (eval batches, summaries): not training steps"]),
    ("restarted", restarted,
     ["exported attempt #2 steps 1..2 from 2026-11-29T22:16:41Z (2 records) of 2; "
      "left out 3 records of the others"]),
    ("run-info-bad-json", run_info_bad_json, ["skipped run_info.json: not valid JSON"]),
    ("run-info-not-utf8", run_info_not_utf8, ["skipped run_info.json: not UTF-8"]),
    ("run-info-no-section", run_info_no_section, ["run_info.json has no 'Distributed' section"]),
    ("odd-count", odd_count, ["ignored world_size='two' from run_info.json: not a usable count"]),
    ("gpus-not-multiple", gpus_not_multiple, ["--gpus 6 is not a multiple of GPUS_PER_NODE 4"]),
    ("logged-every-10", logged_every_10,
     ["wall_time_sec covers 30 of ~300 steps (logged every 10 steps, steps 10..300); "
      "pass --wall-time-sec"]),
    ("logged-every-10-flag", logged_every_10_flag,
     ["wall_time_sec from --wall-time-sec; summed step time is 15.000 and covers 30 of ~300"]),
    ("logged-with-holes", logged_with_holes,
     ["wall_time_sec covers 7 of ~10 steps (logged with gaps, steps 1..10)"]),
]


def _notes(stderr: str) -> list[str]:
    return [ln[len("note: "):] for ln in stderr.splitlines() if ln.startswith("note: ")]


@pytest.mark.parametrize(("build", "expected"), [c[1:] for c in NOTE_CASES],
                         ids=[c[0] for c in NOTE_CASES])
def test_note_is_printed(tmp_path, build, expected):
    run, args = build(tmp_path)
    result = run_cli(run, "--config", "c", *args)
    one_row(result)
    notes = "\n".join(_notes(result.stderr))
    for fragment in expected:
        assert fragment in notes, result.stderr


@pytest.mark.parametrize(("build", "expected"), [c[1:] for c in NOTE_CASES],
                         ids=[c[0] for c in NOTE_CASES])
def test_quiet_silences_note(tmp_path, build, expected):
    run, args = build(tmp_path)
    loud = run_cli(run, "--config", "c", *args)
    quiet = run_cli(run, "--config", "c", *args, "-q")
    assert _notes(loud.stderr)
    assert quiet.stderr == ""
    assert one_row(quiet) == one_row(loud)


def test_long_line_note(tmp_path):
    # Needs a small line limit (not a CLI flag), so through the pipeline directly.
    run = _run(tmp_path, _steps(3))
    with open(run / "metrics-0.jsonl", "a") as f:
        f.write(json.dumps(step(4, dt=0.5, blob="x" * (1 << 20))) + "\n")
    result = export_run(run, ExportOptions(config="c", max_line_bytes=1 << 20))
    assert "skipped 1 line over 1 MiB unread" in result.notes
    assert result.row["steps"] == "3"


def test_logging_gap_does_not_touch_the_number(tmp_path):
    run, _ = logged_every_10(tmp_path)
    row = one_row(run_cli(run, "--config", "c"))
    assert row["wall_time_sec"] == "15.000"  # 30 logged steps x 0.5 s, not scaled to ~300
    assert row["steps"] == "30"


@pytest.mark.parametrize("name", ["fsdp_tp-2rank", "minimal-1rank", "diffusion-1rank"])
def test_finished_contiguous_runs_raise_no_gap_or_unfinished_note(name):
    # minimal-1rank starts logging at step 6: a late start, not a gap.
    result = run_cli(RUNS / name, "--config", "c")
    one_row(result)
    assert "covers" not in result.stderr
    assert "unfinished" not in result.stderr


def test_unfinished_note_keeps_status_fail(tmp_path):
    run, args = no_finalize(tmp_path)
    result = run_cli(run, "--config", "c", "--status", "fail", *args)
    assert one_row(result)["status"] == "fail"
    (note,) = [n for n in _notes(result.stderr) if "unfinished" in n]
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
    one_row(result)
    assert "unfinished" not in result.stderr


@pytest.mark.parametrize("args", [["--warmup", "-1"], ["--reducer", "mode"]])
def test_quiet_still_shows_errors(tmp_path, args):
    run = _run(tmp_path, _steps(3))
    result = run_cli(run, "--config", "c", "-q", *args)
    assert result.exit_code != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")


def test_quiet_still_shows_missing_provenance_error(tmp_path):
    write_jsonl(tmp_path / "run" / "metrics-0.jsonl", _steps(3))
    result = run_cli(tmp_path / "run", "--config", "c", "--quiet")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: cannot tell system, gpus, nodes")
    assert result.stdout == ""
