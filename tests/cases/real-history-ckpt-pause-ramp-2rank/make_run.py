"""A plain ezpz History loop on 2 ranks (DDP) with a CHECKPOINT PAUSE and a
BATCH-SIZE RAMP after it.

40 steps. After step 15's optimizer step the model and optimizer are saved and the
save is made to take 65 s (a slow file system: a real sleep); step 15's record, written
after the save, carries `train/ckpt_save_seconds`. Steps continue (16, 17, ...) in the
same process on the same 2 ranks, and the per-rank batch doubles from 4 to 8 sequences
after the checkpoint (a batch-size ramp), so the tokens per step and the rate change.
`train/dt` times the step only (not the save); `train/tps` = global tokens / dt,
`train/tps_per_gpu` = tps / world size, `train/tokens` = global tokens of the step.
Each rank writes metrics-<rank>.jsonl into the output folder.

Run as: WANDB_MODE=disabled ezpz launch -n 2 -- python3 make_run.py
"""
import json
import os
import time
from pathlib import Path

import ezpz
import ezpz.distributed
import torch
import torch.nn.functional as F
from ezpz.history import History

rank = ezpz.setup_torch(seed=0)
world = ezpz.get_world_size()
V, D, T, STEPS, CKPT_AT, PAUSE = 512, 64, 64, 40, 15, 65.0
model = torch.nn.Sequential(torch.nn.Embedding(V, D), torch.nn.Linear(D, 4 * D),
                            torch.nn.GELU(), torch.nn.Linear(4 * D, V))
model = ezpz.distributed.wrap_model_for_ddp(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
stamp = os.environ.get("RUN_STAMP", "run")
outdir = Path("outputs", "ckpt-ramp", stamp).resolve()
outdir.mkdir(parents=True, exist_ok=True)
history = History(report_dir=outdir, jsonl_path=outdir / f"metrics-{rank}.jsonl",
                  jsonl_overwrite=True)
dts, saves = [], {}
for step in range(1, STEPS + 1):
    bsz = 4 if step <= CKPT_AT else 8
    t0 = time.perf_counter()
    x = torch.randint(0, V, (bsz, T + 1))
    logits = model(x[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
    time.sleep(0.04)  # fixed per-step latency (collectives, logging of a bigger job)
    dt = time.perf_counter() - t0
    dts.append(dt)
    tokens = bsz * T * world
    metrics = {"train/iter": step, "train/loss": loss.item(), "train/dt": dt,
               "train/tps": tokens / dt, "train/tps_per_gpu": tokens / world / dt,
               "train/tokens": tokens, "train/batch_size": bsz * world}
    if step == CKPT_AT:
        s0 = time.perf_counter()
        if rank == 0:
            ckdir = Path("ckpt")
            ckdir.mkdir(exist_ok=True)
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                        "step": step}, ckdir / f"step{step}.pt")
        time.sleep(PAUSE)
        torch.distributed.barrier()
        metrics["train/ckpt_save_seconds"] = time.perf_counter() - s0
        saves[step] = metrics["train/ckpt_save_seconds"]
    history.update(metrics)
torch.distributed.barrier()
if rank == 0:
    history.finalize(outdir=outdir)
    with open("truth.json", "w") as fh:
        json.dump({"dt": dts, "true_sum_dt": sum(dts), "ckpt_save_seconds": saves}, fh)
torch.distributed.barrier()
