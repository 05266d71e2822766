"""The Aurora 10 -> 9 node resume of gpu-aurora-resume-9of10-nodes, with ``--attempt last``."""

import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_gpulib"))
import gpulib as g  # noqa: E402

_spec = importlib.util.spec_from_file_location(
    "gpu_aurora_resume_base",
    Path(__file__).resolve().parents[1] / "gpu-aurora-resume-9of10-nodes" / "build.py")
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
        "The run of gpu-aurora-resume-9of10-nodes (10 nodes steps 1..30, then 9 nodes steps "
        "31..60 after 5 minutes, same files) with `--attempt last`: job 2's row from its 30 "
        f"records. gpus = 108 (world_size; tps / tps_per_gpu = {f['gpus_ratio']}), nodes = "
        "108 / --ppn=12 = 9, timestamp = step 31's record, wall_time_sec = sum of its 30 dt "
        f"= {c['wall_time_sec']} (its warmup {f['dt0']} s included), medians of steps "
        f"32..60: tps {c['throughput_tokens_per_sec']}, per tile "
        f"{c['throughput_tokens_per_sec_per_gpu']}, mfu {c['mfu']} (tflops / (mfu/100) = "
        f"{f['implied']}), tflops {c['tflops']}; final_loss step 60's; steps 30."
    )
    cells = {"system": "Aurora", "nodes": "9", "gpus": "108", **c}
    return {"about": about, "args": ["--config", "llama3-1b/bs4/seq2048/tp1",
                                     "--attempt", "last"],
            "expect": {"exit": 0, "cells": cells}}
