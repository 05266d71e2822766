"""Perlmutter, 2 nodes: tps timed over the whole iteration (a data stall outside dt)."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 2 * 4096
FLOPS_PER_TOKEN = 1.2e10


def stalls() -> list[float]:
    rng = random.Random(2121)
    out = [0.45 * (1 + rng.uniform(-0.33, 0.33)) for _ in range(30)]
    out[0] = 3.2  # the loader's first batch
    return out


STALLS = stalls()


def iteration_timer(i: int, m: dict) -> dict:
    # The loop's tokens/s uses the iteration's wall time (data wait + step); dt is the
    # step's own timer, started after the batch arrived.
    m["train/tps"] = m["train/tokens"] / (m["train/dt"] + STALLS[i])
    m["train/tps_per_gpu"] = m["train/tps"] / 8
    return m


def build(run: Path) -> None:
    g.fsdp_run(run, system="perlmutter", nodes=2, seed=2121, start="2026-11-29T01:12:40",
               n_steps=30, step_time=0.75, tokens_per_dp=TOKENS, edit=iteration_timer,
               flops_per_token=FLOPS_PER_TOKEN, jobid=42100922, keep=(1, 4, 7),
               overhead=0.03,
               pauses=dict(enumerate(STALLS)),
               program_args="--tp 1 --model llama3-3b --dataset text --data-path "
                            "/pscratch/sd/d/demo/data/tokens --train-iters 30 --epochs 1 "
                            "--batch-size 2 --seq-len 4096")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    m = [r["metrics"] for r in recs]
    iv = [b["timestamp"] - a["timestamp"] for a, b in zip(recs, recs[1:], strict=False)]
    need = [x["train/tokens"] / x["train/tps"] for x in m[1:]]
    sustain = [n / i for n, i in zip(need, iv, strict=True)]
    about = (
        "Perlmutter, 2 nodes x 4 A100, `srun -u --verbose -N2 -n8 --gpus-per-node=4`, an "
        "fsdp_tp fork reading tokens from a slow file system: each iteration waits "
        "~0.45 s (+-33 %; 3.2 s for the first batch) for data, then trains ~0.75 s. "
        "train/dt is the step's own timer (after the batch arrived); train/tps = global "
        "tokens (8 x 8192) / the iteration's wall time (data wait + step), tps_per_gpu = "
        f"tps / 8. 30 steps; files kept: metrics-0, -1, -4, -7. tps x dt / tokens = "
        f"{f['ratio']}: below the global identity 1 and varying with the stall. The "
        "records' clock settles it: the tokens of each step at the logged rate take "
        "tokens / tps = the iteration time, and the interval between records is that plus "
        f"~30 ms of logging: (tokens / tps) / interval = {g.span(sustain, '.3f')} (steps "
        "2..30), so the clock sustains the logged rate, and a rate below tokens / dt is "
        "not inflated. The logged tps is the run's real throughput including its data "
        "stalls (tokens / dt would overstate it by ~1.6x). Expected: both throughput "
        f"cells published: tps {c['throughput_tokens_per_sec']}, per GPU "
        f"{c['throughput_tokens_per_sec_per_gpu']} (medians of steps 2..30); wall_time_sec "
        f"= sum of 30 dt = {c['wall_time_sec']} (the definition: step time; dt covers "
        f"{f['cover']} of the span, above a quarter); mfu {c['mfu']}, tflops {c['tflops']} "
        f"(from dt: tflops / (mfu/100) = {f['implied']}); gpus 8, nodes 2."
    )
    cells = {"system": "Perlmutter", "nodes": "2", "gpus": "8", **c}
    return {"about": about, "args": ["--config", "llama3-3b/bs2/seq4096/tp1"],
            "expect": {"exit": 0, "cells": cells}}
