"""Perlmutter, 1 node: train/tflops logged as the node's total (4 A100), mfu per GPU."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 1 * 4096
FLOPS_PER_TOKEN = 4.3e10


def node_total(_i: int, m: dict) -> dict:
    m["train/tflops"] *= 4
    return m


def build(run: Path) -> None:
    g.fsdp_run(run, system="perlmutter", nodes=1, seed=606, start="2026-11-11T08:03:51",
               n_steps=30, step_time=1.409, tokens_per_dp=TOKENS,
               flops_per_token=FLOPS_PER_TOKEN, jobid=41977012, keep=(1, 2, 3),
               edit=node_total, warmup_factor=8.0,
               program_args="--tp 1 --model llama3-7b --dataset random --train-iters 30 "
                            "--epochs 1 --batch-size 1 --seq-len 4096")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    per_gpu = [r["metrics"]["train/tflops"] / 4 / (r["metrics"]["train/mfu"] / 100)
               for r in recs[1:]]
    about = (
        "Perlmutter, 1 GPU node x 4 A100, `srun -u --verbose -N1 -n4 --gpus-per-node=4` "
        "fsdp_tp fork, 30 steps, all 4 rank files kept. train/tflops is the node's sum over "
        f"4 GPUs: median {c['tflops']} 'per GPU' against an A100's 312 peak: impossible. "
        f"tflops / (mfu/100) = {f['implied']}: within 5 % of the MI300X/MI325X's 1,300 in "
        "the any-device table, so a check that asks only 'is this some accelerator's peak' "
        "passes it; judged against the recorded system's device (Perlmutter: A100) it is "
        f"4x 312, and tflops / 4 / (mfu/100) = {g.span(per_gpu, '.1f')} on every step: a "
        "node (= job, 1 node) total, and the mfu is right. Expected: tflops cell empty "
        "with a note naming the node/job total; everything else published: gpus 4, nodes "
        f"1 (srun -N1), wall_time_sec = sum of 30 dt = {c['wall_time_sec']}, medians of "
        f"steps 2..30: tps {c['throughput_tokens_per_sec']} (tps x dt / tokens = "
        f"{f['ratio']}), per GPU {c['throughput_tokens_per_sec_per_gpu']}, mfu {c['mfu']}."
    )
    c["tflops"] = ""
    cells = {"system": "Perlmutter", "nodes": "1", "gpus": "4", **c}
    return {"about": about, "args": ["--config", "llama3-7b/bs1/seq4096/tp1"],
            "expect": {"exit": 0, "cells": cells,
                       "stderr": ["(?i)tflops", "(?i)node|job"]}}
