"""Polaris: 8 nodes died after step 18; resubmitted on 7 nodes 45 s later, steps continuing."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

BASE = "examples/runs/fsdp_tp-2rank"
TOKENS = 2 * 4096
FLOPS_PER_TOKEN = 1.2e10
ARGS = ("--tp 1 --model llama3-3b --dataset random --train-iters 40 --epochs 1 "
        "--batch-size 2 --seq-len 4096 --ckpt-every 6 --resume auto")


def build(run: Path) -> None:
    g.fsdp_launches(
        run, system="polaris", seed=1010, start="2026-11-15T10:04:31",
        tokens_per_dp=TOKENS, flops_per_token=FLOPS_PER_TOKEN, program_args=ARGS,
        launches=[
            {"nodes": 8, "first_step": 1, "n_steps": 18, "step_time": 0.82, "jobid": 3312040,
             "keep": (1, 27, 31)},
            {"nodes": 7, "first_step": 19, "n_steps": 22, "step_time": 0.82, "jobid": 3312051,
             "keep": (1, 27), "pause": 45.0, "warmup_factor": 4.0},
        ])


def attempts(run: Path) -> tuple[list, list]:
    recs = g.step_records(run / "metrics-0.jsonl")
    return ([r for r in recs if r["metrics"]["train/iter"] <= 18],
            [r for r in recs if r["metrics"]["train/iter"] >= 19])


def expectation(run: Path) -> dict:
    first, second = attempts(run)
    recs = first + second
    pause = second[0]["timestamp"] - first[-1]["timestamp"]
    f1, f2 = g.facts(first), g.facts(second)
    naive = g.median([r["metrics"]["train/tps"] for r in recs[1:]])
    per2 = g.median([r["metrics"]["train/tps_per_gpu"] for r in second[1:]])
    tps1 = g.median([r["metrics"]["train/tps"] for r in first[1:]])
    tps2 = g.median([r["metrics"]["train/tps"] for r in second[1:]])
    about = (
        "Polaris, fsdp_tp with a checkpoint every 6 steps, one output folder (fixed "
        "EZPZ_LOG_TIMESTAMP): job 1 on 8 nodes (32 ranks, `--np=32 --ppn=4`) logged steps "
        "1..18 and died in step 19 (a node failure, no finalize); the job was resubmitted on "
        "7 nodes (28 ranks) and resumed from the step-18 checkpoint, logging steps 19..40 "
        f"into the same files {pause:.1f} s after step 18's record (under a minute). "
        "run_info.json, the report and the launch log are the second job's (28 ranks, "
        "NUM_NODES 7). Files kept: metrics-0 and -1, -27 (both jobs), -31 (job 1 only: ends "
        "at step 18). The evidence of a new process: the logged world size "
        f"tps / tps_per_gpu = {f1['gpus_ratio']} on steps 1..18 and {f2['gpus_ratio']} on "
        "19..40; step 19 is slow again (a second warmup, "
        f"{f2['dt0']} s). Per-GPU rate is the same on both (same per-rank batch), the "
        f"global rate drops {tps1:.0f} -> {tps2:.0f} (x{tps2 / tps1:.3f}, under a 1.25x "
        "rule). Reduced as one run the row would mix two world sizes under gpus 28: a "
        f"median tps of {naive:.0f} that neither job ran at, and per GPU "
        f"{naive / 28:.0f} vs the {per2:.0f} logged. A demanding user expects a refusal "
        "that lists the two attempts (steps, first timestamps, ranks) and names "
        "`--attempt` to choose one, as for any other attempt boundary: the pause's length "
        "does not matter once the world size changed."
    )
    return {"about": about, "args": ["--config", "llama3-3b/bs2/seq4096/tp1"],
            "expect": {"exit": 1, "stderr": ["--attempt", "(?i)attempt"]}}
