"""Polaris, 512 nodes x 4 A100: a clean fsdp_tp run at full scale (2048 ranks, 25 steps)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 1 * 4096
FLOPS_PER_TOKEN = 8.3e10  # a ~13B Llama at seq 4096


def build(run: Path) -> None:
    g.fsdp_run(run, system="polaris", nodes=512, seed=303, start="2026-11-07T22:15:31",
               n_steps=25, step_time=2.88, tokens_per_dp=TOKENS,
               flops_per_token=FLOPS_PER_TOKEN, jobid=3290511, keep=(1, 1024, 2047),
               overhead=0.15, warmup_factor=5.0,
               program_args="--tp 1 --model llama2-13b --dataset random --train-iters 25 "
                            "--epochs 1 --batch-size 1 --seq-len 4096")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    about = (
        "Polaris at full scale: 512 nodes x 4 A100, `mpiexec --envall --line-buffer "
        "--np=2048 --ppn=4 --hostfile=...` fsdp_tp (tp 1, bs 1 x seq 4096 per rank), 25 "
        "steps; files kept: metrics-0, -1, -1024, -2047 (a real run keeps 2048; HOSTS lists "
        "all 512 nodes). Provenance: MACHINE Polaris, NUM_NODES 512, NGPUS 2048, "
        "GPUS_PER_NODE 4, world_size 2048. gpus = 2048; nodes = 2048 / --ppn=4 = 512. "
        f"train/tokens = 2048 x 4096 = {2048 * TOKENS} (global); tps x dt / tokens = "
        f"{f['ratio']}; tps / tps_per_gpu = {f['gpus_ratio']}; tflops = 8.3e10 x 4096 / dt / "
        f"1e12 per A100, mfu against 312: tflops / (mfu/100) = {f['implied']}. wall_time_sec "
        f"= sum of 25 dt = {c['wall_time_sec']} (warmup {f['dt0']} s included); medians of "
        f"steps 2..25: tps {c['throughput_tokens_per_sec']}, per GPU "
        f"{c['throughput_tokens_per_sec_per_gpu']}, mfu {c['mfu']}, tflops {c['tflops']}; "
        f"summed dt covers {f['cover']} of the span (150 ms of cross-rank aggregation per "
        "record at this scale). A right run at scale: published exactly."
    )
    cells = {"system": "Polaris", "nodes": "512", "gpus": "2048", **c}
    return {"about": about, "args": ["--config", "llama2-13b/bs1/seq4096/tp1"],
            "expect": {"exit": 0, "cells": cells}}
