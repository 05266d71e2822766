"""Perlmutter, 16 nodes x 4 A100 under srun: a clean fsdp_tp run (64 ranks, 30 steps)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 1 * 4096  # --batch-size 1 x --seq-len 4096 per data-parallel rank
FLOPS_PER_TOKEN = 4.3e10  # a ~7B Llama: 6N plus attention at seq 4096


def build(run: Path) -> None:
    g.fsdp_run(run, system="perlmutter", nodes=16, seed=202, start="2026-11-05T03:41:07",
               n_steps=30, step_time=1.26, tokens_per_dp=TOKENS,
               flops_per_token=FLOPS_PER_TOKEN, jobid=41920377, keep=(1, 32, 63),
               overhead=0.08, warmup_factor=9.0,
               program_args="--tp 1 --model llama3-7b --dataset random --train-iters 30 "
                            "--epochs 1 --batch-size 1 --seq-len 4096")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    about = (
        "Perlmutter, 16 GPU nodes x 4 A100, ezpz's Slurm line `srun -u --verbose -N16 -n64 "
        "--gpus-per-node=4` fsdp_tp (tp 1, bs 1 x seq 4096 per rank), 30 steps; files kept: "
        "metrics-0, -1, -32, -63 (a real run keeps all 64). Provenance: MACHINE Perlmutter, "
        "SCHEDULER SLURM, NUM_NODES 16, NGPUS 64, GPUS_PER_NODE 4, world_size 64. gpus = 64 "
        "(world_size); nodes = srun's -N16 = 64 / --gpus-per-node 4 = 16 (srun's -N is nodes, "
        f"never ranks per node). train/tokens = 64 x 4096 = {64 * TOKENS} (global); tps x dt "
        f"/ tokens = {f['ratio']}; tps / tps_per_gpu = {f['gpus_ratio']}; tflops = 4.3e10 x "
        "4096 / dt / 1e12 per A100, mfu = tflops / 312 x 100, so tflops / (mfu/100) = "
        f"{f['implied']} = the A100's BF16 dense peak (tflops x dt = {f['work']} TFLOP per "
        f"step: a rate). wall_time_sec = sum of 30 dt = {c['wall_time_sec']} (warmup step "
        f"{f['dt0']} s included); medians of steps 2..30: tps {c['throughput_tokens_per_sec']}, "
        f"per GPU {c['throughput_tokens_per_sec_per_gpu']}, mfu {c['mfu']}, tflops "
        f"{c['tflops']}; summed dt covers {f['cover']} of the records' span. A right run: "
        "published as is."
    )
    cells = {"system": "Perlmutter", "nodes": "16", "gpus": "64", **c}
    return {"about": about, "args": ["--config", "llama3-7b/bs1/seq4096/tp1"],
            "expect": {"exit": 0, "cells": cells}}
