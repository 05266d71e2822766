"""The Polaris resubmission of gpu-polaris-resubmit-fewer-ranks-45s, exported with
``--attempt last``: the 7-node job's row."""

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "gpu_polaris_resubmit_base",
    Path(__file__).resolve().parents[1] / "gpu-polaris-resubmit-fewer-ranks-45s" / "build.py")
assert _spec is not None and _spec.loader is not None
_base = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_base)

BASE = _base.BASE


def build(run: Path) -> None:
    _base.build(run)


def expectation(run: Path) -> dict:
    _first, second = _base.attempts(run)
    c = g.default_cells(second, g.FSDP_SERIES)
    f = g.facts(second)
    about = (
        "The run of gpu-polaris-resubmit-fewer-ranks-45s (8 nodes, steps 1..18, died; "
        "resubmitted on 7 nodes, steps 19..40, same files), exported with `--attempt last`: "
        "the user chose the second job, the one run_info.json describes. Its row, from its "
        "own 22 records only: gpus = 28 (world_size, and tps / tps_per_gpu = "
        f"{f['gpus_ratio']} on every one of its steps), nodes = 28 / --ppn=4 = 7, "
        f"timestamp = step 19's record, wall_time_sec = sum of its 22 dt = "
        f"{c['wall_time_sec']} (its own warmup step, {f['dt0']} s, included), rates = "
        "median of its steps 20..40 (the restart's first step is its warmup): tps "
        f"{c['throughput_tokens_per_sec']}, per GPU {c['throughput_tokens_per_sec_per_gpu']}"
        f", mfu {c['mfu']} (tflops / (mfu/100) = {f['implied']}, the A100), tflops "
        f"{c['tflops']}; final_loss = step 40's; steps = 22. The note may say what was left "
        "out (job 1's 18 steps) and that the attempt starts at step 19."
    )
    cells = {"system": "Polaris", "nodes": "7", "gpus": "28", **c}
    return {"about": about, "args": ["--config", "llama3-3b/bs2/seq4096/tp1",
                                     "--attempt", "last"],
            "expect": {"exit": 0, "cells": cells}}
