"""Aurora, 2 nodes x 12 tiles: a clean fsdp_tp run (24 ranks, tp 1, 40 steps)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 4 * 2048  # --batch-size 4 x --seq-len 2048 per data-parallel rank
FLOPS_PER_TOKEN = 8.2e9  # a ~1.2B Llama: 6N plus attention


def build(run: Path) -> None:
    g.fsdp_run(run, system="aurora", nodes=2, seed=101, start="2026-11-03T14:02:10",
               n_steps=40, step_time=0.64, tokens_per_dp=TOKENS,
               flops_per_token=FLOPS_PER_TOKEN, jobid=8123401, keep=(1, 12, 23),
               program_args="--tp 1 --model llama3-1b --dataset random --train-iters 40 "
                            "--epochs 1 --batch-size 4 --seq-len 2048")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    about = (
        "Aurora, 2 nodes x 12 tiles, `mpiexec --envall --line-buffer --np=24 --ppn=12` "
        "fsdp_tp (tp 1, bs 4 x seq 2048 per rank), 40 steps, every step logged; files kept: "
        "metrics-0 (with `aggregated`), metrics-1, -12, -23 (a real run has all 24; the "
        "others add nothing to rank 0's row). Provenance: MACHINE Aurora, NUM_NODES 2, "
        "NGPUS 24, GPUS_PER_NODE 12, world_size 24. First principles: gpus = ranks that ran "
        "= 24; nodes = 24 / --ppn=12 = 2. Each record is what fsdp_tp computes: train/tokens "
        f"= 24 x 8192 = {24 * TOKENS} (global), tps = tokens / dt (tps x dt / tokens = "
        f"{f['ratio']}: the global identity), tps / tps_per_gpu = {f['gpus_ratio']} = gpus, "
        "tflops = 8.2e9 x 8192 / dt / 1e12 per tile, mfu = tflops / 340.8 x 100 (tflops / "
        f"(mfu/100) = {f['implied']}, the Max 1550 tile's BF16 peak; tflops x dt = "
        f"{f['work']} TFLOP on every step, as for any rate with a constant work per step). "
        f"wall_time_sec = sum of the 40 dt = {c['wall_time_sec']} (step 1's {f['dt0']} s of "
        "warmup included); each rate = median of steps 2..40: tps "
        f"{c['throughput_tokens_per_sec']}, per tile {c['throughput_tokens_per_sec_per_gpu']}, "
        f"mfu {c['mfu']}, tflops {c['tflops']}; final_loss = step 40's loss. The records' "
        f"clock: each record follows the previous by dt + ~60 ms of logging (summed dt = "
        f"{f['cover']} of the span). Nothing is inconsistent, so a demanding user expects the "
        "row published exactly, with no refusal and no emptied cell."
    )
    cells = {"system": "Aurora", "nodes": "2", "gpus": "24", **c}
    return {"about": about, "args": ["--config", "llama3-1b/bs4/seq2048/tp1"],
            "expect": {"exit": 0, "cells": cells}}
