"""Every shipped run, exported through the CLI: the exact row and stderr, and an
independent recomputation of each cell. The clean runs earn one note (mfu unknown on a
CPU); the runs of the shapes that go wrong (``NOTED``) earn exactly the notes listed."""

from __future__ import annotations

import json
import math
import statistics
import time

import pytest
from helpers import (
    ALL_RUNS,
    EXPECTED,
    FIXTURE_NAMES,
    MFU_NOTE,
    NO_THROUGHPUT_NOTE,
    NOTED,
    REPO,
    RUNS,
    copy_run,
    notes_of,
    one_row,
    read_records,
    run_cli,
)

from ezpz_amsc.results.schema import dashboard_problems


def test_every_fixture_has_an_expectation():
    """Each real run has its exact row here, or a case of tests/cases built on it (the
    outcome a user expects, written without reading the code)."""
    cased = {json.loads(p.read_text()).get("base", "").removeprefix("examples/runs/")
             for p in (REPO / "tests" / "cases").glob("*/case.json")}
    assert [r for r in ALL_RUNS if r not in {*EXPECTED, *NOTED, *cased}] == []


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_row_and_stderr_are_exact(name):
    """Every cross-check passes silently on real runs: the row exact, only the mfu note
    (and, for the examples that log no tokens/s, the note that says so)."""
    r = run_cli(RUNS / name, "--config", "test/cfg")
    row = one_row(r)
    assert list(row.values()) == EXPECTED[name].split(",")
    assert dashboard_problems(row) == []
    no_rate = [NO_THROUGHPUT_NOTE] if name in ("minimal-1rank", "diffusion-1rank") else []
    assert r.stderr == "".join(f"note: {n}\n" for n in [*no_rate, MFU_NOTE])


def _independent(name: str) -> dict[str, str]:
    """Recompute a fixture's row with nothing but json + statistics (rank 0's file)."""
    folder = RUNS / name
    path = folder / ("metrics.jsonl" if (folder / "metrics.jsonl").exists() else "metrics-0.jsonl")
    recs = []
    for line in path.read_text().splitlines():
        rec = json.loads(line)
        m = rec["metrics"]
        if rec.get("rank", 0) != 0 or not any(
                type(v) in (int, float) for v in m.values()):
            continue
        recs.append(rec)
    key = next(k for k in ("train/iter", "train/step", "iter") if k in recs[0]["metrics"])
    recs.sort(key=lambda r: (r["metrics"][key], r["timestamp"]))

    def get(r, name):
        for k in (f"train/{name}", name):
            if k in r["metrics"]:
                return r["metrics"][k]
        return None

    def med(name):
        vals = [get(r, name) for r in recs[1:]]
        vals = [v for v in vals if v is not None]
        return f"{statistics.median(vals):.3f}" if vals else ""

    dist = json.loads((folder / "run_info.json").read_text())["Distributed"]
    gpus = max(int(dist["WORLD_SIZE_IN_USE"]), int(dist["world_size"]))
    mfu = [get(r, "mfu") for r in recs]
    return {
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(recs[0]["timestamp"])),
        "system": dist["MACHINE"],
        "gpus": str(gpus),
        "wall_time_sec": f"{math.fsum(get(r, 'dt') for r in recs):.3f}",
        "throughput_tokens_per_sec": med("tps"),
        "throughput_tokens_per_sec_per_gpu": med("tps_per_gpu"),
        "mfu": "" if all(v == 0 for v in mfu) else med("mfu"),
        "tflops": med("tflops"),
        "final_loss": f"{get(recs[-1], 'loss'):.6f}",
        "steps": str(len(recs)),
    }


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_row_matches_independent_recomputation(name):
    row = one_row(run_cli(RUNS / name, "--config", "test/cfg"))
    for col, want in _independent(name).items():
        assert row[col] == want, col


def test_torchrun_trap_gives_world_size_not_world_size_in_use():
    dist = json.loads((RUNS / "fsdp_tp-2rank-torchrun/run_info.json").read_text())["Distributed"]
    assert dist["WORLD_SIZE_IN_USE"] == "1" and dist["world_size"] == "2"
    row = one_row(run_cli(RUNS / "fsdp_tp-2rank-torchrun", "--config", "test/cfg"))
    assert row["gpus"] == "2"


def test_precision_record_is_not_a_step():
    # metrics-0.jsonl has 31 lines: 30 steps and one all-strings precision/* record.
    lines = (RUNS / "fsdp_tp-2rank/metrics-0.jsonl").read_text().splitlines()
    assert len(lines) == 31 and any("precision/" in ln for ln in lines)
    assert one_row(run_cli(RUNS / "fsdp_tp-2rank", "--config", "c"))["steps"] == "30"


# ---------------------------------------------------------------- the runs of shapes that go wrong


@pytest.mark.parametrize("name", sorted(NOTED))
def test_noted_fixture_row_and_notes_are_exact(name, tmp_path):
    row, notes = NOTED[name]
    r = run_cli(copy_run(name, tmp_path), "--config", "test/cfg")
    assert list(one_row(r).values()) == row.split(",")
    assert notes_of(r) == notes


def _steps_of(path):
    return [x for x in read_records(path) if any(
        type(v) in (int, float) for v in x["metrics"].values())]


def test_logging_every_5th_step_estimates_the_steps_not_logged():
    """LOG_FREQ=5: steps 10, 15, .., 35 logged; ~30 steps, 24 of them not logged. Each gap
    at its neighbours' dt would be 1.81 s, more than the records' clock holds (the logged
    steps are the slow ones): the clock from step 10's record to step 35's, plus step 10
    and the 4 before it (at step 15's dt: step 10 is the warmup step)."""
    recs = _steps_of(RUNS / "minimal-logfreq5-1rank" / "metrics.jsonl")
    dts = [x["metrics"]["dt"] for x in recs]
    assert [x["metrics"]["iter"] for x in recs] == [10, 15, 20, 25, 30, 35]
    row = one_row(run_cli(RUNS / "minimal-logfreq5-1rank", "--config", "c"))
    span = recs[-1]["timestamp"] - recs[0]["timestamp"]
    assert row["wall_time_sec"] == f"{span + dts[0] + 4 * dts[1]:.3f}" == "1.610"
    assert float(row["wall_time_sec"]) > 4 * math.fsum(dts)  # never the 1/5 figure


def test_accumulation_rate_is_ten_times_what_the_clock_sustains():
    """dt times the last of 8 micro-batches; train/tps = 2,048 tokens / dt."""
    recs = _steps_of(RUNS / "history-accum8-1rank" / "20261201-210557.jsonl")
    made = [x["metrics"]["train/tps"] * x["metrics"]["train/dt"] for x in recs]
    assert max(made) - min(made) < 1e-6 * 2048 and statistics.median(made) == 2048
    ts = [x["timestamp"] for x in recs]
    clock = 2048 * 24 / (ts[-1] - ts[0])
    assert f"{clock:,.0f}" == "1,591"
    assert statistics.median(x["metrics"]["train/tps"] for x in recs[1:]) > 10 * clock


def test_killed_relaunch_started_after_the_provenance_was_written(tmp_path):
    run = copy_run("fsdp_tp-relaunch-killed", tmp_path)
    first = _steps_of(run / "metrics-0.jsonl")[0]["timestamp"]
    assert 110 < first - (run / "run_info.json").stat().st_mtime < 130  # 2 min
    row = one_row(run_cli(run, "--config", "c"))
    recs = _steps_of(run / "metrics-0.jsonl")
    assert row["steps"] == "13" and len(recs) == 13
    assert row["throughput_tokens_per_sec"] == (
        f"{statistics.median(x['metrics']['train/tps'] for x in recs[1:]):.3f}")
