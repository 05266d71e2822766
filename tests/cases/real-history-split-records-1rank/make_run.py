"""A plain ezpz History loop that logs each step in TWO records with the same step
number: `train/iter` + `train/loss` first, then `train/iter` + the timing
(`train/dt`, `train/tps`, `train/tps_per_gpu`, `train/tokens`).

Run as: WANDB_MODE=disabled ezpz launch -n 1 -- python3 make_run.py
"""
import json
import time

import ezpz
import torch
import torch.nn.functional as F
from ezpz.history import History

rank = ezpz.setup_torch(seed=0)
world = ezpz.get_world_size()
V, D, T, B, STEPS = 512, 64, 64, 8, 30
model = torch.nn.Sequential(torch.nn.Embedding(V, D), torch.nn.Linear(D, 4 * D),
                            torch.nn.GELU(), torch.nn.Linear(4 * D, V))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
history = History()
dts = []
for step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    x = torch.randint(0, V, (B, T + 1))
    logits = model(x[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
    time.sleep(0.02)
    dt = time.perf_counter() - t0
    dts.append(dt)
    tokens = B * T * world
    history.update({"train/iter": step, "train/loss": loss.item()})
    history.update({"train/iter": step, "train/dt": dt, "train/tps": tokens / dt,
                    "train/tps_per_gpu": tokens / world / dt, "train/tokens": tokens})
history.finalize()
with open("truth.json", "w") as fh:
    json.dump({"dt": dts, "true_sum_dt": sum(dts)}, fh)
