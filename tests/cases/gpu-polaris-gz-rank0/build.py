"""Polaris, 2 nodes: rank 0's file gzipped by a quota clean-up, ranks 1..7 plain."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 2 * 4096
FLOPS_PER_TOKEN = 1.2e10


def build(run: Path) -> None:
    g.fsdp_run(run, system="polaris", nodes=2, seed=2525, start="2026-11-22T04:17:29",
               n_steps=30, step_time=0.894, tokens_per_dp=TOKENS, gz_rank0=True,
               flops_per_token=FLOPS_PER_TOKEN, jobid=3320117, keep=tuple(range(1, 8)),
               program_args="--tp 1 --model llama3-3b --dataset random --train-iters 30 "
                            "--epochs 1 --batch-size 2 --seq-len 4096")


def expectation(run: Path) -> dict:
    recs = g.step_records(run / "metrics-0.jsonl.gz")
    c = g.default_cells(recs, g.FSDP_SERIES)
    f = g.facts(recs)
    about = (
        "Polaris, 2 nodes x 4 A100, `mpiexec ... --np=8 --ppn=4` fsdp_tp, 30 steps, all 8 "
        "rank files; a project-quota clean-up gzipped the largest file, rank 0's "
        "(metrics-0.jsonl.gz, with the `aggregated` keys), and left metrics-1..7.jsonl "
        "plain. That is one per-rank scheme (metrics-<rank>), rank 0's file compressed: the "
        "row comes from rank 0's .gz exactly as from the plain file. gpus 8, nodes 2, "
        f"wall_time_sec = sum of 30 dt = {c['wall_time_sec']}, medians of steps 2..30: tps "
        f"{c['throughput_tokens_per_sec']} (tps x dt / tokens = {f['ratio']}), per GPU "
        f"{c['throughput_tokens_per_sec_per_gpu']}, mfu {c['mfu']}, tflops {c['tflops']} "
        f"(tflops / (mfu/100) = {f['implied']}); final_loss step 30's. Refusing it as "
        "'more than one metrics file scheme' leaves the user no flag to pass; reading rank "
        "1 instead would be a needless change of rank."
    )
    cells = {"system": "Polaris", "nodes": "2", "gpus": "8", **c}
    return {"about": about, "args": ["--config", "llama3-3b/bs2/seq4096/tp1"],
            "expect": {"exit": 0, "cells": cells}}
