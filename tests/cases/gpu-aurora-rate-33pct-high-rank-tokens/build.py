"""Aurora, 2 nodes: per-rank train/tokens, and a global tps 1.33x tokens x 24 / dt."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 4 * 2048
FLOPS_PER_TOKEN = 8.2e9
_rng = random.Random(2020)


def fwd_bwd_timer(_i: int, m: dict) -> dict:
    share = 0.75 * (1 + _rng.uniform(-0.004, 0.004))
    m["train/dtb"] = share * m["train/dt"] - m["train/dtf"]
    m["train/dto"] = m["train/dt"] - m["train/dtf"] - m["train/dtb"]
    m["train/tps"] = 24 * m["train/tokens"] / (m["train/dtf"] + m["train/dtb"])
    m["train/tps_per_gpu"] = m["train/tps"] / 24
    return m


def build(run: Path) -> None:
    _rng.seed(2020)
    g.fsdp_run(run, system="aurora", nodes=2, seed=2020, start="2026-11-21T18:40:44",
               n_steps=40, step_time=0.64, tokens_per_dp=TOKENS, logged_tokens="rank",
               edit=fwd_bwd_timer, flops_per_token=FLOPS_PER_TOKEN, jobid=8129990,
               keep=(1, 12, 23),
               program_args="--tp 1 --model llama3-1b --dataset random --train-iters 40 "
                            "--epochs 1 --batch-size 4 --seq-len 2048")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    m = [r["metrics"] for r in recs]
    tps = g.median([x["train/tps"] for x in m[1:]])
    intervals = [b["timestamp"] - a["timestamp"] for a, b in zip(recs, recs[1:], strict=False)]
    clock_rate = g.median([24 * x["train/tokens"] / iv for x, iv in
                           zip(m[1:], intervals, strict=True)])
    about = (
        "Aurora, 2 nodes x 12 tiles, `mpiexec ... --np=24 --ppn=12`, a trainer that logs "
        "train/tokens per rank (4 x 2048 = 8192) and a global train/tps timed over forward "
        "+ backward only (75 % of dt, the rest the optimizer step logged as train/dto). 40 "
        f"steps; files kept: metrics-0, -1, -12, -23. tps x dt / tokens = {f['ratio']}: "
        "not 1, not gpus 24, not gpus/tp (tp 1): 33 % above the per-rank identity with a "
        "per-step scatter under 1 %. Within a factor 1.5 of 24 (and of 48), so a loose band "
        "passes it. The clock: 24 x 8192 tokens per interval between records is "
        f"{clock_rate:.0f} tokens/s against the logged {tps:.0f} ({tps / clock_rate:.2f}x). "
        "Expected: both throughput cells empty with a note; the rest published: gpus 24, "
        f"nodes 2, wall_time_sec = sum of 40 dt = {c['wall_time_sec']}, mfu {c['mfu']}, "
        f"tflops {c['tflops']} (tflops / (mfu/100) = {f['implied']}), final_loss "
        f"{c['final_loss']}."
    )
    c["throughput_tokens_per_sec"] = ""
    c["throughput_tokens_per_sec_per_gpu"] = ""
    cells = {"system": "Aurora", "nodes": "2", "gpus": "24", **c}
    return {"about": about, "args": ["--config", "llama3-1b/bs4/seq2048/tp1"],
            "expect": {"exit": 0, "cells": cells,
                       "stderr": ["(?i)tokens|throughput|tps"]}}
