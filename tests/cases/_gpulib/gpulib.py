"""Shared helpers of the ``gpu-*`` cases: turn a real CPU ezpz run into a GPU-system run.

Written from ``docs/numbers.md`` and the shape of the real runs in ``examples/runs`` only
(never the tool's code). A case's ``build.py`` computes its own series (step times, tokens,
rates) and hands them to these writers, which lay them out the way ezpz 0.26.1 does:
``run_info.json`` with every ``Distributed`` value a string, the report's ``### Distributed``
bullets, per-rank ``metrics-<rank>.jsonl`` files whose rank-0 records carry the flat
``<key>/mean|max|min|std`` copies and an ``aggregated`` object, and the ``ezpz launch`` log.
Everything random is drawn from ``random.Random(seed)``, so a case builds the same bytes
every time.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import math
import os
import random
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# The systems of the dashboard: what ezpz's get_dist_info() reports on each.
SYSTEMS: dict[str, dict[str, Any]] = {
    "aurora": {
        "MACHINE": "Aurora", "gpn": 12, "peak": 340.8, "device": "xpu", "backend": "xccl",
        "scheduler": "PBS", "root": "/lus/flare/projects/demo/ezpz", "torch": "2.13.0+xpu",
        "pbs": "aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov",
    },
    "sunspot": {
        "MACHINE": "SunSpot", "gpn": 12, "peak": 340.8, "device": "xpu", "backend": "xccl",
        "scheduler": "PBS", "root": "/lus/gila/projects/demo/ezpz", "torch": "2.13.0+xpu",
        "pbs": "amn-0001",
    },
    "polaris": {
        "MACHINE": "Polaris", "gpn": 4, "peak": 312.0, "device": "cuda", "backend": "nccl",
        "scheduler": "PBS", "root": "/eagle/demo/ezpz", "torch": "2.13.0+cu128",
        "pbs": "polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov",
    },
    "perlmutter": {
        "MACHINE": "Perlmutter", "gpn": 4, "peak": 312.0, "device": "cuda", "backend": "nccl",
        "scheduler": "SLURM", "root": "/pscratch/sd/d/demo/ezpz", "torch": "2.13.0+cu128",
        "pbs": "",
    },
}

# fsdp_tp's per-step keys in the order it logs them (examples/runs/fsdp_tp-2rank).
FSDP_KEYS = [
    "train/iter", "train/epoch", "train/bidx", "train/loss", "train/dt", "train/dtf",
    "train/dtb", "grad/norm_preclip", "param/norm", "param/max_abs", "param/nonfinite",
    "grad/norm", "grad/max_abs", "grad/nonfinite", "opt/iter", "opt/lr", "input/iter",
    "input/max", "input/min", "labels/valid", "train/tflops", "train/mfu", "train/tokens",
    "train/tokens_seen", "train/tps_per_gpu", "train/tps",
]
TIME_KEYS = ("dt", "dtf", "dtb")
RATE_KEYS = ("tps", "tps_per_gpu", "tflops", "mfu", "tokens_per_sec")

PRECISION_BF16 = {
    "precision/mixed_precision": "bf16 (param_dtype=bfloat16, reduce_dtype=float32)",
    "precision/master_weights": "float32",
    "precision/compute_weights": "bfloat16",
    "precision/activations": "bfloat16",
    "precision/grad_reduce": "float32",
    "precision/loss_accum": "float32",
    "precision/optimizer_states": "float32",
    "precision/reduce_dtype_env": "fp32",
    "precision/fp32_flag": "False",
}


def epoch(stamp: str) -> float:
    """``2026-11-20T14:03:12.25`` (UTC) as epoch seconds."""
    when = _dt.datetime.fromisoformat(stamp).replace(tzinfo=_dt.timezone.utc)
    return when.timestamp()


def utc(ts: float, fmt: str = "%Y-%m-%dT%H:%M:%SZ") -> str:
    return _dt.datetime.fromtimestamp(ts, _dt.timezone.utc).strftime(fmt)


def hostnames(system: str, n: int) -> list[str]:
    """Node names in each facility's style (x4... Aurora, x1... Sunspot, x3... Polaris,
    nid... Perlmutter)."""
    if system == "aurora":
        return [f"x4{102 + i // 64:03d}c{(i // 8) % 8}s{i % 8}b0n0" for i in range(n)]
    if system == "sunspot":
        return [f"x1921c{i // 8}s{i % 8}b0n0" for i in range(n)]
    if system == "polaris":
        return [f"x3{5 + i // 28:03d}c0s{(i % 28) // 2 * 2 + 1}b0n{i % 2}" for i in range(n)]
    return [f"nid{1004 + 4 * i:06d}" for i in range(n)]


def hostfile(system: str, jobid: int) -> str:
    sysinfo = SYSTEMS[system]
    if sysinfo["scheduler"] == "PBS":
        return f"/var/spool/pbs/aux/{jobid}.{sysinfo['pbs']}"
    return f"{sysinfo['root']}/hostfiles/nodefile-{jobid}"


def launch_line(system: str, nodes: int, ppn: int, jobid: int, program: str) -> str:
    """ezpz 0.26.1's own launch line on the system, then ``python3 -m program``."""
    if SYSTEMS[system]["scheduler"] == "SLURM":
        head = f"srun -u --verbose -N{nodes} -n{nodes * ppn} --gpus-per-node={ppn}"
    else:
        head = (f"mpiexec --envall --line-buffer --np={nodes * ppn} --ppn={ppn} "
                f"--hostfile={hostfile(system, jobid)}")
    if program.split()[0].endswith(".py"):
        return f"{head} python3 {SYSTEMS[system]['root']}/{program}"
    return f"{head} python3 -m {program}"


def distributed(system: str, *, nodes: int, world: int, command: str, jobid: int,
                alloc_nodes: int | None = None) -> dict[str, str]:
    """``run_info.json``'s ``Distributed`` section as ezpz writes it: every value a string.
    ``alloc_nodes`` is the scheduler's allocation (NUM_NODES/NGPUS) when it differs from
    the nodes the ranks ran on."""
    sysinfo = SYSTEMS[system]
    alloc = alloc_nodes or nodes
    hosts = hostnames(system, alloc)
    ngpus = alloc * sysinfo["gpn"]
    return {
        "DEVICE": sysinfo["device"],
        "DEVICE_ID": f"{sysinfo['device']}:0",
        "DISTRIBUTED_BACKEND": sysinfo["backend"],
        "TORCHCOMMS": "False",
        "GPUS_PER_NODE": str(sysinfo["gpn"]),
        "HOSTS": str(hosts),
        "HOSTFILE": hostfile(system, jobid),
        "HOSTNAME": hosts[0],
        "LOCAL_RANK": "0",
        "MACHINE": sysinfo["MACHINE"],
        "NUM_NODES": str(alloc),
        "NGPUS": str(ngpus),
        "NGPUS_AVAILABLE": str(ngpus),
        "NODE_ID": "0",
        "RANK": "0",
        "SCHEDULER": sysinfo["scheduler"],
        "WORLD_SIZE_TOTAL": str(ngpus),
        "WORLD_SIZE_IN_USE": str(world),
        "world_size": str(world),
        "EZPZ_RUN_COMMAND": command,
    }


def _text_files(run: Path) -> list[Path]:
    return [p for p in run.rglob("*") if p.is_file() and not p.is_symlink()
            and (p.name == "run_info.json" or p.suffix == ".md")]


def set_provenance(run: Path, system: str, dist: dict[str, str], *, module: str,
                   stamp: str, written: float, metrics_name: str | None = None) -> None:
    """Rewrite ``run_info.json`` and every report's ``### Distributed`` bullets for ``dist``;
    move the copied run's paths to the system's project folder and output stamp; set the
    files' times to ``written`` (finalize writes them seconds after the last step)."""
    sysinfo = SYSTEMS[system]
    info_path = run / "run_info.json"
    info = json.loads(info_path.read_text())
    paths = info.get("Paths", {})
    old_out = paths.get("Output Directory", "")
    old_wd = paths.get("Working directory", "")
    new_out = f"{sysinfo['root']}/outputs/{module}/{stamp}"
    swaps = [(old_out, new_out), (old_wd, sysinfo["root"])]
    if metrics_name and paths.get("Metrics JSONL"):
        swaps.insert(0, (Path(paths["Metrics JSONL"]).name, metrics_name))
    python = f"{sysinfo['root']}/venvs/ezpz/bin/python3"
    old_stamp = Path(old_out).name if old_out else None
    for path in _text_files(run):
        text = path.read_text()
        for old, new in swaps:
            if old:
                text = text.replace(old, new)
        if old_stamp and re.fullmatch(r"\d{4}-\d\d-\d\d-\d{6}", old_stamp):
            text = text.replace(old_stamp, stamp)
        text = re.sub(r"(- \*\*Executable\*\*: ).*", lambda m: m.group(1) + python, text)
        path.write_text(text)
    info = json.loads(info_path.read_text())
    info["Python"]["Executable"] = python
    info["Torch"]["Version"] = sysinfo["torch"]
    info["Environment Variables"] = {
        "MASTER_ADDR": dist["HOSTNAME"], "MASTER_PORT": "29500",
        "WORLD_SIZE": dist["world_size"], "RANK": "0", "LOCAL_RANK": "0",
    }
    info["Distributed"] = dist
    info_path.write_text(json.dumps(info, indent=2) + "\n")
    for report in run.rglob("*.md"):
        if report.is_symlink():
            continue
        text = report.read_text()
        for section in ("Environment Variables", "Distributed", "Torch"):
            bullets = "".join(f"- **{k}**: {v}\n" for k, v in info[section].items())
            text = re.sub(rf"(### {section}\n\n)(?:- \*\*.*\n)+",
                          lambda m, b=bullets: m.group(1) + b, text)
        text = re.sub(r"# History Report \(\d{8}-\d{6}\)",
                      f"# History Report ({utc(written - 5, '%Y%m%d-%H%M%S')})", text)
        text = re.sub(r"_Generated at [^_]*_",
                      f"_Generated at {utc(written, '%Y-%m-%dT%H:%M:%S.000000Z')}_", text)
        report.write_text(text)
        os.utime(report, (written + 1.2, written + 1.2))
    os.utime(info_path, (written, written))


def write_launch_log(run: Path, *, stamp: str, command: str, world: int, backend: str,
                     start: float, end: float, status: int = 0) -> Path:
    """Replace the copied CPU run's ``ezpz launch`` log with this launch's (the lines real
    logs have around the training output)."""
    for old in run.glob("*-rank0.jsonl"):
        old.unlink()
    name = f"{stamp}-rank0.jsonl"
    lines = [
        (start, f"----[\U0001f34b ezpz.launch][started][{utc(start, '%Y-%m-%d-%H%M%S')}]----"),
        (start, f"Logs available at: logs/{name}"),
        (start, f"Evaluating: {command}"),
        (start, f"Execution started @ {utc(start, '%Y-%m-%d-%H%M%S')}..."),
        (start + 20, f"init_process_group: world_size={world}, rank=0, backend={backend}"),
        (end, f"----[\U0001f34b ezpz.launch][stop][{utc(end, '%Y-%m-%d-%H%M%S')}]----"),
        (end, f"Execution finished with {status}."),
        (end, f"Executing finished in {end - start:.2f} seconds."),
    ]
    path = run / name
    with path.open("w") as f:
        for when, message in lines:
            f.write(json.dumps({"timestamp": utc(when, "%Y-%m-%dT%H:%M:%S"), "level": "INFO",
                                "message": message, "logger": "ezpz.launch",
                                "module": "launch", "function": "run"}) + "\n")
    os.utime(path, (end, end))
    return path


def remove_metrics(run: Path) -> None:
    """Drop the copied CPU run's metrics files (every scheme), keeping the rest of the folder."""
    for path in list(run.rglob("*.jsonl")) + list(run.rglob("*.jsonl.gz")):
        if path.is_file() and not re.search(r"-rank\d+\.jsonl$", path.name):
            path.unlink()


def stats(values: Sequence[float]) -> dict[str, float]:
    mean = sum(values) / len(values)
    return {"mean": mean, "max": max(values), "min": min(values),
            "std": math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))}


def with_stats(metrics: dict[str, Any], others: Sequence[dict[str, Any]]) -> tuple[dict, dict]:
    """Rank 0's record body: its metrics plus the flat ``<key>/mean|max|min|std`` copies,
    and the same statistics as the ``aggregated`` object (ezpz's History on rank 0)."""
    aggregated: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        values = [float(value)] + [float(o[key]) for o in others
                                   if isinstance(o.get(key), (int, float))]
        for name, stat in stats(values).items():
            aggregated[f"{key}/{name}"] = stat
    return {**metrics, **aggregated}, aggregated


def other_rank(metrics: dict[str, Any], rng: random.Random, spread: float = 0.01,
               loss_spread: float = 0.02) -> dict[str, Any]:
    """Another rank's record for the same step: its own timer (step times a little
    different, its rates follow from them), its own micro-batch loss."""
    factor = 1.0 + rng.uniform(-spread, spread)
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        leaf = key.split("/")[-1]
        if isinstance(value, float) and leaf in TIME_KEYS:
            out[key] = value * factor
        elif isinstance(value, float) and leaf in RATE_KEYS:
            out[key] = value / factor
        elif isinstance(value, float) and leaf == "loss":
            out[key] = value + rng.uniform(-loss_spread, loss_spread)
        else:
            out[key] = value
    return out


def fsdp_metrics(rng: random.Random, *, step: int, loss: float, dt: float, tflops: float,
                 mfu: float, tokens: int, tokens_seen: int, tps: float, tps_per_gpu: float,
                 lr: float = 3e-4, bidx: int | None = None, epoch_: int = 0,
                 extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One fsdp_tp step record's ``metrics`` (its keys, in its order)."""
    dtf = dt * rng.uniform(0.30, 0.34)
    values: dict[str, Any] = {
        "train/iter": step, "train/epoch": epoch_,
        "train/bidx": step - 1 if bidx is None else bidx,
        "train/loss": loss, "train/dt": dt, "train/dtf": dtf, "train/dtb": dt - dtf,
        "grad/norm_preclip": rng.uniform(0.8, 1.6), "param/norm": 1283.4 + 0.01 * step,
        "param/max_abs": 0.61 + 0.0004 * step, "param/nonfinite": 0.0, "grad/norm": 0.0,
        "grad/max_abs": 0.0, "grad/nonfinite": 0.0, "opt/iter": [step], "opt/lr": lr,
        "input/iter": [step], "input/max": 128250.0 - rng.randrange(0, 40),
        "input/min": float(rng.randrange(0, 12)), "labels/valid": float(tokens),
        "train/tflops": tflops, "train/mfu": mfu, "train/tokens": tokens,
        "train/tokens_seen": tokens_seen, "train/tps_per_gpu": tps_per_gpu, "train/tps": tps,
    }
    values.update(extra or {})
    return values


def write_jsonl(path: Path, records: Iterable[dict[str, Any]], gz: bool = False) -> None:
    text = "".join(json.dumps(r) + "\n" for r in records)
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)


def rank_files(run: Path, segments: Sequence[tuple[list[tuple[float, dict[str, Any]]],
                                                   Sequence[int]]],
               *, seed: int, precision_after_first: bool = True, folder: Path | None = None,
               gz_rank0: bool = False) -> None:
    """Write ``metrics-<rank>.jsonl`` for rank 0 and each other kept rank.

    Each segment is one process launch: rank 0's records as (timestamp, metrics) in file
    order and the other ranks kept from that launch. Every launch appends to the same files
    (one output folder). Other ranks get the same steps from their own timers, written
    within 20 ms of rank 0's record; rank 0's records carry the statistics over the kept
    ranks (``aggregated``) when the launch has more than one rank. The all-strings
    ``precision/*`` record follows each launch's first step on every rank, as fsdp_tp
    writes it.
    """
    folder = folder or run
    rng = random.Random(seed)
    out: dict[int, list[dict[str, Any]]] = {0: []}
    for rank0, ranks in segments:
        for r in ranks:
            out.setdefault(r, [])
        for i, (ts, metrics) in enumerate(rank0):
            others = {r: other_rank(metrics, rng) for r in ranks}
            if ranks:
                body, aggregated = with_stats(metrics, list(others.values()))
                out[0].append({"timestamp": ts, "rank": 0, "metrics": body,
                               "aggregated": aggregated})
            else:
                out[0].append({"timestamp": ts, "rank": 0, "metrics": metrics})
            for r, m in others.items():
                out[r].append({"timestamp": ts - rng.uniform(0.0, 0.02), "rank": r,
                               "metrics": m})
            if precision_after_first and i == 0:
                for r in [0, *ranks]:
                    out[r].append({"timestamp": ts + 0.0004, "rank": r,
                                   "metrics": dict(PRECISION_BF16)})
    for r, records in out.items():
        gz = gz_rank0 and r == 0
        path = folder / (f"metrics-{r}.jsonl" + (".gz" if gz else ""))
        write_jsonl(path, records, gz=gz)
        when = max(rec["timestamp"] for rec in records)
        os.utime(path, (when, when))


def fsdp_segment(rng: random.Random, *, steps: Sequence[int], dts: Sequence[float],
                 stamps: Sequence[float], losses: Sequence[float], world: int,
                 tokens_per_dp: int, tp: int, flops_per_token: float, peak: float,
                 tokens_seen0: int = 0, logged_tokens: str = "global",
                 edit: Any = None) -> list[tuple[float, dict[str, Any]]]:
    """Rank 0's fsdp_tp records of one launch, computed the way fsdp_tp computes them.

    Per step: the global batch is ``tokens_per_dp`` tokens on each of ``world / tp``
    data-parallel groups; ``train/tps`` = global tokens / dt; ``train/tps_per_gpu`` =
    tps / world; ``train/tflops`` per device = flops_per_token x tokens_per_dp / tp / dt
    / 1e12 (tensor-parallel ranks split their group's work); ``train/mfu`` = tflops /
    peak x 100. ``logged_tokens`` says what ``train/tokens`` counts: ``global``,
    ``rank`` (tokens_per_dp / tp, this rank's share) or ``dp`` (one data-parallel group's
    batch). ``edit(index, metrics)`` may change a record before it is written.
    """
    dp = world // tp
    global_tokens = tokens_per_dp * dp
    shown = {"global": global_tokens, "rank": tokens_per_dp // tp,
             "dp": tokens_per_dp}[logged_tokens]
    seen = tokens_seen0
    out = []
    for i, (step, dt, ts, loss) in enumerate(zip(steps, dts, stamps, losses, strict=True)):
        seen += shown
        tps = global_tokens / dt
        tflops = flops_per_token * tokens_per_dp / tp / dt / 1e12
        metrics = fsdp_metrics(rng, step=step, loss=loss, dt=dt, tflops=tflops,
                               mfu=tflops / peak * 100.0, tokens=shown, tokens_seen=seen,
                               tps=tps, tps_per_gpu=tps / world)
        if edit is not None:
            metrics = edit(i, metrics)
        out.append((ts, metrics))
    return out


def align_first(stamps: list[float], frac: float = 0.25) -> list[float]:
    """Shift a run's timestamps so its first record falls at ``frac`` of a second: the
    first step's time then reads the same whether seconds are truncated or rounded."""
    shift = math.floor(stamps[0]) + frac - stamps[0]
    return [t + shift for t in stamps]


def finish(run: Path, system: str, dist: dict[str, str], *, module: str, stamp: str,
           start: float, last: float, status: int = 0, metrics_name: str | None = None) -> None:
    """Provenance written by finalize ~4 s after the last record, and the launch log."""
    set_provenance(run, system, dist, module=module, stamp=stamp, written=last + 4.0,
                   metrics_name=metrics_name)
    write_launch_log(run, stamp=stamp, command=dist["EZPZ_RUN_COMMAND"],
                     world=int(dist["world_size"]),
                     backend=dist["DISTRIBUTED_BACKEND"], start=start, end=last + 9.0,
                     status=status)


def read_records(path: Path) -> list[dict[str, Any]]:
    """A metrics file's records (for the cases' own arithmetic, not the tool's)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def jitter(rng: random.Random, n: int, rel: float) -> list[float]:
    """``n`` factors 1 +- ``rel`` (uniform): a steady step time's scatter."""
    return [1.0 + rng.uniform(-rel, rel) for _ in range(n)]


def loss_curve(rng: random.Random, steps: Sequence[int], start: float = 10.9,
               floor: float = 5.6, scale: float = 14.0, noise: float = 0.04) -> list[float]:
    return [floor + (start - floor) * math.exp(-s / scale) + rng.uniform(-noise, noise)
            for s in steps]


def clock(start: float, dts: Sequence[float], rng: random.Random, overhead: float = 0.06,
          overhead_jitter: float = 0.02, pauses: dict[int, float] | None = None) -> list[float]:
    """The records' timestamps: each written ``dt`` plus the logging overhead (rank 0's
    aggregation, a few tens of ms) after the previous one; ``pauses`` adds time before the
    record at that index (a checkpoint, a stall)."""
    out = []
    t = start
    for i, dt in enumerate(dts):
        t += dt + overhead + rng.uniform(-overhead_jitter, overhead_jitter)
        t += (pauses or {}).get(i, 0.0)
        out.append(t)
    return out


def median(values: Sequence[float]) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def f3(value: float) -> str:
    return f"{value:.3f}"


def fsdp_run(run: Path, *, system: str, nodes: int, seed: int, start: str, n_steps: int,
             step_time: float, tokens_per_dp: int, flops_per_token: float,
             program_args: str, jobid: int, ppn: int | None = None, tp: int = 1,
             warmup_factor: float = 6.0, jit: float = 0.02, overhead: float = 0.06,
             keep: Sequence[int] = (1,), logged_tokens: str = "global", edit: Any = None,
             peak: float | None = None, gz_rank0: bool = False,
             alloc_nodes: int | None = None, pauses: dict[int, float] | None = None,
             step_times: Sequence[float] | None = None,
             tokens_schedule: Sequence[int] | None = None) -> dict[str, Any]:
    """One fsdp_tp launch on ``nodes`` nodes of ``system``: the records, the rank files kept
    (rank 0 and ``keep``), run_info.json, the report and the launch log. Returns what was
    laid out (world size, timestamps) for the case's own arithmetic."""
    rng = random.Random(seed)
    sysinfo = SYSTEMS[system]
    ppn = ppn or sysinfo["gpn"]
    world = nodes * ppn
    steps = list(range(1, n_steps + 1))
    if step_times is None:
        dts = [step_time * f for f in jitter(rng, n_steps, jit)]
        dts[0] *= warmup_factor
    else:
        dts = list(step_times)
    stamps = align_first(clock(epoch(start), dts, rng, overhead=overhead, pauses=pauses))
    losses = loss_curve(rng, steps)
    remove_metrics(run)
    if tokens_schedule is None:
        records = fsdp_segment(rng, steps=steps, dts=dts, stamps=stamps, losses=losses,
                               world=world, tokens_per_dp=tokens_per_dp, tp=tp,
                               flops_per_token=flops_per_token,
                               peak=peak or sysinfo["peak"], logged_tokens=logged_tokens,
                               edit=edit)
    else:
        records = []
        seen = 0
        for i, step in enumerate(steps):
            one = fsdp_segment(rng, steps=[step], dts=[dts[i]], stamps=[stamps[i]],
                               losses=[losses[i]], world=world,
                               tokens_per_dp=tokens_schedule[i], tp=tp,
                               flops_per_token=flops_per_token,
                               peak=peak or sysinfo["peak"], tokens_seen0=seen,
                               logged_tokens=logged_tokens,
                               edit=None if edit is None else (lambda _j, m, i=i: edit(i, m)))
            seen = one[0][1]["train/tokens_seen"]
            records += one
    rank_files(run, [(records, keep)], seed=seed, gz_rank0=gz_rank0)
    command = launch_line(system, nodes, ppn, jobid, f"ezpz.examples.fsdp_tp {program_args}")
    dist = distributed(system, nodes=nodes, world=world, command=command, jobid=jobid,
                       alloc_nodes=alloc_nodes)
    stamp = utc(stamps[0] - 61, "%Y-%m-%d-%H%M%S")
    finish(run, system, dist, module="ezpz.examples.fsdp_tp", stamp=stamp,
           start=stamps[0] - 60, last=stamps[-1])
    return {"world": world, "stamps": stamps, "dts": dts}


def step_records(path: Path, key: str = "train/iter") -> list[dict[str, Any]]:
    """Rank 0's records that carry the step counter, in file order."""
    return [r for r in read_records(path) if r.get("rank", 0) == 0 and key in r["metrics"]]


def default_cells(records: Sequence[dict[str, Any]], series: dict[str, str],
                  loss: str = "train/loss", dt: str = "train/dt",
                  warmup: int = 1) -> dict[str, str]:
    """The documented default reduction, done by hand: the first record's timestamp
    (UTC, seconds), wall time = sum of dt over all steps, each column the median of its
    series after dropping the first ``warmup`` steps, the last loss, the step count."""
    out = {
        "timestamp": utc(records[0]["timestamp"]),
        "wall_time_sec": f3(sum(r["metrics"][dt] for r in records)),
        "final_loss": f"{records[-1]['metrics'][loss]:.6f}",
        "steps": str(len(records)),
    }
    for column, key in series.items():
        out[column] = f3(median([r["metrics"][key] for r in records[warmup:]]))
    return out


FSDP_SERIES = {
    "throughput_tokens_per_sec": "train/tps",
    "throughput_tokens_per_sec_per_gpu": "train/tps_per_gpu",
    "mfu": "train/mfu",
    "tflops": "train/tflops",
}


def span(values: Sequence[float], fmt: str = ".4f") -> str:
    """``min..max`` of a per-step figure (one value when they agree to ``fmt``)."""
    lo, hi = format(min(values), fmt), format(max(values), fmt)
    return lo if lo == hi else f"{lo}..{hi}"


def facts(recs: Sequence[dict[str, Any]], *, tps: str = "train/tps",
          tps_per_gpu: str = "train/tps_per_gpu", tokens: str = "train/tokens",
          dt: str = "train/dt", tflops: str = "train/tflops",
          mfu: str = "train/mfu") -> dict[str, str]:
    """Per-step identities of rank 0's records, quoted in the cases' ``about``: tps x dt /
    tokens, tps / tps_per_gpu, tflops / (mfu/100), tflops x dt, and how much of the records'
    time span the summed dt (steps 2..n) covers."""
    m = [r["metrics"] for r in recs]
    out: dict[str, str] = {"dt0": f"{m[0][dt]:.3f}"}
    if all(tps in x and tokens in x for x in m):
        out["ratio"] = span([x[tps] * x[dt] / x[tokens] for x in m])
    if all(tps in x and tps_per_gpu in x for x in m):
        out["gpus_ratio"] = span([x[tps] / x[tps_per_gpu] for x in m], ".3f")
    if all(tflops in x and mfu in x and x[mfu] for x in m):
        out["implied"] = span([x[tflops] / (x[mfu] / 100) for x in m[1:]], ".1f")
        out["work"] = span([x[tflops] * x[dt] for x in m[1:]], ".2f")
    stamps = [r["timestamp"] for r in recs]
    out["cover"] = f"{sum(x[dt] for x in m[1:]) / (stamps[-1] - stamps[0]):.3f}"
    out["span"] = f"{stamps[-1] - stamps[0]:.3f}"
    return out


def fsdp_launches(run: Path, *, system: str, seed: int, start: str,
                  launches: Sequence[dict[str, Any]], tokens_per_dp: int,
                  flops_per_token: float, program_args: str, tp: int = 1,
                  overhead: float = 0.06, jit: float = 0.02) -> list[list[float]]:
    """Several fsdp_tp launches appending to one output folder (retries, resumes).

    Each launch: ``nodes``, ``first_step``, ``n_steps``, ``step_time``, ``jobid``, ``keep``
    (other ranks kept), ``pause`` (seconds from the previous launch's last record to this
    launch's first), ``warmup_factor``. Steps, tokens_seen and the loss curve continue from
    the checkpoint. ``run_info.json``, the report and the launch log are the last launch's
    (only a launch that finishes calls finalize). Returns each launch's timestamps.
    """
    rng = random.Random(seed)
    sysinfo = SYSTEMS[system]
    remove_metrics(run)
    segments = []
    all_stamps: list[list[float]] = []
    seen = 0
    t = epoch(start)
    for k, launch in enumerate(launches):
        steps = list(range(launch["first_step"], launch["first_step"] + launch["n_steps"]))
        dts = [launch["step_time"] * f for f in jitter(rng, len(steps), jit)]
        dts[0] *= launch.get("warmup_factor", 6.0)
        stamps = clock(0.0, dts, rng, overhead=overhead)
        # A later launch's first record at a quarter second too (its timestamp is the
        # row's under --attempt): the pause moves by under a second.
        first = t if k == 0 else math.floor(all_stamps[-1][-1] + launch["pause"]) + 0.25
        stamps = [s - stamps[0] + first for s in stamps]
        if k == 0:
            stamps = align_first(stamps)
        all_stamps.append(stamps)
        world = launch["nodes"] * sysinfo["gpn"]
        records = fsdp_segment(rng, steps=steps, dts=dts, stamps=stamps,
                               losses=loss_curve(rng, steps), world=world,
                               tokens_per_dp=tokens_per_dp, tp=tp,
                               flops_per_token=flops_per_token, peak=sysinfo["peak"],
                               tokens_seen0=seen)
        seen = records[-1][1]["train/tokens_seen"]
        segments.append((records, launch["keep"]))
    rank_files(run, segments, seed=seed)
    last = launches[-1]
    command = launch_line(system, last["nodes"], sysinfo["gpn"], last["jobid"],
                          f"ezpz.examples.fsdp_tp {program_args}")
    dist = distributed(system, nodes=last["nodes"], world=last["nodes"] * sysinfo["gpn"],
                       command=command, jobid=last["jobid"])
    first_of_run = all_stamps[0][0]
    stamp = utc(first_of_run - 61, "%Y-%m-%d-%H%M%S")
    set_provenance(run, system, dist, module="ezpz.examples.fsdp_tp", stamp=stamp,
                   written=all_stamps[-1][-1] + 4.0)
    write_launch_log(run, stamp=stamp, command=command, world=int(dist["world_size"]),
                     backend=dist["DISTRIBUTED_BACKEND"], start=all_stamps[-1][0] - 40,
                     end=all_stamps[-1][-1] + 9.0)
    return all_stamps


def history_run(run: Path, *, system: str, nodes: int, records: Sequence[tuple[float, dict]],
                jobid: int, program: str, ppn: int | None = None) -> Path:
    """A plain ``History`` loop created on rank 0 only (``distributed_history=False``): one
    ``<YYYYMMDD-HHMMSS>.jsonl`` of rank 0's records (no ``aggregated``), ``report.md`` and
    ``run_info.json`` at the top of ``outputs/History-<stamp>/<stamp>/``, and the launch
    log. Returns the metrics file."""
    sysinfo = SYSTEMS[system]
    ppn = ppn or sysinfo["gpn"]
    remove_metrics(run)
    first, last = records[0][0], records[-1][0]
    name = utc(first - 3.2, "%Y%m%d-%H%M%S") + ".jsonl"
    path = run / name
    write_jsonl(path, ({"timestamp": ts, "rank": 0, "metrics": m} for ts, m in records))
    os.utime(path, (last, last))
    command = launch_line(system, nodes, ppn, jobid, program)
    dist = distributed(system, nodes=nodes, world=nodes * ppn, command=command, jobid=jobid)
    stamp = utc(last + 4.0, "%Y-%m-%d-%H%M%S")
    finish(run, system, dist, module=f"History-{stamp}", stamp=stamp, start=first - 50,
           last=last, metrics_name=name)
    return path


def interleaved(path: Path, per_rank: dict[int, Sequence[tuple[float, dict]]]) -> None:
    """One ``metrics.jsonl`` holding several ranks' records in the order they were written
    (minimal, vit, hf)."""
    records = [{"timestamp": ts, "rank": r, "metrics": m}
               for r, recs in per_rank.items() for ts, m in recs]
    records.sort(key=lambda rec: rec["timestamp"])
    write_jsonl(path, records)
    last = records[-1]["timestamp"]
    os.utime(path, (last, last))
