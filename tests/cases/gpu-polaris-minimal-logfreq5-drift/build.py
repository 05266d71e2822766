"""Polaris, 1 node: ezpz's minimal with LOG_FREQ=5 and a step time that drifts up 4x."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/minimal-logfreq5-1rank"
WARMUP, LOG_FREQ, TRAIN_ITERS = 5, 5, 101
WORK = 25.0  # TFLOP per GPU per step (a wide minimal model)


def step_time(s: int) -> float:
    # Flat 0.25 s, then a node that gets loaded from step 60 on: linear up to 1.0 s at 100.
    return 0.25 if s <= 60 else 0.25 + 0.75 * (s - 60) / 40


def series() -> tuple[dict[int, float], dict[int, float]]:
    """Every step's dt (logged or not) and the clock at its end, steps 6..100."""
    rng = random.Random(2222)
    t = g.epoch("2026-11-27T20:41:33")
    dts, ends = {}, {}
    for s in range(WARMUP + 1, TRAIN_ITERS):
        dts[s] = step_time(s) * (1 + rng.uniform(-0.02, 0.02))
        t += dts[s] + 0.004 + (0.012 if s % LOG_FREQ == 0 else 0.0)
        ends[s] = t
    return dts, ends


def build(run: Path) -> None:
    dts, ends = series()
    logged = [s for s in dts if s % LOG_FREQ == 0]
    shift = g.align_first([ends[logged[0]]])[0] - ends[logged[0]]
    rng = random.Random(2223)
    per_rank = {}
    for rank in range(4):
        recs = []
        for s in logged:
            dt = dts[s] * (1 + (rng.uniform(-0.01, 0.01) if rank else 0.0))
            dtf = dt * 0.31
            tflops = WORK / dt
            loss = float(round(1100 * 0.97 ** (s - 10) + 330 + rng.uniform(-8, 8)))
            recs.append((ends[s] + shift - (rng.uniform(0, 0.003) if rank else 0.0),
                         {"iter": s, "loss": loss, "dt": dt, "dtf": dtf, "dtb": dt - dtf,
                          "tflops": tflops, "mfu": tflops / 312 * 100}))
        per_rank[rank] = recs
    for old in run.glob("metrics*.jsonl"):
        old.unlink()
    g.interleaved(run / "metrics.jsonl", per_rank)
    command = g.launch_line("polaris", 1, 4, 3327711, "ezpz.examples.minimal")
    dist = g.distributed("polaris", nodes=1, world=4, command=command, jobid=3327711)
    first, last = per_rank[0][0][0], per_rank[0][-1][0]
    g.finish(run, "polaris", dist, module="ezpz.examples.minimal",
             stamp=g.utc(first - 40, "%Y-%m-%d-%H%M%S"), start=first - 39, last=last)


def expectation(run: Path) -> dict:
    recs = [r for r in g.read_records(run / "metrics.jsonl") if r["rank"] == 0]
    dts, _ends = series()
    truth = sum(dts.values())
    logged = [r["metrics"]["dt"] for r in recs]
    steps = [r["metrics"]["iter"] for r in recs]
    # The estimator: each gap at the mean of the two logged steps that bound it,
    # the steps before the first logged one at its dt.
    neighbour = sum(logged) + (LOG_FREQ - 1) * logged[0] + sum(
        (b - a - 1) * (x + y) / 2 for a, b, x, y in zip(steps, steps[1:], logged, logged[1:],
                                                        strict=False))
    global_median = (steps[-1] - steps[0] + LOG_FREQ) * g.median(logged)
    span = recs[-1]["timestamp"] - recs[0]["timestamp"]
    inside = sum(v for s, v in dts.items() if s > steps[0])
    bound = span + LOG_FREQ * logged[0]
    c = g.default_cells(recs, {"mfu": "mfu", "tflops": "tflops"}, loss="loss", dt="dt")
    about = (
        "Polaris, 1 node x 4 A100, `mpiexec ... --np=4 --ppn=4 python3 -m "
        "ezpz.examples.minimal` with WARMUP_ITERS=5 LOG_FREQ=5 TRAIN_ITERS=101 and a wide "
        "model: steps 6..100 train, steps 10, 15, ..., 100 are logged (19 records of each "
        "of the 4 ranks, interleaved in metrics.jsonl as minimal writes them). The step "
        "time is 0.25 s until step 60, then the node gets loaded and it rises linearly to "
        "1.0 s at step 100 (+-2 % scatter). The run's step time (steps 6..100, known to the "
        f"case's generator) is {truth:.3f} s. The clock agrees: step 10's record to step "
        f"100's is {span:.3f} s for steps 11..100, whose dt sum to {inside:.3f} s (plus 4 ms "
        "of loop overhead a step and the logging). A clock bound on the estimate must allow "
        "for the steps it counts outside that span: step 10 itself and the 4 before it "
        f"(6..9): span + 5 x step 10's dt = {bound:.3f} s >= the true {truth:.3f}; a bound "
        "of span + one dt would be exceeded by the right answer. "
        "Estimators over the 19 logged dt: each gap at the mean of its two bounding logged "
        f"steps (steps 6..9 at step 10's) gives {neighbour:.3f} s "
        f"({(neighbour / truth - 1) * 100:+.2f} %); every unlogged step at the global "
        f"median ({g.median(logged):.4f} s): 95 x median = {global_median:.3f} s "
        f"({(global_median / truth - 1) * 100:+.1f} %), a wrong number. Expected "
        f"wall_time_sec {truth:.3f} within 3 % (an honest local estimator is within 1 %; a "
        "note saying it is an estimate is welcome). Other cells: steps 19 (records used), "
        f"timestamp = step 10's record, mfu {c['mfu']} and tflops {c['tflops']} (medians "
        "of records 15..100; tflops = 25 TFLOP / dt, a rate: tflops x dt constant; "
        "tflops / (mfu/100) = 312), final_loss = step 100's "
        f"{c['final_loss']}, no throughput logged (both empty); gpus 4, nodes 1."
    )
    cells = {"system": "Polaris", "nodes": "1", "gpus": "4", **c,
             "wall_time_sec": {"approx": round(truth, 3), "rel": 0.03},
             "throughput_tokens_per_sec": "", "throughput_tokens_per_sec_per_gpu": ""}
    return {"about": about, "args": ["--config", "minimal/wide/logfreq5"],
            "expect": {"exit": 0, "cells": cells}}
