"""A nanoGPT-style loop over ezpz History: every iteration logs a training record
(`iter`, `loss`, `dt`, `lr`, `mfu`), and every 20 iterations, BEFORE that iteration's
step (as nanoGPT's train.py does), an evaluation record with the counter and a few
training keys: `iter`, `train/loss` and `val/loss` (means over 4 eval batches),
`lr`, `mfu`. Iterations 0..60 (61 training steps; evaluations at 0, 20, 40, 60).
`mfu` is ezpz.flops.compute_mfu (0.0 on a CPU: peak unknown).

Run as: WANDB_MODE=disabled ezpz launch -n 1 -- python3 make_run.py
"""
import json
import time
from pathlib import Path

import ezpz
import torch
import torch.nn.functional as F
from ezpz.flops import compute_mfu
from ezpz.history import History

rank = ezpz.setup_torch(seed=0)
V, D, T, B, MAX_ITERS, EVAL_INTERVAL, EVAL_ITERS = 512, 64, 64, 8, 60, 20, 4
model = torch.nn.Sequential(torch.nn.Embedding(V, D), torch.nn.Linear(D, 4 * D),
                            torch.nn.GELU(), torch.nn.Linear(4 * D, V))
nparams = sum(p.numel() for p in model.parameters())
flops_per_iter = 6 * nparams * B * T
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
outdir = Path("out-nanogpt").resolve()
history = History(report_dir=outdir, jsonl_path=outdir / "metrics.jsonl", jsonl_overwrite=True)


def batch():
    x = torch.randint(0, V, (B, T + 1))
    return x[:, :-1], x[:, 1:]


@torch.no_grad()
def estimate_loss():
    out = {}
    for split in ("train", "val"):
        losses = []
        for _ in range(EVAL_ITERS):
            x, y = batch()
            losses.append(F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1)).item())
        out[split] = sum(losses) / len(losses)
    return out


dts = []
it = 0
last_mfu = 0.0
while True:
    lr = 1e-3 * min(1.0, (it + 1) / 10)
    for g in opt.param_groups:
        g["lr"] = lr
    if it % EVAL_INTERVAL == 0:
        losses = estimate_loss()
        history.update({"iter": it, "train/loss": losses["train"], "val/loss": losses["val"],
                        "lr": lr, "mfu": last_mfu})
    t0 = time.perf_counter()
    x, y = batch()
    loss = F.cross_entropy(model(x).reshape(-1, V), y.reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    time.sleep(0.02)
    dt = time.perf_counter() - t0
    dts.append(dt)
    last_mfu = compute_mfu(flops_per_iter, dt)
    history.update({"iter": it, "loss": loss.item(), "dt": dt, "lr": lr, "mfu": last_mfu})
    it += 1
    if it > MAX_ITERS:
        break
history.finalize(outdir=outdir)
with open("truth.json", "w") as fh:
    json.dump({"dt": dts, "true_sum_dt": sum(dts)}, fh)
