"""Sunspot, 1 node x 12 tiles, mfu against ezpz's 448-CU Max 1550 tile peak (298.2)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 2 * 2048
FLOPS_PER_TOKEN = 8.2e9


def build(run: Path) -> None:
    g.fsdp_run(run, system="sunspot", nodes=1, seed=404, start="2026-11-09T09:12:44",
               n_steps=30, step_time=0.382, tokens_per_dp=TOKENS,
               flops_per_token=FLOPS_PER_TOKEN, jobid=12044, keep=(1, 6, 11), peak=298.2,
               program_args="--tp 1 --model llama3-1b --dataset random --train-iters 30 "
                            "--epochs 1 --batch-size 2 --seq-len 2048")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    about = (
        "Sunspot, 1 node x 12 tiles (MACHINE `SunSpot`, ezpz's spelling), `mpiexec --envall "
        "--line-buffer --np=12 --ppn=12` fsdp_tp, 30 steps; files kept: metrics-0, -1, -6, "
        "-11. The tiles report 448 compute units, so ezpz's mfu uses its 448-CU Max 1550 "
        "tile peak, 512 x 448 x 1.3 GHz = 298.2 TFLOPS (docs/numbers.md lists it beside the "
        f"512-CU 340.8): tflops / (mfu/100) = {f['implied']}. Both are Max 1550 tiles, the "
        "accelerator of Aurora and Sunspot, so the identity holds for the recorded system's "
        "device. gpus = 12, nodes = 12 / --ppn=12 = 1. tps x dt / tokens = "
        f"{f['ratio']} (global count 12 x 4096); tps / tps_per_gpu = {f['gpus_ratio']}. "
        f"wall_time_sec = sum of 30 dt = {c['wall_time_sec']}; medians of steps 2..30: tps "
        f"{c['throughput_tokens_per_sec']}, per tile {c['throughput_tokens_per_sec_per_gpu']}"
        f", mfu {c['mfu']} (= tflops {c['tflops']} / 298.2 x 100), tflops {c['tflops']} "
        "(under both tile peaks). A demanding user expects this consistent run published "
        "with mfu and tflops as logged: emptying mfu because 298.2 is not 340.8 would drop a "
        "right number of the same device."
    )
    cells = {"system": "SunSpot", "nodes": "1", "gpus": "12", **c}
    return {"about": about, "args": ["--config", "llama3-1b/bs2/seq2048/tp1"],
            "expect": {"exit": 0, "cells": cells}}
