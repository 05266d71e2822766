"""Aurora, 1 node: train/iter counts micro-batches (7, 15, 23, ...), one record per optimizer
step, dt over the whole optimizer step."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/history-accum8-1rank"
ACCUM = 8
TOKENS = ACCUM * 12 * 2 * 2048  # per optimizer step, all 12 ranks


def records() -> list[tuple[float, dict]]:
    rng = random.Random(2323)
    n = 30
    dts = [0.91 * f for f in g.jitter(rng, n, 0.02)]
    dts[0] *= 5.0
    stamps = g.align_first(g.clock(g.epoch("2026-11-25T17:02:48"), dts, rng, overhead=0.02,
                                   overhead_jitter=0.005))
    losses = g.loss_curve(rng, range(1, n + 1))
    out = []
    for k in range(n):
        out.append((stamps[k], {
            "train/iter": ACCUM * (k + 1) - 1,  # the loop's micro-batch index at the step
            "train/loss": losses[k], "train/dt": dts[k], "train/tps": TOKENS / dts[k],
            "train/tps_per_gpu": TOKENS / dts[k] / 12, "train/accum": ACCUM}))
    return out


def build(run: Path) -> None:
    g.history_run(run, system="aurora", nodes=1, records=records(), jobid=8131077,
                  program="bin/train_accum.py --grad-accum 8 --micro-batch-size 2 "
                          "--seq-len 2048")


def expectation(run: Path) -> dict:
    path = next(run.glob("2026????-??????.jsonl"))
    recs = g.step_records(path)
    c = g.default_cells(recs, {"throughput_tokens_per_sec": "train/tps",
                               "throughput_tokens_per_sec_per_gpu": "train/tps_per_gpu"})
    f = g.facts(recs)
    med = g.median([r["metrics"]["train/dt"] for r in recs])
    scaled = (recs[-1]["metrics"]["train/iter"] - recs[0]["metrics"]["train/iter"] + 8) * med
    about = (
        "Aurora, 1 node x 12 tiles, `mpiexec ... --np=12 --ppn=12 ... train_accum.py "
        "--grad-accum 8`: a History loop on rank 0 whose train/iter is the micro-batch "
        "index at each optimizer step (7, 15, 23, ..., 239), one record per optimizer step "
        "(every one logged), train/dt timing the whole optimizer step (all 8 micro-batches), "
        "train/tps = 8 x 12 x 2 x 2048 tokens / dt, train/accum 8. 30 records. The counter "
        "has gaps of 8, but no step is missing: summed dt (steps 2..30) covers "
        f"{f['cover']} of the records' span ({f['span']} s). Reading the gaps as unlogged "
        f"steps would scale the wall time to (239 - 7 + 8) x median dt = {scaled:.1f} s, "
        "8x what the clock allows. Expected: wall_time_sec = sum of the 30 dt = "
        f"{c['wall_time_sec']} exactly (a note on what the counter does is welcome), "
        f"steps 30, tps {c['throughput_tokens_per_sec']} (tps x dt / tokens: no tokens "
        f"logged; tps x dt = 393216 every step), per tile "
        f"{c['throughput_tokens_per_sec_per_gpu']} (tps / tps_per_gpu = {f['gpus_ratio']}), "
        "mfu and tflops empty (not logged), final_loss the last record's; gpus 12, nodes 1."
    )
    cells = {"system": "Aurora", "nodes": "1", "gpus": "12", **c, "mfu": "", "tflops": ""}
    return {"about": about, "args": ["--config", "llama3-1b/mbs2x8/seq2048"],
            "expect": {"exit": 0, "cells": cells}}
