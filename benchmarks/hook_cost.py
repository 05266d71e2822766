"""Time what the end-of-training export adds on rank 0: the ``ezpz.finalize`` hook on case (d).

    python benchmarks/hook_cost.py            # ~1 minute; prints a markdown table

In a training job the hook runs after ``History.finalize()``, in the training
process, where numpy is already loaded (torch imports it). So each repeat is
a fresh Python that imports numpy first, untimed, then times one call of
``finalize_hook`` on the run directory of case (d) (1,024 ranks x 500 steps in
one interleaved ``metrics.jsonl``, as ``benchmarks/make_run.py`` writes it),
which reads the metrics, writes ``amsc.csv`` and returns. The time therefore
includes importing the export pipeline itself, as the first call in a job does.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_run import make_run  # noqa: E402

_TIMED_CALL = (
    "import sys, time, types\n"
    "import numpy  # already loaded in a training process\n"
    "t0 = time.perf_counter()\n"
    "from ezpz_amsc.hook import finalize_hook\n"
    "finalize_hook(types.SimpleNamespace(rank=0), sys.argv[1])\n"
    "print(time.perf_counter() - t0)\n"
)


def time_hook(run: Path, parser: str, repeats: int) -> list[float]:
    env = {**os.environ, "EZPZ_AMSC_CONFIG": "bench", "EZPZ_AMSC_JSON": parser}
    env.pop("EZPZ_AMSC_APPEND", None)
    out = []
    for _ in range(repeats + 1):  # the first run warms the page cache and bytecode
        p = subprocess.run([sys.executable, "-c", _TIMED_CALL, str(run)], env=env,
                           capture_output=True, text=True, check=True)
        if not (run / "amsc.csv").exists():
            raise SystemExit(f"the hook wrote no row:\n{p.stderr}")
        (run / "amsc.csv").unlink()
        out.append(float(p.stdout))
    return out[1:]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--scale", type=float, default=1.0, help="shrink the run by this factor")
    p.add_argument("--keep", metavar="DIR", help="generate the run here and keep it")
    a = p.parse_args(argv)
    ranks, steps = max(2, int(1024 * a.scale)), max(10, int(500 * a.scale))
    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="ezpz-amsc-hook-"))
    try:
        run = tmp / f"hook-{ranks}x{steps}"
        if not (run / "run_info.json").exists():
            make_run(run, ranks, steps, seed=4, interleaved=True)
        print(f"{ranks:,} ranks x {steps:,} steps, one interleaved file; "
              f"{a.repeats} runs each; median (min-max) seconds\n")
        print("| JSON parser | hook on rank 0, s |\n|---|--:|")
        for parser in ("", "stdlib"):
            secs = time_hook(run, parser, a.repeats)
            print(f"| {parser or 'default (orjson if installed)'} | "
                  f"{statistics.median(secs):.3f} ({min(secs):.3f}-{max(secs):.3f}) |")
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
