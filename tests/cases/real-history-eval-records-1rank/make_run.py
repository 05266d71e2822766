"""A plain ezpz History loop with EVALUATION records beside the training records.

Training: `train/iter` 1..40 with `train/loss`, `train/dt`, `train/tps`,
`train/tps_per_gpu`, `train/tokens`. Evaluation: before training (at iter 0) and
after every 10th step: 3 per-batch records `eval/batch`, `eval/loss`, `eval/dt`
WITHOUT the step counter (like ezpz's vit), then one summary record WITH the counter
(`train/iter`, `eval/loss`, `eval/ppl`).

Run as: WANDB_MODE=disabled ezpz launch -n 1 -- python3 make_run.py
"""
import json
import math
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


def evaluate(at: int) -> None:
    losses = []
    with torch.no_grad():
        for j in range(3):
            e0 = time.perf_counter()
            x = torch.randint(0, V, (B, T + 1))
            logits = model(x[:, :-1])
            el = F.cross_entropy(logits.reshape(-1, V), x[:, 1:].reshape(-1)).item()
            losses.append(el)
            history.update({"eval/batch": j, "eval/loss": el,
                            "eval/dt": time.perf_counter() - e0})
    mean = sum(losses) / len(losses)
    history.update({"train/iter": at, "eval/loss": mean, "eval/ppl": math.exp(mean)})


dts = []
evaluate(0)
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
    tokens = B * T
    history.update({"train/iter": step, "train/loss": loss.item(), "train/dt": dt,
                    "train/tps": tokens / dt, "train/tps_per_gpu": tokens / dt,
                    "train/tokens": tokens})
    if step % 10 == 0:
        evaluate(step)
history.finalize(dataset_fname="train")
with open("truth.json", "w") as fh:
    json.dump({"dt": dts, "true_sum_dt": sum(dts)}, fh)
