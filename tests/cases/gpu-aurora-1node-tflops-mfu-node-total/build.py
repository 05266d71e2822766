"""Aurora, 1 node: tflops logged as the node's total and mfu computed from it (431 %)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 4 * 2048
FLOPS_PER_TOKEN = 8.2e9


def node_total(_i: int, m: dict) -> dict:
    # The script counts the node's FLOPs (12 tiles) and divides by one tile's peak.
    m["train/tflops"] *= 12
    m["train/mfu"] *= 12
    return m


def build(run: Path) -> None:
    g.fsdp_run(run, system="aurora", nodes=1, seed=707, start="2026-11-12T11:40:27",
               n_steps=30, step_time=0.548, tokens_per_dp=TOKENS,
               flops_per_token=FLOPS_PER_TOKEN, jobid=8125003, keep=(1, 6, 11),
               edit=node_total,
               program_args="--tp 1 --model llama3-1b --dataset random --train-iters 30 "
                            "--epochs 1 --batch-size 4 --seq-len 2048")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    mfu = [r["metrics"]["train/mfu"] for r in recs]
    about = (
        "Aurora, 1 node x 12 tiles, fsdp_tp fork, 30 steps; files kept: metrics-0, -1, -6, "
        "-11. The script counts the whole node's model FLOPs: train/tflops median "
        f"{c['tflops']} and train/mfu = that / 340.8 x 100, median {c['mfu']} (steps 2..30: "
        f"{g.span(mfu[1:], '.1f')} %, above 100 on {sum(v > 100 for v in mfu)} of 30 steps, "
        "all but the warmup). "
        f"tflops / (mfu/100) = {f['implied']}: the identity holds exactly, which is why an "
        "identity check alone never sees it; the device's peak does: 1 tile cannot do 4.3x "
        "its peak, and mfu above 100 % is no utilisation. Both cells must be empty (mfu "
        "dropped above 100 on every step; tflops above the tile peak, a node total). The "
        "rest is right and published: gpus 12, nodes 1, wall_time_sec = sum of 30 dt = "
        f"{c['wall_time_sec']}, tps {c['throughput_tokens_per_sec']} (tps x dt / tokens = "
        f"{f['ratio']}), per tile {c['throughput_tokens_per_sec_per_gpu']}, final_loss "
        f"{c['final_loss']}."
    )
    c["tflops"] = ""
    c["mfu"] = ""
    cells = {"system": "Aurora", "nodes": "1", "gpus": "12", **c}
    return {"about": about, "args": ["--config", "llama3-1b/bs4/seq2048/tp1"],
            "expect": {"exit": 0, "cells": cells, "stderr": ["(?i)tflops", "(?i)mfu"]}}
