"""Write a synthetic ezpz run directory for benchmarks (seeded, deterministic).

The shape follows what ezpz 0.26 writes for ``ezpz.examples.fsdp_tp`` (see
``examples/runs/fsdp_tp-2rank``):

- ``metrics-<rank>.jsonl`` per rank: one record per step with ~26 metrics,
  plus one all-strings ``precision/*`` record after step 1. On rank 0 of a
  multi-rank run with at most ``AGGREGATE_MAX_RANKS`` ranks, every scalar
  metric also gets ``/mean|max|min|std`` copies, flat in ``metrics`` and again
  under ``aggregated`` (~130 keys, ~7 KB a line).
- ``run_info.json`` whose ``Distributed`` values are all strings.
- ``train/report-train.md`` with a ``### Distributed`` section.
- a structured-log ``<stamp>-rank0.jsonl`` (``message``/``level`` records).
- ``plots/train/tplot/train/*.txt`` and ``train/assets/*.txt`` text plots.
- optionally ``checkpoints/step_<n>/__<r>_0.distcp`` with many small files.

With ``interleaved=True`` the metrics are instead one ``metrics.jsonl`` that
every rank appends to, shaped like ``ezpz.examples.hf``'s records (step key
``train/step``, global ``train/tokens_per_sec``, ~430 bytes a line, no
``aggregated``). Each step's block holds one line per rank; rank 0's line is
a few lines into the block on odd steps and in its middle on even ones.

Usage::

    python benchmarks/make_run.py OUT_DIR --ranks 768 --steps 300 --checkpoint-files 5000
    python benchmarks/make_run.py OUT_DIR --ranks 1024 --steps 500 --interleaved
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import time
from pathlib import Path

from ezpz_amsc.results.schema import HEADER

# Past this many ranks ezpz stops gathering per-metric statistics to rank 0
# (the all-gather of every metric costs too much at scale).
AGGREGATE_MAX_RANKS = 384
GPUS_PER_NODE = 12  # Aurora: 6 PVC GPUs x 2 tiles
START_EPOCH = 1_795_990_723.0  # 2026-11-29T22:18:43Z
TOKENS_PER_STEP = 512
HF_TOKENS_PER_STEP = 4096  # per rank: batch x sequence length
PEAK_TFLOPS = 229.0  # only shapes mfu; any positive constant would do

_PRECISION = {
    "precision/mixed_precision": "bf16", "precision/master_weights": "float32",
    "precision/compute_weights": "bfloat16", "precision/activations": "bfloat16",
    "precision/grad_reduce": "float32", "precision/loss_accum": "float32",
    "precision/optimizer_states": "float32", "precision/reduce_dtype_env": "bf16",
    "precision/fp32_flag": "False",
}
_PLOT_METRICS = ("train_dt", "train_dtb", "train_dtf", "train_loss", "train_mfu",
                 "train_tflops", "train_tps", "train_tps_per_gpu", "grad_norm", "param_norm")
_STATS = ("mean", "max", "min", "std")


def _metrics(rng: random.Random, it: int, ranks: int, tokens_seen: int) -> dict:
    """One rank's metrics for step ``it`` in fsdp_tp's key order."""
    # Step 1 compiles and warms caches: an order of magnitude slower.
    dt = (1.8 if it == 1 else 0.15) * (1.0 + 0.05 * rng.random())
    dtf = dt * (0.35 + 0.05 * rng.random())
    tps_per_gpu = TOKENS_PER_STEP / dt
    tflops = 6.0 * 2.0e9 * tps_per_gpu / 1e12
    return {
        "train/iter": it,
        "train/epoch": 0,
        "train/bidx": it - 1,
        "train/loss": 8.0 * math.exp(-it / 5000.0) + 0.1 * rng.random(),
        "train/dt": dt,
        "train/dtf": dtf,
        "train/dtb": dt - dtf,
        "grad/norm_preclip": 1.0 + 0.1 * rng.random(),
        "param/norm": 364.0 + rng.random(),
        "param/max_abs": 4.2 + 0.4 * rng.random(),
        "param/nonfinite": 0.0,
        "grad/norm": 0.9 + 0.1 * rng.random(),
        "grad/max_abs": 0.01 * rng.random(),
        "grad/nonfinite": 0.0,
        "opt/iter": [it],
        "opt/lr": 0.003,
        "input/iter": [it],
        "input/max": float(rng.randrange(2000, 2048)),
        "input/min": float(rng.randrange(0, 32)),
        "labels/valid": 256.0,
        "train/tflops": tflops,
        "train/mfu": 100.0 * tflops / PEAK_TFLOPS,
        "train/tokens": TOKENS_PER_STEP,
        "train/tokens_seen": tokens_seen,
        "train/tps_per_gpu": tps_per_gpu,
        "train/tps": tps_per_gpu * ranks,
    }


def _aggregate(rng: random.Random, metrics: dict) -> dict:
    """``<key>/mean|max|min|std`` for every scalar metric, as rank 0 logs them."""
    agg = {}
    for k, v in metrics.items():
        if isinstance(v, list):
            continue
        spread = abs(v) * 0.02 * rng.random()
        agg[f"{k}/mean"] = float(v)
        agg[f"{k}/max"] = float(v) + spread
        agg[f"{k}/min"] = float(v) - spread
        agg[f"{k}/std"] = spread / 2.0
    return agg


def write_metrics(folder: Path, rank: int, ranks: int, steps: int, seed: int,
                  nonfinite_every: int = 0) -> Path:
    """Write ``metrics-<rank>.jsonl``; every ``nonfinite_every``-th loss is NaN if > 0."""
    rng = random.Random(seed * 1_000_003 + rank)
    aggregate = rank == 0 and 1 < ranks <= AGGREGATE_MAX_RANKS
    dumps = json.dumps
    path = folder / f"metrics-{rank}.jsonl"
    ts = START_EPOCH + rank * 1e-4
    with open(path, "w", encoding="utf-8") as f:
        for it in range(1, steps + 1):
            m = _metrics(rng, it, ranks, it * TOKENS_PER_STEP)
            if nonfinite_every and it % nonfinite_every == 0:
                m["train/loss"] = float("nan")  # json writes a bare NaN, as ezpz does
            rec: dict = {"timestamp": ts, "rank": rank, "metrics": m}
            if aggregate:
                agg = _aggregate(rng, m)
                m.update(agg)
                rec["aggregated"] = agg
            f.write(dumps(rec) + "\n")
            if it == 1:
                f.write(dumps({"timestamp": ts + 1e-4, "rank": rank,
                               "metrics": dict(_PRECISION)}) + "\n")
            ts += m["train/dt"] + 0.002
    return path


def _hf_metrics(rng: random.Random, step: int, ranks: int) -> dict:
    """One rank's record of ``step`` in ``hf``'s keys (global throughput, per-GPU mfu)."""
    dt = (2.4 if step == 1 else 0.31) * (1.0 + 0.03 * rng.random())
    dtf = dt * (0.33 + 0.02 * rng.random())
    tokens_per_sec = HF_TOKENS_PER_STEP * ranks / dt
    tflops = 6.0 * 1.2e9 * HF_TOKENS_PER_STEP / dt / 1e12
    return {
        "train/step": step,
        "train/epoch": round(step / 1000.0, 6),
        "train/loss": 9.0 * math.exp(-step / 300.0) + 0.2 * rng.random(),
        "train/dt": dt,
        "train/dtf": dtf,
        "train/dtb": dt - dtf,
        "train/tokens_per_sec": tokens_per_sec,
        "train/tflops": tflops,
        "train/mfu": 100.0 * tflops / PEAK_TFLOPS,
        "train/lr": 3e-4 * min(1.0, step / 100.0),
        "train/grad_norm": 1.0 + 0.5 * rng.random(),
        "train/tokens": HF_TOKENS_PER_STEP * ranks * step,
    }


def write_interleaved(folder: Path, ranks: int, steps: int, seed: int) -> Path:
    """Write ``metrics.jsonl``: every rank's record of each step, rank 0 among them."""
    rng = random.Random(seed)
    dumps = json.dumps
    path = folder / "metrics.jsonl"
    ts = START_EPOCH
    with open(path, "w", encoding="utf-8") as f:
        for step in range(1, steps + 1):
            # Rank 0 a few lines into the step's block, or in its middle: the
            # reader must find it wherever it lands.
            at = min(3, ranks - 1) if step % 2 else ranks // 2
            order = list(range(1, ranks))
            order.insert(at, 0)
            dt = 0.0
            for r in order:
                m = _hf_metrics(rng, step, ranks)
                dt = max(dt, m["train/dt"])
                f.write(dumps({"timestamp": ts + r * 1e-5, "rank": r, "metrics": m}) + "\n")
            ts += dt + 0.002
    return path


def _distributed(ranks: int) -> dict[str, str]:
    nodes = -(-ranks // GPUS_PER_NODE)
    hosts = [f"x4102c{i // 8}s{i % 8}b0n0" for i in range(min(nodes, 4))]
    cmd = (f"mpiexec --verbose --envall -n {ranks} -ppn {GPUS_PER_NODE} "
           f"python3 -m ezpz.examples.fsdp_tp --tp 1 --train-iters 300")
    return {
        "DEVICE": "xpu", "DEVICE_ID": "xpu:0", "DISTRIBUTED_BACKEND": "xccl",
        "TORCHCOMMS": "False", "GPUS_PER_NODE": str(GPUS_PER_NODE), "HOSTS": str(hosts),
        "HOSTFILE": "/var/spool/pbs/aux/1234567.aurora-pbs-0001", "HOSTNAME": hosts[0],
        "LOCAL_RANK": "0", "MACHINE": "Aurora", "NUM_NODES": str(nodes),
        "NGPUS": str(nodes * GPUS_PER_NODE), "NGPUS_AVAILABLE": str(nodes * GPUS_PER_NODE),
        "NODE_ID": "0", "RANK": "0", "SCHEDULER": "PBS", "WORLD_SIZE_TOTAL": str(ranks),
        "WORLD_SIZE_IN_USE": str(ranks), "world_size": str(ranks), "EZPZ_RUN_COMMAND": cmd,
    }


def write_provenance(folder: Path, ranks: int, stamp: str,
                     metrics_name: str = "metrics-0.jsonl") -> None:
    out = f"/lus/flare/projects/demo/ezpz/outputs/ezpz.examples.fsdp_tp/{stamp}"
    dist = _distributed(ranks)
    paths = {
        "Working directory": "/lus/flare/projects/demo/ezpz",
        "Output Directory": out,
        "Report": f"{out}/train/report-train.md",
        "Plots (terminal)": f"{out}/plots/train/tplot",
        "JSON Log": f"{out}/{stamp}-rank0.jsonl",
        "Metrics JSONL": f"{out}/{metrics_name}",
    }
    info = {
        "Paths": paths,
        "Python": {"Version": "3.11.7", "Implementation": "cpython"},
        "Torch": {"Version": "2.13.0+xpu"},
        "Environment Variables": {"WORLD_SIZE": str(ranks), "RANK": "0", "LOCAL_RANK": "0"},
        "Distributed": dist,
    }
    (folder / "run_info.json").write_text(json.dumps(info, indent=2))

    lines = [f"# History Report ({stamp.replace('-', '')})", "", "## Environment", ""]
    for section, values in (("Paths", paths), ("Python", info["Python"]),
                            ("Torch", info["Torch"]), ("Distributed", dist)):
        lines += [f"### {section}", ""]
        lines += [f"- **{k}**: {v}" for k, v in values.items()]
        lines.append("")
    lines += ["## Metric Overview", ""]
    for name in _PLOT_METRICS:
        lines += [f"### {name}", "", "| Statistic |     Value |", "|:-------- | --------:|",
                  "| Latest    | 0.150000 |", ""]
    report = folder / "train" / "report-train.md"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(lines))


def write_log(folder: Path, stamp: str, lines: int = 200) -> None:
    """The structured log: JSON lines with ``message``/``level``, never metrics."""
    with open(folder / f"{stamp}-rank0.jsonl", "w", encoding="utf-8") as f:
        for i in range(lines):
            f.write(json.dumps({
                "timestamp": "2026-11-29T22:18:36", "level": "INFO",
                "message": f"[{i}] step logged", "logger": "ezpz.history", "line": 1077,
                "module": "history", "function": "update", "process": 7906,
            }) + "\n")


def write_plots(folder: Path, steps: int) -> None:
    body = "\n".join(f"{i:>8} | {'*' * (i % 40)}" for i in range(0, steps, max(1, steps // 40)))
    for sub in (folder / "plots" / "train" / "tplot" / "train", folder / "train" / "assets"):
        sub.mkdir(parents=True, exist_ok=True)
        for name in _PLOT_METRICS:
            for suffix in ("", "_hist", "_summary"):
                (sub / f"{name}{suffix}.txt").write_text(body + "\n")


def write_checkpoints(folder: Path, ranks: int, files: int, steps: int) -> None:
    """``files`` small files in torch-DCP-shaped step folders (shards + .metadata)."""
    root = folder / "checkpoints"
    written, n = 0, 0
    payload = b"\0" * 64
    while written < files:
        n += 1
        d = root / f"step_{n * max(1, steps // 10):07d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / ".metadata").write_bytes(payload)
        written += 1
        for r in range(min(ranks, files - written)):
            (d / f"__{r}_0.distcp").write_bytes(payload)
            written += 1


def make_run(out: str | os.PathLike[str], ranks: int, steps: int, seed: int = 0,
             checkpoint_files: int = 0, nonfinite_every: int = 0,
             interleaved: bool = False) -> Path:
    """Create the run directory ``out`` (must not exist) and return it."""
    if ranks < 1 or steps < 1:
        raise ValueError("ranks and steps must be at least 1")
    if interleaved and nonfinite_every:
        raise ValueError("nonfinite_every applies to per-rank files only")
    folder = Path(out)
    folder.mkdir(parents=True)
    stamp = "2026-11-29-221835"
    if interleaved:
        write_interleaved(folder, ranks, steps, seed)
    for r in range(0 if interleaved else ranks):
        write_metrics(folder, r, ranks, steps, seed, nonfinite_every)
    write_provenance(folder, ranks, stamp, "metrics.jsonl" if interleaved else "metrics-0.jsonl")
    write_log(folder, stamp)
    write_plots(folder, steps)
    if checkpoint_files:
        write_checkpoints(folder, ranks, checkpoint_files, steps)
    return folder


# --- results files ---------------------------------------------------------------

SWEEP_SYSTEMS = {"aurora": 12, "perlmutter": 4, "sunspot": 12}
SWEEP_NODES = [2 ** k for k in range(10)]
SWEEP_START_EPOCH = 1_786_000_000  # 2026-08-06; one row a second, so every run is distinct


def write_sweep(path: Path, rows: int, seed: int = 0) -> None:
    """A results file of ``rows`` rows, as a long sweep leaves it (seeded): configs x
    systems x node counts 1..512 x repeats, a few percent failed or without throughput."""
    rng = random.Random(seed)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        for i in range(rows):
            system = rng.choice(list(SWEEP_SYSTEMS))
            nodes = rng.choice(SWEEP_NODES)
            gpus = nodes * SWEEP_SYSTEMS[system]
            tpg = 10_000 * (1 - 0.03 * SWEEP_NODES.index(nodes)) * rng.uniform(0.95, 1.05)
            status = "fail" if rng.random() < 0.02 else "pass"
            measured = status == "pass" and rng.random() > 0.02
            cells = (f"{tpg * gpus:.3f}", f"{tpg:.3f}", f"{rng.uniform(20, 50):.3f}")
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(SWEEP_START_EPOCH + i))
            w.writerow([stamp, system, f"model-{i % 40}/bs{1 + i % 3}", nodes, gpus, status,
                f"{rng.uniform(100, 900):.3f}", *(cells if measured else ("", "", "")),
                "", "", "", "oom" if status == "fail" else ""])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", help="run directory to create (must not exist)")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--checkpoint-files", type=int, default=0)
    p.add_argument("--nonfinite-every", type=int, default=0,
                   help="make every N-th step's loss NaN (0: never)")
    p.add_argument("--interleaved", action="store_true",
                   help="one metrics.jsonl of all ranks, shaped like hf's records")
    a = p.parse_args(argv)
    make_run(a.out, a.ranks, a.steps, a.seed, a.checkpoint_files, a.nonfinite_every,
             a.interleaved)


if __name__ == "__main__":
    main()
