"""Every real fixture run, exported through the CLI, every cell checked."""

from __future__ import annotations

import json
import math
import statistics
import time

import pytest
from conftest import FIXTURE_NAMES, RUNS, one_row, run_cli

from ezpz_amsc.row import HEADER, dashboard_problems

# Expected rows with --config test/cfg and defaults. The two fsdp_tp 2-rank rows are
# the issue's own figures; the others were checked against the independent
# recomputation below.
EXPECTED = {
    "fsdp_tp-2rank":
        "2026-11-29T22:18:43Z,localhost,test/cfg,1,2,pass,4.034,3930.349,1965.174,,0.014,7.989204,30,",
    "fsdp_tp-2rank-torchrun":
        "2026-11-29T22:20:02Z,localhost,test/cfg,1,2,pass,3.837,4153.832,2076.916,,0.015,7.922108,30,",
    "fsdp_tp-1rank-launch":
        "2026-11-29T22:19:13Z,localhost,test/cfg,1,1,pass,1.148,7443.215,7443.215,,0.053,7.871284,30,",
    "minimal-1rank":
        "2026-11-29T22:21:30Z,localhost,test/cfg,1,1,pass,0.027,,,,0.022,338.000000,34,",
    "diffusion-1rank":
        "2026-11-29T22:22:15Z,localhost,test/cfg,1,1,pass,0.159,,,,0.017,1.000221,40,",
}


def test_every_fixture_has_an_expectation():
    assert sorted(EXPECTED) == FIXTURE_NAMES


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_row_exact(name):
    row = one_row(run_cli(RUNS / name, "--config", "test/cfg"))
    assert list(row.values()) == EXPECTED[name].split(",")
    assert dashboard_problems(row) == []


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


def test_minimal_run_yields_wall_time_tflops_and_loss():
    # Un-prefixed keys (iter, dt, loss, tflops): the upstream exporter gives an empty row.
    row = one_row(run_cli(RUNS / "minimal-1rank", "--config", "c"))
    assert float(row["wall_time_sec"]) > 0
    assert float(row["tflops"]) > 0
    assert row["final_loss"] == "338.000000"
    assert row["steps"] == "34"


def test_all_zero_mfu_is_empty_with_a_note():
    r = run_cli(RUNS / "fsdp_tp-2rank", "--config", "c")
    assert one_row(r)["mfu"] == ""
    assert "mfu is 0.0 on every step" in r.stderr


def test_precision_record_is_not_a_step():
    # metrics-0.jsonl has 31 lines: 30 steps and one all-strings precision/* record.
    lines = (RUNS / "fsdp_tp-2rank/metrics-0.jsonl").read_text().splitlines()
    assert len(lines) == 31 and any("precision/" in ln for ln in lines)
    assert one_row(run_cli(RUNS / "fsdp_tp-2rank", "--config", "c"))["steps"] == "30"


def test_structured_log_is_never_read_as_metrics(tmp_path, fixture_run):
    run = fixture_run("fsdp_tp-1rank-launch")
    # Only the structured log left: nothing to export, and it says so.
    (run / "metrics-0.jsonl").unlink()
    r = run_cli(run, "--config", "c")
    assert r.exit_code == 1
    assert "no metrics found" in r.stderr


def test_header_and_order_exact():
    r = run_cli(RUNS / "fsdp_tp-2rank", "--config", "c")
    assert r.stdout.splitlines()[0] == ",".join(HEADER)


def test_no_header():
    r = run_cli(RUNS / "fsdp_tp-2rank", "--config", "c", "--no-header")
    assert r.exit_code == 0
    assert len(r.stdout.splitlines()) == 1
    assert r.stdout.startswith("2026-11-29T22:18:43Z,")
