"""The benchmark's synthetic runs are shaped like ezpz's and export correctly (small sizes)."""

from __future__ import annotations

import json
import statistics
import sys

import pytest
from helpers import REPO, one_row, run_cli

sys.path.insert(0, str(REPO / "benchmarks"))
import make_run  # noqa: E402


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_of_synthetic_run(tmp_path):
    run = make_run.make_run(tmp_path / "run", ranks=3, steps=20, seed=7, checkpoint_files=10,
                            nonfinite_every=7)
    result = run_cli(run, "--config", "bench")
    row = one_row(result)

    recs = [r for r in _records(run / "metrics-0.jsonl") if "train/iter" in r["metrics"]]
    assert len(recs) == 20
    tps = [r["metrics"]["train/tps"] for r in recs[1:]]  # --warmup 1
    losses = [r["metrics"]["train/loss"] for r in recs]
    assert row["steps"] == "20"
    assert row["system"] == "Aurora" and row["gpus"] == "3" and row["nodes"] == "1"
    assert row["throughput_tokens_per_sec"] == f"{statistics.median(tps):.3f}"
    assert row["wall_time_sec"] == f"{sum(r['metrics']['train/dt'] for r in recs):.3f}"
    assert row["final_loss"] == f"{losses[-1]:.6f}"
    assert "dropped 2 non-finite values (loss 2)" in result.stderr  # steps 7 and 14


def test_shape_matches_ezpz(tmp_path):
    run = make_run.make_run(tmp_path / "run", ranks=2, steps=3, seed=0, checkpoint_files=5)
    rank0, rank1 = _records(run / "metrics-0.jsonl"), _records(run / "metrics-1.jsonl")
    # precision/* all-strings record after step 1, on every rank
    for recs in (rank0, rank1):
        assert len(recs) == 4
        assert all(isinstance(v, str) for v in recs[1]["metrics"].values())
    # rank 0 of a multi-rank run: aggregated, and flat /mean|max|min|std copies
    m0 = rank0[0]["metrics"]
    assert rank0[0]["aggregated"]["train/tps/mean"] == m0["train/tps/mean"]
    assert "aggregated" not in rank1[0] and "train/tps/mean" not in rank1[0]["metrics"]
    assert len(m0) > 120 and m0["opt/iter"] == [1]
    info = json.loads((run / "run_info.json").read_text())
    assert all(isinstance(v, str) for v in info["Distributed"].values())
    assert "### Distributed" in (run / "train" / "report-train.md").read_text()
    log = _records(run / "2026-11-29-221835-rank0.jsonl")
    assert all("message" in r and "metrics" not in r for r in log)
    assert len(list((run / "checkpoints").rglob("*"))) - len(
        [p for p in (run / "checkpoints").rglob("*") if p.is_dir()]) == 5
    assert list((run / "plots").rglob("*.txt"))


@pytest.mark.parametrize("ranks,aggregated", [(1, False), (384, True), (385, False)])
def test_aggregated_only_up_to_384_ranks(tmp_path, ranks, aggregated):
    path = make_run.write_metrics(tmp_path, 0, ranks, 2, seed=0)
    assert ("aggregated" in _records(path)[0]) == aggregated


def test_deterministic(tmp_path):
    a = make_run.make_run(tmp_path / "a", ranks=2, steps=5, seed=3)
    b = make_run.make_run(tmp_path / "b", ranks=2, steps=5, seed=3)
    c = make_run.make_run(tmp_path / "c", ranks=2, steps=5, seed=4)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    assert (a / "metrics-0.jsonl").read_bytes() != (c / "metrics-0.jsonl").read_bytes()


def test_interleaved_run_is_hf_shaped_and_exports(tmp_path):
    run = make_run.make_run(tmp_path / "run", ranks=9, steps=6, seed=2, interleaved=True)
    assert not list(run.glob("metrics-*.jsonl"))
    recs = _records(run / "metrics.jsonl")
    assert len(recs) == 9 * 6
    blocks = [recs[i * 9:(i + 1) * 9] for i in range(6)]
    for step, block in enumerate(blocks, start=1):
        assert sorted(r["rank"] for r in block) == list(range(9))
        assert {r["metrics"]["train/step"] for r in block} == {step}
        # rank 0 a few lines into the block on odd steps, in its middle on even ones
        assert [r["rank"] for r in block].index(0) == (3 if step % 2 else 4)
    assert all("aggregated" not in r for r in recs)
    line_bytes = (run / "metrics.jsonl").stat().st_size / len(recs)
    assert 380 < line_bytes < 460  # ~430 bytes a line at 1,024 ranks, like hf's

    result = run_cli(run, "--config", "bench")
    row = one_row(result)
    mine = [r["metrics"] for r in recs if r["rank"] == 0]
    tps = [m["train/tokens_per_sec"] for m in mine[1:]]  # --warmup 1
    assert row["steps"] == "6" and row["gpus"] == "9"
    assert row["throughput_tokens_per_sec"] == f"{statistics.median(tps):.3f}"
    assert row["throughput_tokens_per_sec_per_gpu"] == f"{statistics.median(tps) / 9:.3f}"
    assert row["wall_time_sec"] == f"{sum(m['train/dt'] for m in mine):.3f}"
    assert row["final_loss"] == f"{mine[-1]['train/loss']:.6f}"
    info = json.loads((run / "run_info.json").read_text())
    assert info["Paths"]["Metrics JSONL"].endswith("/metrics.jsonl")


def test_interleaved_refuses_nonfinite(tmp_path):
    with pytest.raises(ValueError, match="per-rank"):
        make_run.make_run(tmp_path / "run", ranks=2, steps=2, interleaved=True, nonfinite_every=2)


def test_synthetic_sweep_is_a_clean_results_file(tmp_path):
    from helpers import run_group

    sweep = tmp_path / "sweep.csv"
    make_run.write_sweep(sweep, 500, seed=3)
    text = sweep.read_text()
    assert text == (make_run.write_sweep(tmp_path / "again.csv", 500, seed=3)
                    or (tmp_path / "again.csv").read_text())  # seeded: the same bytes
    result = run_group("check", str(sweep), "--format", "json", "-q")
    assert result.exit_code == 0
    assert {k: v for k, v in json.loads(result.stdout).items() if k in ("rows", "clean")} == {
        "rows": 500, "clean": True}
    lines = text.splitlines()
    assert len(lines) == 501 and lines[0].startswith("timestamp,system,config,")
    assert {line.split(",")[5] for line in lines[1:]} == {"pass", "fail"}
