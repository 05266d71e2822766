"""Perlmutter, 1 node: logs every 10th step, dt and tokens over the whole 10-step interval."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/history-accum8-1rank"
EVERY = 10
STEP_TOKENS = 4 * 2 * 4096  # global, per step
WORK = 1.2e10 * 2 * 4096 / 1e12  # TFLOP per GPU per step


def records() -> list[tuple[float, dict]]:
    rng = random.Random(2424)
    t = g.epoch("2026-11-26T06:14:09")
    out = []
    for k in range(1, 31):
        steps = [0.75 * (1 + rng.uniform(-0.03, 0.03)) for _ in range(EVERY)]
        if k == 1:
            steps[0] += 7.5  # the first step's compile and allocator warm-up
        dt = sum(steps) + 0.003 * EVERY  # the interval timer also holds the loop's overhead
        t += dt + 0.04 + rng.uniform(-0.01, 0.01)
        tflops = EVERY * WORK / dt
        out.append((t, {"train/iter": EVERY * k, "train/loss": 6.0 + 4.8 * 0.9 ** k,
                        "train/dt": dt, "train/tokens": EVERY * STEP_TOKENS,
                        "train/tps": EVERY * STEP_TOKENS / dt,
                        "train/tps_per_gpu": EVERY * STEP_TOKENS / dt / 4,
                        "train/tflops": tflops, "train/mfu": tflops / 312 * 100}))
    shift = g.align_first([ts for ts, _ in out])[0] - out[0][0]
    return [(ts + shift, m) for ts, m in out]


def build(run: Path) -> None:
    g.history_run(run, system="perlmutter", nodes=1, records=records(), jobid=42077310,
                  program="bin/train.py --log-every 10 --batch-size 2 --seq-len 4096")


def expectation(run: Path) -> dict:
    path = next(run.glob("2026????-??????.jsonl"))
    recs = g.step_records(path)
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    med = g.median([r["metrics"]["train/dt"] for r in recs])
    about = (
        "Perlmutter, 1 node x 4 A100, `srun -u --verbose -N1 -n4 --gpus-per-node=4 ... "
        "train.py --log-every 10`: a History loop on rank 0 that logs steps 10, 20, ..., "
        "300, each record's train/dt timing the whole 10-step interval since the previous "
        "log (~7.5 s), train/tokens the interval's tokens (10 x 4 x 8192 = 327680, global), "
        "train/tps = tokens / dt, tflops = 10 steps' FLOPs / dt per GPU, mfu against 312. "
        f"30 records; dt (records 2..30) covers {f['cover']} of the span ({f['span']} s): "
        "the logged dt already holds the unlogged steps. Scaling the sum for the gaps "
        f"would give (300 - 10 + 10) x median dt = {300 * med:.1f} s, 10x the clock. "
        f"Expected: wall_time_sec = sum of the 30 dt = {c['wall_time_sec']} (the first "
        f"record's {f['dt0']} s holds the warmup step), steps 30, medians of records "
        f"2..30: tps {c['throughput_tokens_per_sec']} (tps x dt / tokens = {f['ratio']}), "
        f"per GPU {c['throughput_tokens_per_sec_per_gpu']}, mfu {c['mfu']}, tflops "
        f"{c['tflops']} (tflops / (mfu/100) = {f['implied']}); gpus 4, nodes 1."
    )
    cells = {"system": "Perlmutter", "nodes": "1", "gpus": "4", **c}
    return {"about": about, "args": ["--config", "llama3-3b/bs2/seq4096"],
            "expect": {"exit": 0, "cells": cells}}
