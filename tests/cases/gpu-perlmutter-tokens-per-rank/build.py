"""Perlmutter, 4 nodes x 4 A100: train/tokens counts this rank's tokens (tps x dt / tokens = 16)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 2 * 4096
FLOPS_PER_TOKEN = 1.2e10


def build(run: Path) -> None:
    g.fsdp_run(run, system="perlmutter", nodes=4, seed=1717, start="2026-11-18T13:45:50",
               n_steps=30, step_time=0.894, tokens_per_dp=TOKENS, logged_tokens="rank",
               flops_per_token=FLOPS_PER_TOKEN, jobid=42033410, keep=(1, 8, 15),
               program_args="--tp 1 --model llama3-3b --dataset random --train-iters 30 "
                            "--epochs 1 --batch-size 2 --seq-len 4096")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    per = float(f["span"]) / 29
    about = (
        "Perlmutter, 4 nodes x 4 A100, `srun -u --verbose -N4 -n16 --gpus-per-node=4`, a "
        "trainer that logs train/tokens as the tokens this rank processed (2 x 4096 = 8192) "
        "while train/tps is the global rate (16 x 8192 / dt) and tps_per_gpu = tps / 16. "
        "30 steps; files kept: metrics-0, -1, -8, -15. tps x dt / tokens = "
        f"{f['ratio']} = gpus: the per-rank identity, one of the three legitimate ratios "
        f"(1, gpus, gpus/tp); tps / tps_per_gpu = {f['gpus_ratio']}; the records' clock: "
        f"dt covers {f['cover']} of the span, so 16 x 8192 tokens per ~{per:.2f} s interval "
        "sustains the rate. Published: gpus 16, nodes 4, wall_time_sec = sum of "
        f"30 dt = {c['wall_time_sec']}, medians of steps 2..30: tps "
        f"{c['throughput_tokens_per_sec']}, per GPU {c['throughput_tokens_per_sec_per_gpu']}"
        f", mfu {c['mfu']}, tflops {c['tflops']} (tflops / (mfu/100) = {f['implied']})."
    )
    cells = {"system": "Perlmutter", "nodes": "4", "gpus": "16", **c}
    return {"about": about, "args": ["--config", "llama3-3b/bs2/seq4096/tp1"],
            "expect": {"exit": 0, "cells": cells}}
