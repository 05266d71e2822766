"""Polaris, 2 nodes: a nanoGPT-style loop with periodic eval records (iter, val/loss, mfu)."""

import math
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/history-accum8-1rank"
# nanoGPT's estimate_mfu: 6N + 12 L H Q T per token, 5 micro-steps x 12 x 1024 tokens per
# GPU per iteration, against the A100's 312 TFLOPS.
FLOPS_PER_ITER = (6 * 124e6 + 12 * 12 * 12 * 64 * 1024) * 5 * 12 * 1024
EVAL_EVERY = 10
EVAL_TIME = 6.1


def records() -> list[tuple[float, dict]]:
    rng = random.Random(1616)
    out = []
    top = g.epoch("2026-11-24T09:50:20")
    running = -1.0
    for it in range(0, 41):
        lr = 6e-4 * min(1.0, (it + 1) / 20)
        step = 0.44 * (1 + rng.uniform(-0.02, 0.02)) + (24.0 if it == 0 else 0.0)
        extra = 0.0
        if it % EVAL_EVERY == 0:
            extra = EVAL_TIME * (1 + rng.uniform(-0.03, 0.03))
            tl = 3.3 + 7.7 * math.exp(-it / 15)
            out.append((top + extra, {"iter": it, "train/loss": tl,
                                      "val/loss": tl + 0.02 + rng.uniform(0, 0.02),
                                      "lr": lr, "mfu": running * 100}))
        dt = extra + step  # nanoGPT's dt runs from the previous log to this one
        mfu = FLOPS_PER_ITER / dt / 312e12
        if it >= 5:
            running = mfu if running == -1.0 else 0.9 * running + 0.1 * mfu
        loss = 3.3 + 7.7 * math.exp(-it / 15) + rng.uniform(-0.05, 0.05)
        ts = top + dt + 0.003
        out.append((ts, {"iter": it, "loss": loss, "dt": dt, "mfu": mfu * 100, "lr": lr}))
        top = ts + 0.001
    first_step = next(ts for ts, m in out if "dt" in m)
    shift = g.align_first([first_step])[0] - first_step
    return [(ts + shift, m) for ts, m in out]


def build(run: Path) -> None:
    g.history_run(run, system="polaris", nodes=2, records=records(), jobid=3324650,
                  program="nanoGPT/train.py config/train_gpt2.py --max_iters=40 "
                          "--eval_interval=10 --gradient_accumulation_steps=40 "
                          "--batch_size=12 --block_size=1024")


def expectation(run: Path) -> dict:
    path = next(run.glob("2026????-??????.jsonl"))
    recs = g.read_records(path)
    train = [r for r in recs if "dt" in r["metrics"]]
    evals = [r for r in recs if "val/loss" in r["metrics"]]
    c = g.default_cells(train, {"mfu": "mfu"}, loss="loss", dt="dt")
    dts = [r["metrics"]["dt"] for r in train]
    about = (
        "Polaris, 2 nodes x 4 A100, `mpiexec ... --np=8 --ppn=4 ... nanoGPT/train.py` "
        "(GPT-2 124M, 40 accumulation micro-steps over 8 ranks, 12 x 1024 tokens each) "
        "logging through a History on rank 0: each iteration {iter, loss, dt, mfu, lr} "
        "(mfu = nanoGPT's estimate_mfu for that iteration, percent of the A100's 312), and "
        "every 10 iterations, before that iteration's step, nanoGPT's eval dict {iter, "
        "train/loss, val/loss, lr, mfu} where mfu is its running average x 100 (-100 "
        "before iteration 5). 41 training records (iter 0..40) and 5 eval records (iter 0, "
        "10, 20, 30, 40) carrying the counter, a training-series key (mfu) and "
        "train/loss. The eval records are evaluations, not steps or retries: they carry "
        "val/loss and none of dt; counting them would make 46 steps, repeat 5 step numbers, "
        "let the running mfu (-100 at iter 0) in, and could take train/loss (a 200-batch "
        "estimate) for the step's loss. nanoGPT's dt runs from one log to the next, so it "
        f"includes eval time on iterations 10..40 ({dts[10]:.2f} s vs ~0.44) and compile on "
        f"iteration 0 ({dts[0]:.2f} s). Expected from the 41 training records: steps 41, "
        f"timestamp = iter 0's training record, wall_time_sec = sum of 41 dt = "
        f"{c['wall_time_sec']}, mfu = median of iter 1..40 = {c['mfu']}, tflops empty (not "
        "logged), both throughput cells empty (none logged; nanoGPT logs no tokens/s), "
        f"final_loss = iter 40's training loss {c['final_loss']} (not the eval's "
        f"train/loss {evals[-1]['metrics']['train/loss']:.6f}); gpus 8, nodes 2."
    )
    cells = {"system": "Polaris", "nodes": "2", "gpus": "8", **c, "tflops": "",
             "throughput_tokens_per_sec": "", "throughput_tokens_per_sec_per_gpu": ""}
    return {"about": about, "args": ["--config", "gpt2-124m/bs12/seq1024/ga40"],
            "expect": {"exit": 0, "cells": cells, "stderr_not": ["--attempt"]}}
