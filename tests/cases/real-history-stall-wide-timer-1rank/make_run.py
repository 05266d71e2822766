"""A plain ezpz History loop whose data loading happens OUTSIDE `dt` and whose rate is
timed with a WIDER timer than `dt`: every step loads its batch (~80 ms, a slow
loader), then computes; `train/dt` times the compute only, `train/tps` = the step's
tokens / (data + compute time). One step (step 25) stalls 3 s in data loading.
So `tps * dt / tokens` is ~0.2-0.3, the rate is what the clock sustains.

Run as: WANDB_MODE=disabled ezpz launch -n 1 -- python3 make_run.py
"""
import json
import time

import ezpz
import torch
import torch.nn.functional as F
from ezpz.history import History

rank = ezpz.setup_torch(seed=0)
V, D, T, B, STEPS = 512, 64, 64, 8, 40
model = torch.nn.Sequential(torch.nn.Embedding(V, D), torch.nn.Linear(D, 4 * D),
                            torch.nn.GELU(), torch.nn.Linear(4 * D, V))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
history = History()
dts, walls = [], []
for step in range(1, STEPS + 1):
    w0 = time.perf_counter()
    time.sleep(3.0 if step == 25 else 0.08)  # the data loader
    x = torch.randint(0, V, (B, T + 1))
    t0 = time.perf_counter()
    logits = model(x[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
    t1 = time.perf_counter()
    dt = t1 - t0
    dts.append(dt)
    walls.append(t1 - w0)
    tokens = B * T
    history.update({"train/iter": step, "train/loss": loss.item(), "train/dt": dt,
                    "train/tps": tokens / (t1 - w0), "train/tps_per_gpu": tokens / (t1 - w0),
                    "train/tokens": tokens})
history.finalize()
with open("truth.json", "w") as fh:
    json.dump({"dt": dts, "true_sum_dt": sum(dts), "step_with_data": walls,
               "sum_step_with_data": sum(walls)}, fh)
