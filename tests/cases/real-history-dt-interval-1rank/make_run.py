"""A plain ezpz History loop that logs every 5th step with `dt` over the whole
LOGGING INTERVAL: `train/dt` = the time since the previous log (the 5 steps since
then, plus the previous log's own write), `train/tps` = the interval's tokens / dt.
Steps are numbered 1..60; records at 5, 10, ..., 60.

Run as: WANDB_MODE=disabled ezpz launch -n 1 -- python3 make_run.py
Writes truth.json (each step's own time, and the logged intervals) beside it.
"""
import json
import time

import ezpz
import torch
import torch.nn.functional as F
from ezpz.history import History

rank = ezpz.setup_torch(seed=0)
V, D, T, B, STEPS, EVERY = 512, 64, 64, 8, 60, 5
model = torch.nn.Sequential(torch.nn.Embedding(V, D), torch.nn.Linear(D, 4 * D),
                            torch.nn.GELU(), torch.nn.Linear(4 * D, V))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
history = History()
step_times, intervals = [], []
t_last = time.perf_counter()
for step in range(1, STEPS + 1):
    s0 = time.perf_counter()
    x = torch.randint(0, V, (B, T + 1))
    logits = model(x[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1))
    loss.backward()
    opt.step()
    opt.zero_grad()
    time.sleep(0.02)  # a data-parallel all-reduce's latency, say
    step_times.append(time.perf_counter() - s0)
    if step % EVERY == 0:
        now = time.perf_counter()
        dt = now - t_last
        t_last = now
        intervals.append(dt)
        history.update({"train/iter": step, "train/loss": loss.item(), "train/dt": dt,
                        "train/tps": EVERY * B * T / dt})
history.finalize()
with open("truth.json", "w") as fh:
    json.dump({"step_times": step_times, "sum_step_times": sum(step_times),
               "intervals": intervals, "sum_intervals": sum(intervals)}, fh)
