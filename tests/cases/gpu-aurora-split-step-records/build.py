"""Aurora, 1 node: a History loop that logs each step in two records (loss, then timing)."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/history-accum8-1rank"
TOKENS = 12 * 4 * 2048  # global: 12 ranks x 4 x 2048
WORK = 8.2e9 * 4 * 2048 / 1e12  # TFLOP per tile per step


def records() -> list[tuple[float, dict]]:
    rng = random.Random(1515)
    steps = list(range(1, 31))
    dts = [0.548 * f for f in g.jitter(rng, 30, 0.02)]
    dts[0] *= 6.0
    stamps = g.clock(g.epoch("2026-11-23T12:31:05"), dts, rng, overhead=0.03)
    losses = g.loss_curve(rng, steps)
    out = []
    for step, dt, ts, loss in zip(steps, dts, stamps, losses, strict=True):
        tflops = WORK / dt
        # update({"train/iter", "train/loss"}) right after backward; the optimizer step and
        # the timer's stop follow, then update() with the step's timing and rates.
        out.append((ts - 0.22 * dt, {"train/iter": step, "train/loss": loss}))
        out.append((ts, {"train/iter": step, "train/dt": dt, "train/tokens": TOKENS,
                         "train/tps": TOKENS / dt, "train/tps_per_gpu": TOKENS / dt / 12,
                         "train/tflops": tflops, "train/mfu": tflops / 340.8 * 100}))
    shift = g.align_first([ts for ts, _ in out])[0] - out[0][0]
    return [(ts + shift, m) for ts, m in out]


def build(run: Path) -> None:
    g.history_run(run, system="aurora", nodes=1, records=records(), jobid=8130415,
                  program="bin/train_split_logging.py --batch-size 4 --seq-len 2048")


def expectation(run: Path) -> dict:
    path = next(run.glob("2026????-??????.jsonl"))
    recs = [r for r in g.read_records(path) if "train/iter" in r["metrics"]]
    timing = [r for r in recs if "train/dt" in r["metrics"]]
    loss = [r for r in recs if "train/loss" in r["metrics"]]
    c = g.default_cells(timing, {k: v for k, v in g.FSDP_SERIES.items()}, loss="train/dt")
    c["final_loss"] = f"{loss[-1]['metrics']['train/loss']:.6f}"
    c["timestamp"] = g.utc(recs[0]["timestamp"])
    f = g.facts(timing)
    about = (
        "Aurora, 1 node x 12 tiles, `mpiexec ... --np=12 --ppn=12`, a plain History loop "
        "(History on rank 0 only, default `<YYYYMMDD-HHMMSS>.jsonl`) that calls update() "
        "twice per step: {train/iter, train/loss} after backward, then {train/iter, "
        "train/dt, train/tokens, train/tps, train/tps_per_gpu, train/tflops, train/mfu} "
        "when the step's timer stops. 30 steps, 60 records; every step number appears "
        "twice, consecutively, with disjoint keys, timestamps forward. That is one step "
        "logged in two records, not 30 retries: a repeated step number is evidence of a "
        "new attempt only when the repeat is a second copy of the step. Expected: published "
        "as 30 steps (merged, a note welcome): timestamp = step 1's first record (loss, "
        f"{g.utc(recs[0]['timestamp'])}), wall_time_sec = sum of the 30 dt = "
        f"{c['wall_time_sec']} (warmup {f['dt0']} s included), medians of steps 2..30: tps "
        f"{c['throughput_tokens_per_sec']} (tps x dt / tokens = {f['ratio']}, global), per "
        f"tile {c['throughput_tokens_per_sec_per_gpu']}, mfu {c['mfu']}, tflops {c['tflops']}"
        f" (tflops / (mfu/100) = {f['implied']}); final_loss = step 30's loss "
        f"{c['final_loss']}; gpus 12, nodes 1."
    )
    cells = {"system": "Aurora", "nodes": "1", "gpus": "12", **c}
    return {"about": about, "args": ["--config", "llama3-1b/bs4/seq2048"],
            "expect": {"exit": 0, "cells": cells, "stderr_not": ["--attempt"]}}
