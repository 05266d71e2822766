"""A plain ezpz History loop whose step counter counts MICRO-BATCHES.

8 micro-batches (gradient accumulation) per optimizer step; the loop logs once per
optimizer step, every optimizer step, with `train/iter` = the index of the last
micro-batch consumed (7, 15, 23, ...). `train/dt` times the WHOLE optimizer step
(all 8 forward/backward passes and the optimizer step), `train/tps` = the step's
tokens / dt, `train/tokens` the step's tokens.

Run as: WANDB_MODE=disabled ezpz launch -n 1 -- python3 make_run.py
Writes truth.json (every optimizer step's dt as measured) beside it.
"""
import json
import time

import ezpz
import torch
import torch.nn.functional as F
from ezpz.history import History

rank = ezpz.setup_torch(seed=0)
V, D, T, MB, ACCUM, STEPS = 512, 64, 64, 8, 8, 30
model = torch.nn.Sequential(torch.nn.Embedding(V, D), torch.nn.Linear(D, 4 * D),
                            torch.nn.GELU(), torch.nn.Linear(4 * D, V))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
history = History()
micro = -1
dts = []
for _step in range(1, STEPS + 1):
    t0 = time.perf_counter()
    total = 0.0
    for _ in range(ACCUM):
        x = torch.randint(0, V, (MB, T + 1))
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1)) / ACCUM
        loss.backward()
        total += loss.item()
        micro += 1
    opt.step()
    opt.zero_grad()
    dt = time.perf_counter() - t0
    dts.append(dt)
    tokens = MB * T * ACCUM
    history.update({"train/iter": micro, "train/loss": total, "train/dt": dt,
                    "train/tps": tokens / dt, "train/tokens": tokens})
history.finalize()
with open("truth.json", "w") as fh:
    json.dump({"dt": dts, "true_sum_dt": sum(dts)}, fh)
