"""Sunspot, 2 nodes x 12 tiles: ezpz's vit (no throughput key, eval records at the end)."""

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "run"  # the real 2-rank vit run (shared fixture vit-2rank-mpirun), trimmed
WORK = 3 * 61.6e9 * 64 / 1e12  # ViT-L/16, 64 images per tile per step: TFLOP per step
RANKS = (0, 1, 23)


def build(run: Path) -> None:
    rng = random.Random(2929)
    iters = list(range(2, 31))  # vit's first logged iteration is 2, as in the real run
    dts = [0.107 * f for f in g.jitter(rng, len(iters), 0.025)]
    dts[0] *= 9.0
    stamps = g.align_first(g.clock(g.epoch("2026-12-01T03:33:15"), dts, rng, overhead=0.016,
                                   overhead_jitter=0.004))
    recs: dict[int, list] = {r: [] for r in RANKS}
    for it, dt, ts in zip(iters, dts, stamps, strict=True):
        loss = 6.9 - 0.05 * it + rng.uniform(-0.03, 0.03)
        base = {"train/iter": it, "train/loss": loss, "train/acc": min(0.3, 0.004 * it),
                "train/lr": 3e-4 * (1 - it / 300), "train/dt": dt, "train/dtd": dt * 0.02,
                "train/dtf": dt * 0.3, "train/dto": dt * 0.12, "train/dtb": dt * 0.56,
                "train/tflops": WORK / dt, "train/mfu": WORK / dt / 340.8 * 100}
        others = {r: g.other_rank(base, rng) for r in RANKS[1:]}
        body, aggregated = g.with_stats(base, list(others.values()))
        recs[0].append((ts, body, aggregated))
        for r, m in others.items():
            recs[r].append((ts - rng.uniform(0, 0.005), m, None))
    t = stamps[-1] + 1.5
    for k in range(4):  # eval batches: eval/* keys, no train/iter
        t += 0.05
        for r in RANKS:
            recs[r].append((t + 0.001 * r, {"eval/loss": 5.2 + 0.01 * k, "eval/acc": 0.21},
                            None))
    lines = []
    for r, items in recs.items():
        for ts, m, agg in items:
            rec = {"timestamp": ts, "rank": r, "metrics": m}
            if agg is not None:
                rec["aggregated"] = agg
            lines.append(rec)
    lines.sort(key=lambda rec: rec["timestamp"])
    g.write_jsonl(run / "metrics.jsonl", lines)
    command = g.launch_line("sunspot", 2, 12, 13944, "ezpz.examples.vit --model vit-l-16 "
                            "--batch-size 64 --max-iters 30 --dataset imagenet")
    dist = g.distributed("sunspot", nodes=2, world=24, command=command, jobid=13944)
    g.finish(run, "sunspot", dist, module="ezpz.examples.vit",
             stamp=g.utc(stamps[0] - 50, "%Y-%m-%d-%H%M%S"), start=stamps[0] - 49, last=t)


def expectation(run: Path) -> dict:
    recs = [r for r in g.read_records(run / "metrics.jsonl")
            if r["rank"] == 0 and "train/iter" in r["metrics"]]
    c = g.default_cells(recs, {"mfu": "train/mfu", "tflops": "train/tflops"})
    f = g.facts(recs)
    about = (
        "Sunspot, 2 nodes x 12 tiles, `mpiexec ... --np=24 --ppn=12 python3 -m "
        "ezpz.examples.vit` (ViT-L/16, 64 images per tile), based on the real 2-rank vit "
        "run (its run_info.json, report.md and record shape; plots, assets and the launch "
        "log trimmed). One interleaved metrics.jsonl as vit writes it, keeping ranks 0, 1 "
        "and 23 of the 24: iterations 2..30 (vit's first logged iteration is 2, as in the "
        "real run), rank 0's records with the flat statistics and `aggregated`, then 4 "
        "eval batches per rank with eval/* keys and no train/iter (not steps). No "
        "throughput key (vit logs none). tflops per tile = 11.83 TFLOP / dt, mfu against "
        f"340.8 (tflops / (mfu/100) = {f['implied']}). Expected: steps 29, timestamp = "
        f"iteration 2's record, wall_time_sec = sum of 29 dt = {c['wall_time_sec']} (the "
        f"slow first logged step {f['dt0']} s included), medians of iterations 3..30: mfu "
        f"{c['mfu']}, tflops {c['tflops']}; final_loss iteration 30's; both throughput "
        "cells empty (with the 'no throughput series logged' note); gpus 24, nodes 2, "
        "system SunSpot."
    )
    cells = {"system": "SunSpot", "nodes": "2", "gpus": "24", **c,
             "throughput_tokens_per_sec": "", "throughput_tokens_per_sec_per_gpu": ""}
    return {"about": about, "args": ["--config", "vit-l-16/bs64"],
            "expect": {"exit": 0, "cells": cells}}
