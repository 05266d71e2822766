"""Aurora, 4 nodes (48 tiles), tensor parallel 2: train/tokens per data-parallel group."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 4 * 4096  # one data-parallel group's batch: --batch-size 4 x --seq-len 4096
FLOPS_PER_TOKEN = 4.3e10


def build(run: Path) -> None:
    g.fsdp_run(run, system="aurora", nodes=4, seed=1818, start="2026-11-19T07:22:36",
               n_steps=30, step_time=3.52, tokens_per_dp=TOKENS, tp=2, logged_tokens="dp",
               flops_per_token=FLOPS_PER_TOKEN, jobid=8128802, keep=(1, 24, 47),
               warmup_factor=4.0, overhead=0.1,
               program_args="--tp 2 --model llama3-7b --dataset random --train-iters 30 "
                            "--epochs 1 --batch-size 4 --seq-len 4096")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    about = (
        "Aurora, 4 nodes x 12 tiles, `mpiexec ... --np=48 --ppn=12 ... fsdp_tp --tp 2`: "
        "24 data-parallel groups of 2 tensor-parallel tiles. The trainer logs train/tokens "
        "as one data-parallel group's batch (4 x 4096 = 16384), train/tps as the global "
        "rate 24 x 16384 / dt, tps_per_gpu = tps / 48, tflops per tile = 4.3e10 x 16384 / "
        "2 / dt / 1e12 (each tile does half its group's work), mfu against 340.8. 30 steps; "
        "files kept: metrics-0, -1, -24, -47. tps x dt / tokens = "
        f"{f['ratio']} = gpus / tp = 48 / 2 (tp from the launch line's `--tp 2`): a count "
        "per data-parallel group, one of the legitimate identities. tps / tps_per_gpu = "
        f"{f['gpus_ratio']}; tflops / (mfu/100) = {f['implied']}; dt covers {f['cover']} "
        "of the records' span. Both throughput cells are right and must be published: gpus "
        f"48, nodes 4, wall_time_sec = sum of 30 dt = {c['wall_time_sec']}, medians of "
        f"steps 2..30: tps {c['throughput_tokens_per_sec']}, per tile "
        f"{c['throughput_tokens_per_sec_per_gpu']}, mfu {c['mfu']}, tflops {c['tflops']}."
    )
    cells = {"system": "Aurora", "nodes": "4", "gpus": "48", **c}
    return {"about": about, "args": ["--config", "llama3-7b/bs4/seq4096/tp2"],
            "expect": {"exit": 0, "cells": cells}}
