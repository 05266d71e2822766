"""Run ezpz.examples.minimal unchanged, measuring the time of EVERY step (logged or not).

minimal times each step as dt = t2 - t0 from three perf_counter() calls per step
(t0, t1, t2). This wrapper swaps the module's `time` for a proxy that records every
perf_counter() value, so the true dt of the unlogged steps is known too; it writes them
to TRUTH_DIR/truth-<rank>.json. With DRIFT_SLEEP=A the optimizer step sleeps
A * (i / TRAIN_ITERS) ** 3 seconds on step i (inside dt): a step time that drifts upwards.
"""
import json
import os
import time as _time

import ezpz
import ezpz.examples.minimal as m
import torch

CALLS: list[float] = []


class _Clock:
    def __getattr__(self, name):
        return getattr(_time, name)

    def perf_counter(self) -> float:
        t = _time.perf_counter()
        CALLS.append(t)
        return t


m.time = _Clock()
AMP = float(os.environ.get("DRIFT_SLEEP", "0"))
N = int(os.environ.get("TRAIN_ITERS", 500))
SLEEPS: list[float] = []
if AMP > 0:
    _orig_step = torch.optim.Adam.step

    def _step(self, *a, **k):
        out = _orig_step(self, *a, **k)
        s = AMP * (len(SLEEPS) / N) ** 3
        SLEEPS.append(s)
        _time.sleep(s)
        return out

    torch.optim.Adam.step = _step

m.main()
# main(): t0, t_setup, train_start, then (t0, t1, t2) per step, then train_end
train = CALLS[3:-1]
assert len(train) == 3 * N, (len(CALLS), N)
dts = [train[3 * i + 2] - train[3 * i] for i in range(N)]
out = os.environ.get("TRUTH_DIR", ".")
with open(os.path.join(out, f"truth-{ezpz.get_rank()}.json"), "w") as f:
    json.dump({"dt": dts, "sleep": SLEEPS, "train_iters": N,
               "warmup_iters": int(os.environ.get("WARMUP_ITERS", 10)),
               "log_freq": int(os.environ.get("LOG_FREQ", 1))}, f)
