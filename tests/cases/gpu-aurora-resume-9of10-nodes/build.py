"""Aurora: 10 nodes, steps 1..30; resumed on 9 nodes after a 5-minute pause, steps 31..60."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 4 * 2048
FLOPS_PER_TOKEN = 8.2e9
ARGS = ("--tp 1 --model llama3-1b --dataset random --train-iters 60 --epochs 1 "
        "--batch-size 4 --seq-len 2048 --ckpt-every 10 --resume auto")


def build(run: Path) -> None:
    g.fsdp_launches(
        run, system="aurora", seed=1212, start="2026-11-16T02:10:05",
        tokens_per_dp=TOKENS, flops_per_token=FLOPS_PER_TOKEN, program_args=ARGS,
        overhead=0.09,
        launches=[
            {"nodes": 10, "first_step": 1, "n_steps": 30, "step_time": 0.70, "jobid": 8127300,
             "keep": (1, 60, 107, 119)},
            {"nodes": 9, "first_step": 31, "n_steps": 30, "step_time": 0.70, "jobid": 8127391,
             "keep": (1, 60, 107), "pause": 300.0, "warmup_factor": 5.0},
        ])


def attempts(run: Path) -> tuple[list, list]:
    recs = g.step_records(run / "metrics-0.jsonl")
    return ([r for r in recs if r["metrics"]["train/iter"] <= 30],
            [r for r in recs if r["metrics"]["train/iter"] >= 31])


def expectation(run: Path) -> dict:
    first, second = attempts(run)
    recs = first + second
    pause = second[0]["timestamp"] - first[-1]["timestamp"]
    f1, f2 = g.facts(first), g.facts(second)
    tps1 = g.median([r["metrics"]["train/tps"] for r in first[1:]])
    tps2 = g.median([r["metrics"]["train/tps"] for r in second[1:]])
    naive = g.median([r["metrics"]["train/tps"] for r in recs[1:]])
    per2 = g.median([r["metrics"]["train/tps_per_gpu"] for r in second[1:]])
    about = (
        "Aurora, fsdp_tp with checkpoints every 10 steps into one output folder: job 1 on 10 "
        "nodes (120 ranks, `--np=120 --ppn=12`) logged steps 1..30 and hit its walltime; "
        "job 2 got 9 nodes (108 ranks) and resumed from the step-30 checkpoint, logging "
        f"steps 31..60 into the same files {pause:.1f} s (5 minutes) after step 30's record. "
        "run_info.json, report and launch log are job 2's (NUM_NODES 9, world_size 108). "
        "Files kept: metrics-0, -1, -60, -107 (both jobs) and -119 (job 1 only). Evidence: "
        f"tps / tps_per_gpu = {f1['gpus_ratio']} on steps 1..30, {f2['gpus_ratio']} on "
        f"31..60; step 31 is a new warmup ({f2['dt0']} s). The global rate drops "
        f"{tps1:.0f} -> {tps2:.0f} (x{tps1 / tps2:.3f}: under a 1.25x throughput rule). One "
        f"run would give a median tps of {naive:.0f} ({naive / tps2:.3f}x job 2's) and, "
        f"over run_info's 108 ranks, {naive / 108:.1f} tokens/s/GPU vs the {per2:.1f} "
        "logged. A demanding user expects a refusal listing both attempts and naming "
        "`--attempt`: a world-size change is a new process whatever the pause or the "
        "throughput ratio."
    )
    return {"about": about, "args": ["--config", "llama3-1b/bs4/seq2048/tp1"],
            "expect": {"exit": 1, "stderr": ["--attempt", "(?i)attempt"]}}
