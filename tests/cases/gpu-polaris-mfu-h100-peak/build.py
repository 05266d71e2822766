"""Polaris, 2 nodes x 4 A100: mfu computed against the H100 SXM's 989 TFLOPS."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 1 * 4096
FLOPS_PER_TOKEN = 4.3e10


def build(run: Path) -> None:
    g.fsdp_run(run, system="polaris", nodes=2, seed=808, start="2026-11-13T19:55:12",
               n_steps=30, step_time=1.355, tokens_per_dp=TOKENS,
               flops_per_token=FLOPS_PER_TOKEN, jobid=3301877, keep=(1, 4, 7), peak=989.0,
               program_args="--tp 1 --model llama3-7b --dataset random --train-iters 30 "
                            "--epochs 1 --batch-size 1 --seq-len 4096")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    right_mfu = float(c["tflops"]) / 312 * 100
    about = (
        "Polaris, 2 nodes x 4 A100, `mpiexec ... --np=8 --ppn=4` training script whose FLOP "
        "counter hardcodes the H100 SXM's 989 TFLOPS as the peak of every CUDA device. "
        "30 steps; files kept: metrics-0, -1, -4, -7. tflops (per GPU) = 4.3e10 x 4096 / dt "
        f"/ 1e12, median {c['tflops']}: under the A100's 312, a plausible per-GPU rate. "
        f"mfu = tflops / 989 x 100, median {c['mfu']}: tflops / (mfu/100) = {f['implied']}, "
        "a real device's peak (so an any-device check passes it) but not the recorded "
        "system's: Polaris has A100s (312). Which cell is wrong: if the mfu were right the "
        "tflops would have to be 989/312 = 3.17x too high, i.e. the true rate would be "
        "41 TFLOPS and the logged 130 an over-count; nothing in the run says so, and a peak "
        "table that does not know the device is the common failure (ezpz's own table "
        "gives 0.0 instead). The demanding outcome: mfu empty (an mfu on the Polaris "
        f"dashboard must be against 312; it would be {right_mfu:.3f}, not {c['mfu']}), with "
        "a note naming mfu and the peak; tflops published as logged. Other cells: gpus 8, "
        f"nodes 2, wall_time_sec = sum of 30 dt = {c['wall_time_sec']}, tps "
        f"{c['throughput_tokens_per_sec']} (tps x dt / tokens = {f['ratio']}), per GPU "
        f"{c['throughput_tokens_per_sec_per_gpu']}."
    )
    c["mfu"] = ""
    cells = {"system": "Polaris", "nodes": "2", "gpus": "8", **c}
    return {"about": about, "args": ["--config", "llama3-7b/bs1/seq4096/tp1"],
            "expect": {"exit": 0, "cells": cells, "stderr": ["(?i)mfu"]}}
