"""N processes append to one new results file at the same instant; then check it.

    python benchmarks/concurrent_append.py 64 [--dir DIR]

Each writer is a separate Python process that waits on a shared start signal,
then calls the same ``append_rows`` that ``--append`` uses, with a distinct
run. Afterwards the file must hold exactly one header, N rows, no duplicates,
and pass ``--check``. Exit 0 when it does.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import os, sys, time
from ezpz_amsc.results.schema import build_row
from ezpz_amsc.results.append import append_rows
target, go, i = sys.argv[1], sys.argv[2], int(sys.argv[3])
while not os.path.exists(go):
    time.sleep(0.001)
row = build_row({"timestamp": "2026-08-11T17:11:17Z", "system": "Aurora",
                 "config": f"sweep/{i}", "nodes": 1, "gpus": 12, "status": "pass",
                 "wall_time_sec": "1.000", "steps": 10})
append_rows(target, [list(row.values())], lock_timeout_sec=120)
"""


def run(n: int, folder: Path) -> tuple[bool, str]:
    target = folder / "results" / "runs.csv"
    go = folder / "go"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(target), str(go), str(i)],
                              env=env, stderr=subprocess.PIPE, text=True) for i in range(n)]
    time.sleep(0.5 + n * 0.02)  # let every interpreter start and spin on the signal
    go.touch()
    errs = [p.communicate(timeout=300)[1] for p in procs]
    codes = [p.returncode for p in procs]

    from ezpz_amsc.results.validate import check_results_file

    text = target.read_text()
    rows, problems = check_results_file(target)
    configs = sorted(line.split(",")[2] for line in text.splitlines()[1:])
    ok = (all(c == 0 for c in codes) and text.count("timestamp,system") == 1 and rows == n
          and not problems and configs == sorted(f"sweep/{i}" for i in range(n)))
    report = (f"{n} writers: exit codes {sorted(set(codes))}, header lines "
              f"{text.count('timestamp,system')}, rows {rows}, unique configs {len(set(configs))}, "
              f"check problems {len(problems)}")
    if not ok:
        report += "\n" + "\n".join(e for e in errs if e) + "\n" + "\n".join(problems)
    return ok, report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("writers", type=int, nargs="?", default=64)
    ap.add_argument("--dir", help="folder to work in (default: a new temporary one)")
    args = ap.parse_args()
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp())
    ok, report = run(args.writers, folder)
    print(report)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
