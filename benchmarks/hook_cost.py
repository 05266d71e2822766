"""Time what the end-of-training export adds on rank 0: the ``ezpz.finalize`` hook.

    python benchmarks/hook_cost.py                  # case (d), ~1 minute
    python benchmarks/hook_cost.py --cases d,e,b,b1m  # every case run.py has (minutes)

In a training job the hook runs after ``History.finalize()``, in the training
process, where numpy is already loaded (torch imports it). So each repeat is
a fresh Python that imports numpy first, untimed, then times one call of
``finalize_hook`` on the run directory of a case of ``benchmarks/run.py`` (as
``benchmarks/make_run.py`` writes it; (d): 1,024 ranks x 500 steps in one
interleaved ``metrics.jsonl``), which reads the metrics, writes ``amsc.csv``
and ``amsc.json`` (its provenance record, with the sha256 of the metrics) and
returns. The time therefore includes importing the export pipeline itself, as
the first call in a job does. The last column is the same call with
``EZPZ_AMSC_HASH_BUDGET=0``: what the hook costs without hashing any metrics file.
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


# name -> (ranks, steps, seed, interleaved): the shapes and seeds of benchmarks/run.py
CASES = {"b": (1, 100_000, 2, False), "b1m": (1, 1_000_000, 6, False),
         "d": (1024, 500, 4, True), "e": (12_288, 100, 5, True)}


def time_hook(run: Path, parser: str, repeats: int, budget: str | None = None) -> list[float]:
    env = {**os.environ, "EZPZ_AMSC_CONFIG": "bench", "EZPZ_AMSC_JSON": parser}
    for name in ("EZPZ_AMSC_APPEND", "EZPZ_AMSC_PROVENANCE", "EZPZ_AMSC_HASH_BUDGET"):
        env.pop(name, None)
    if budget is not None:
        env["EZPZ_AMSC_HASH_BUDGET"] = budget
    out = []
    for _ in range(repeats + 1):  # the first run warms the page cache and bytecode
        p = subprocess.run([sys.executable, "-c", _TIMED_CALL, str(run)], env=env,
                           capture_output=True, text=True, check=True)
        if not (run / "amsc.csv").exists():
            raise SystemExit(f"the hook wrote no row:\n{p.stderr}")
        (run / "amsc.csv").unlink()
        (run / "amsc.json").unlink()
        out.append(float(p.stdout))
    return out[1:]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--scale", type=float, default=1.0, help="shrink the run by this factor")
    p.add_argument("--keep", metavar="DIR", help="generate the runs here and keep them")
    p.add_argument("--cases", default="d", help=f"comma-separated subset of {','.join(CASES)}")
    a = p.parse_args(argv)
    wanted = a.cases.split(",")
    if not set(wanted) <= set(CASES):
        p.error(f"unknown case(s): {', '.join(sorted(set(wanted) - set(CASES)))}")
    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="ezpz-amsc-hook-"))
    try:
        print(f"{a.repeats} runs each; median (min-max) seconds\n")
        print("| case | JSON parser | hook on rank 0, s | with EZPZ_AMSC_HASH_BUDGET=0, s |\n"
              "|---|---|--:|--:|")
        for name in wanted:
            ranks, steps, seed, interleaved = CASES[name]
            ranks = max(2, int(ranks * a.scale)) if ranks > 1 else 1  # as run.py
            steps = max(10, int(steps * a.scale))
            run = tmp / f"hook-{name}-{ranks}x{steps}"
            if not (run / "run_info.json").exists():
                make_run(run, ranks, steps, seed=seed, interleaved=interleaved)
            what = f"({name}) {ranks:,} rank{'s' if ranks > 1 else ''} x {steps:,} steps"
            for parser in ("", "stdlib"):
                cells = [_spread(time_hook(run, parser, a.repeats, budget))
                         for budget in (None, "0")]
                print(f"| {what} | {parser or 'default (orjson if installed)'} | "
                      f"{cells[0]} | {cells[1]} |")
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def _spread(secs: list[float]) -> str:
    return f"{statistics.median(secs):.3f} ({min(secs):.3f}-{max(secs):.3f})"


if __name__ == "__main__":
    main()
