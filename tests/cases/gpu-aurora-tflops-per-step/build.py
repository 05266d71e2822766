"""Aurora, 2 nodes: train/tflops logged as TFLOP per step (work), not TFLOP/s."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 4 * 2048
FLOPS_PER_TOKEN = 8.2e9


def per_step(_i: int, m: dict) -> dict:
    # The script logs its FLOP counter's total for the step (model FLOPs / 1e12) under
    # train/tflops, without dividing by the step time; mfu is computed from the rate.
    m["train/tflops"] = FLOPS_PER_TOKEN * TOKENS / 1e12
    return m


def build(run: Path) -> None:
    g.fsdp_run(run, system="aurora", nodes=2, seed=909, start="2026-11-14T05:31:40",
               n_steps=40, step_time=0.64, tokens_per_dp=TOKENS, jit=0.04,
               flops_per_token=FLOPS_PER_TOKEN, jobid=8125880, keep=(1, 12, 23),
               edit=per_step,
               program_args="--tp 1 --model llama3-1b --dataset random --train-iters 40 "
                            "--epochs 1 --batch-size 4 --seq-len 2048")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    m = [r["metrics"] for r in recs]
    implied = [x["train/tflops"] / (x["train/mfu"] / 100) for x in m]
    per_dt = [v / x["train/dt"] for v, x in zip(implied, m, strict=True)]
    rate = [x["train/tflops"] / x["train/dt"] for x in m]
    about = (
        "Aurora, 2 nodes x 12 tiles, `mpiexec ... --np=24 --ppn=12`, 40 steps; files kept: "
        "metrics-0, -1, -12, -23. The script logs train/tflops as the step's model FLOPs / "
        "1e12 (TFLOP, a work, not a rate): 8.2e9 x 8192 / 1e12 = "
        f"{m[0]['train/tflops']:.4f} on every step, the warmup step ({f['dt0']} s) included, "
        f"while dt moves {g.span([x['train/dt'] for x in m[1:]], '.3f')} s. mfu is the "
        "rate's: (work / dt) / 340.8 x 100. So tflops / (mfu/100) = "
        f"{g.span(implied[1:], '.1f')} moves step by step with dt, and divided by dt it is "
        f"{g.span(per_dt, '.1f')} on every step: the logged figure is FLOPs per "
        "step, and the mfu is right against the Max 1550 tile's peak (a real rate, as "
        "every right run's tflops, would move inversely to dt: tflops x dt constant, not "
        "tflops). The tflops cell must not publish the constant "
        f"{c['tflops']} as TFLOPS (empty, with a note); the rate it implies, work / dt, "
        f"median {g.median(rate[1:]):.3f}, is not what was logged. mfu publishes: median "
        f"{c['mfu']}. Others: gpus 24, nodes 2, wall_time_sec = sum of 40 dt = "
        f"{c['wall_time_sec']}, tps {c['throughput_tokens_per_sec']} (tps x dt / tokens = "
        f"{f['ratio']}), per tile {c['throughput_tokens_per_sec_per_gpu']}."
    )
    c["tflops"] = ""
    cells = {"system": "Aurora", "nodes": "2", "gpus": "24", **c}
    return {"about": about, "args": ["--config", "llama3-1b/bs4/seq2048/tp1"],
            "expect": {"exit": 0, "cells": cells, "stderr": ["(?i)tflops"]}}
