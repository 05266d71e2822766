"""Sunspot, 1 node: ezpz's minimal with its default WARMUP_ITERS=10 logs from step 11."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/minimal-1rank"
WORK = 1.0  # TFLOP per tile per step


def build(run: Path) -> None:
    rng = random.Random(2626)
    steps = list(range(11, 50))
    dts = [0.0121 * f for f in g.jitter(rng, len(steps), 0.03)]
    stamps = g.align_first(g.clock(g.epoch("2026-11-28T10:05:18"), dts, rng, overhead=0.0016,
                                   overhead_jitter=0.0003))
    per_rank = {}
    for rank in (0, 1, 11):
        recs = []
        for s, dt, ts in zip(steps, dts, stamps, strict=True):
            mine = dt * (1 + (rng.uniform(-0.01, 0.01) if rank else 0.0))
            tflops = WORK / mine
            loss = float(round(900 * 0.96 ** (s - 11) + 300 + rng.uniform(-6, 6)))
            recs.append((ts - (rng.uniform(0, 0.0008) if rank else 0.0),
                         {"iter": s, "loss": loss, "dt": mine, "dtf": mine * 0.3,
                          "dtb": mine * 0.7, "tflops": tflops, "mfu": tflops / 340.8 * 100}))
        per_rank[rank] = recs
    for old in run.glob("metrics*.jsonl"):
        old.unlink()
    g.interleaved(run / "metrics.jsonl", per_rank)
    command = g.launch_line("sunspot", 1, 12, 13307, "ezpz.examples.minimal")
    dist = g.distributed("sunspot", nodes=1, world=12, command=command, jobid=13307)
    g.finish(run, "sunspot", dist, module="ezpz.examples.minimal",
             stamp=g.utc(stamps[0] - 30, "%Y-%m-%d-%H%M%S"), start=stamps[0] - 29,
             last=stamps[-1])


def expectation(run: Path) -> dict:
    recs = [r for r in g.read_records(run / "metrics.jsonl") if r["rank"] == 0]
    c = g.default_cells(recs, {"mfu": "mfu", "tflops": "tflops"}, loss="loss", dt="dt")
    about = (
        "Sunspot, 1 node x 12 tiles, `mpiexec ... --np=12 --ppn=12 python3 -m "
        "ezpz.examples.minimal` with its defaults (WARMUP_ITERS=10, LOG_FREQ 1, "
        "TRAIN_ITERS=50) and a wider model: steps 1..10 are its warmup and are not logged, "
        "steps 11..49 are (39 records per rank; metrics.jsonl keeps ranks 0, 1 and 11 of "
        "the 12, interleaved). The first logged step is 11 because of minimal's own "
        "default warmup, not a resume: the counter starts at 11 with every step after it "
        "logged, one process, no earlier records. Expected: published with no resume note "
        "(a note that the row covers steps 11..49 is fine if it does not call it a "
        "resume; the pattern lets 'not a resume' through): steps 39, wall_time_sec = sum of "
        f"39 dt = {c['wall_time_sec']}, mfu "
        f"{c['mfu']} and tflops {c['tflops']} (medians of steps 12..49; tflops = 1 TFLOP / "
        "dt, tflops / (mfu/100) = 340.8), final_loss step 49's, both throughput cells "
        "empty (minimal logs none); gpus 12, nodes 1, system SunSpot."
    )
    cells = {"system": "SunSpot", "nodes": "1", "gpus": "12", **c,
             "throughput_tokens_per_sec": "", "throughput_tokens_per_sec_per_gpu": ""}
    return {"about": about, "args": ["--config", "minimal/wide"],
            "expect": {"exit": 0, "cells": cells,
                       "stderr_not": ["(?i)(?<!not )(?<!not a )\\bresum"]}}
