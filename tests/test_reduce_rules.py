"""Warmup, reducers, wall time and reading rules on synthetic runs (SPEC §2.2–§2.3)."""

from __future__ import annotations

import builtins
import errno
import json
import math

import pytest
from conftest import fail_for, one_row, run_cli, step, write_jsonl, write_run_info

SUNSPOT_TPS = [1045.1, 34600.8, 34686.4, 34715.4, 34832.8, 34650.0]
SUNSPOT_DT = [3.92, 0.118, 0.1181, 0.118, 0.1176, 0.1182]


@pytest.fixture
def sunspot(tmp_path):
    run = tmp_path / "sunspot"
    write_run_info(run, MACHINE="SunSpot", NUM_NODES="1", NGPUS="12", GPUS_PER_NODE="12",
                   WORLD_SIZE_IN_USE="12", world_size="12")
    write_jsonl(run / "metrics-0.jsonl", [
        step(i + 1, dt=dt, tps=tps, loss=8.0 - i) for i, (dt, tps) in
        enumerate(zip(SUNSPOT_DT, SUNSPOT_TPS, strict=True))
    ])
    return run


def test_sunspot_default_row_drops_warmup_and_takes_median(sunspot):
    row = one_row(run_cli(sunspot, "--config", "agpt-2b/bs1/seq2048/tp1"))
    assert float(row["throughput_tokens_per_sec"]) > 34_000
    assert row["throughput_tokens_per_sec"] == "34686.400"
    # No train/tps_per_gpu logged: derived as global / gpus.
    assert row["throughput_tokens_per_sec_per_gpu"] == f"{34686.4 / 12:.3f}"
    assert (row["system"], row["nodes"], row["gpus"]) == ("SunSpot", "1", "12")


def test_sunspot_mean_without_warmup_is_dragged_down(sunspot):
    row = one_row(run_cli(sunspot, "--config", "c", "--reducer", "mean", "--warmup", "0"))
    assert float(row["throughput_tokens_per_sec"]) < 30_000
    assert row["throughput_tokens_per_sec"] == f"{sum(SUNSPOT_TPS) / 6:.3f}"


def test_wall_time_is_sum_of_all_dt_including_warmup(sunspot):
    row = one_row(run_cli(sunspot, "--config", "c", "--warmup", "3"))
    assert row["wall_time_sec"] == f"{math.fsum(SUNSPOT_DT):.3f}"
    assert row["steps"] == "6"


@pytest.mark.parametrize("reducer,expected", [
    ("median", 34686.4), ("mean", sum(SUNSPOT_TPS[1:]) / 5), ("max", 34832.8),
    ("min", 34600.8), ("last", 34650.0),
])
def test_reducers(sunspot, reducer, expected):
    row = one_row(run_cli(sunspot, "--config", "c", "--reducer", reducer))
    assert row["throughput_tokens_per_sec"] == f"{expected:.3f}"


def test_warmup_longer_than_series_keeps_whole_series(sunspot):
    r = run_cli(sunspot, "--config", "c", "--warmup", "50")
    row = one_row(r)
    whole = sorted(SUNSPOT_TPS)
    assert row["throughput_tokens_per_sec"] == f"{(whole[2] + whole[3]) / 2:.3f}"
    assert "--warmup 50 leaves no dt or tps values; reduced all 6 steps" in r.stderr


def test_flags_override_provenance(sunspot):
    row = one_row(run_cli(sunspot, "--config", "c", "--system", "Aurora", "--nodes", "2",
                          "--gpus", "24"))
    assert (row["system"], row["nodes"], row["gpus"]) == ("Aurora", "2", "24")


def test_status_and_error_columns(sunspot):
    row = one_row(run_cli(sunspot, "--config", "c", "--status", "fail", "--error", "NCCL timeout"))
    assert (row["status"], row["error"]) == ("fail", "NCCL timeout")
    assert row["throughput_tokens_per_sec"] == "34686.400"


def test_wall_time_flag_wins_and_is_noted(sunspot):
    r = run_cli(sunspot, "--config", "c", "--wall-time-sec", "812.5")
    assert one_row(r)["wall_time_sec"] == "812.500"
    assert "summed step time is" in r.stderr


def test_records_sorted_by_step_then_timestamp(tmp_path):
    run = tmp_path / "run"
    write_run_info(run)
    recs = [step(i, dt=1.0, tps=100.0 * i, loss=float(i)) for i in (3, 1, 2, 4)]
    write_jsonl(run / "metrics-0.jsonl", recs)
    r = run_cli(run, "--config", "c", "--reducer", "last")
    row = one_row(r)
    assert row["final_loss"] == "4.000000"
    assert row["throughput_tokens_per_sec"] == "400.000"
    assert row["timestamp"] == "2026-11-29T22:06:41Z"  # step 1's timestamp
    assert "out of order" in r.stderr


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


def test_truncated_last_line_is_skipped_with_note(tmp_path, fixture_run):
    run = fixture_run("fsdp_tp-1rank-launch")
    p = run / "metrics-0.jsonl"
    data = p.read_bytes()
    p.write_bytes(data + data.splitlines(keepends=True)[-1][:300])  # killed mid-write
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == "30"
    assert "last line of metrics-0.jsonl is truncated" in r.stderr


def test_interleaved_two_rank_file_uses_rank_0_only(tmp_path):
    run = tmp_path / "run"
    write_run_info(run, WORLD_SIZE_IN_USE="2", world_size="2")
    recs = []
    for i in range(1, 6):
        recs.append(step(i, rank=1, dt=9.0, tps=1.0, loss=99.0))
        recs.append(step(i, rank=0, dt=1.0, tps=500.0 + i, loss=float(i)))
    write_jsonl(run / "metrics.jsonl", recs)
    row = one_row(run_cli(run, "--config", "c"))
    assert row["steps"] == "5"
    assert row["wall_time_sec"] == "5.000"
    assert row["throughput_tokens_per_sec"] == "503.500"
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


def test_run_id_named_metrics_file(tmp_path, fixture_run):
    run = fixture_run("fsdp_tp-1rank-launch")
    (run / "metrics-0.jsonl").rename(run / "20260811-182837.jsonl")
    row = one_row(run_cli(run, "--config", "test/cfg"))
    assert row["throughput_tokens_per_sec"] == "7443.215"


def test_bare_keys_and_tokens_per_sec(tmp_path):
    run = tmp_path / "run"
    write_run_info(run)
    recs = [{"timestamp": 1795990000.0 + i, "rank": 0,
             "metrics": {"train/step": i, "train/tokens_per_sec": 1000.0 * (i + 1),
                         "dt": 0.5, "loss": 3.0}} for i in range(0, 5)]
    write_jsonl(run / "metrics.jsonl", recs)
    row = one_row(run_cli(run, "--config", "c"))
    assert row["throughput_tokens_per_sec"] == "3500.000"  # median of 2000..5000
    assert row["wall_time_sec"] == "2.500"
    assert row["final_loss"] == "3.000000"


def test_only_the_chosen_rank_file_is_opened_among_200(tmp_path, monkeypatch):
    run = tmp_path / "run"
    write_run_info(run, WORLD_SIZE_IN_USE="200", world_size="200", GPUS_PER_NODE="12",
                   NUM_NODES="17")
    for r in range(200):
        write_jsonl(run / f"metrics-{r}.jsonl", [step(i, rank=r, dt=1.0) for i in range(1, 4)])
    opened: list[str] = []
    real_open = builtins.open

    def counting_open(file, *a, **kw):
        opened.append(str(file))
        return real_open(file, *a, **kw)

    monkeypatch.setattr(builtins, "open", counting_open)
    row = one_row(run_cli(run, "--config", "c"))
    rank_files = [p for p in opened if "metrics-" in p]
    assert rank_files == [str(run / "metrics-0.jsonl")]
    assert (row["gpus"], row["nodes"]) == ("200", "17")


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


def test_unreadable_run_id_jsonl_is_noted(tmp_path, monkeypatch):
    run = tmp_path / "run"
    write_run_info(run)
    write_jsonl(run / "metrics-0.jsonl", [step(i, dt=1.0) for i in range(1, 3)])
    write_jsonl(run / "20260811-182837.jsonl", [step(1, dt=1.0)])
    fail_for(monkeypatch, run / "20260811-182837.jsonl", errno.EACCES)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == "2"
    assert "note: skipped 20260811-182837.jsonl: cannot be read" in r.stderr
