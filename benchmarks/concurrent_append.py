"""N processes append to one results file at the same instant; then check it.

    python benchmarks/concurrent_append.py 64 [--rows ROWS] [--dir DIR]
    python benchmarks/concurrent_append.py 64 --compare      # at 1,000 rows, then 1,000,000
    python benchmarks/concurrent_append.py 16 --rows 200000 --cold   # no index yet

Each writer is a separate Python process that waits on a shared start signal,
then calls the same ``append_rows`` that ``--append`` uses, with a distinct
run and the default lock timeout. With ``--rows``, the file already holds that
many rows (built in the folder first) and one append before the burst builds
the run index (results/index.py), as the first append to a file does.
Afterwards the file must hold exactly one header, every row, no duplicates,
and pass ``check``. Exit 0 when it does.

With ``--cold``, the burst meets a file whose run index was never built (a
team's file that this user's jobs append to for the first time, all at once):
one writer builds it before taking the lock, the others wait for that build
instead of each reading the whole file (results/index.py); the report counts
the whole-file builds.

Besides the burst, ``--rows`` times 20 appends made one after the other (no
wait for the lock): what one append costs at that size. ``--compare`` does
both at 1,000 and at 1,000,000 rows and prints the ratio of the median single
appends: the duplicate check must not grow with the file (issue: at most 2x).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import os, sys, time
from ezpz_amsc.results.schema import build_row
from ezpz_amsc.results.append import append_rows
from ezpz_amsc.results.index import RunIndexFile
if os.environ.get("BENCH_BUILDS"):  # count the whole-file builds of the index
    def counted(self, _rebuild=RunIndexFile.rebuild):
        with open(os.environ["BENCH_BUILDS"], "a") as f:
            f.write("built\n")
        _rebuild(self)
    RunIndexFile.rebuild = counted
target, go, i = sys.argv[1], sys.argv[2], int(sys.argv[3])
while not os.path.exists(go):
    time.sleep(0.001)
row = build_row({"timestamp": "2026-08-11T17:11:17Z", "system": "Aurora",
                 "config": f"sweep/{i}", "nodes": 1, "gpus": 12, "status": "pass",
                 "wall_time_sec": "1.000", "steps": 10})
start = time.perf_counter()
append_rows(target, [list(row.values())])
print(time.perf_counter() - start)
"""


def _row(config: str) -> list[str]:
    return ["2026-08-11T17:11:17Z", "Aurora", config, "1", "12", "pass", "1.000", "", "", "",
            "", "", "10", ""]


def build(target: Path, rows: int) -> None:
    """A results file of ``rows`` distinct runs, written in large blocks."""
    from ezpz_amsc.results.schema import render_csv

    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w") as f:
        f.write(render_csv([], header=True))
        block = 100_000
        for start in range(0, rows, block):
            f.write("".join(f"2026-08-10T00:00:00Z,Aurora,old/{i},1,12,pass,1.000,,,,,,10,\n"
                            for i in range(start, min(rows, start + block))))


def run(n: int, folder: Path, rows: int = 0, cold: bool = False) -> tuple[bool, str]:
    """The burst of ``n`` writers on ``folder/results/runs.csv`` (holding ``rows`` rows);
    ``cold``: without the append that builds the run index first."""
    from ezpz_amsc.results.append import append_rows

    target = folder / "results" / "runs.csv"
    go = folder / "go"
    builds = folder / "builds"
    lines = []
    if rows:
        build(target, rows)
    if rows and not cold:
        start = time.perf_counter()
        append_rows(target, [_row("warm-up")])
        lines.append(f"first append to the {rows:,}-row file (builds the run index): "
                     f"{time.perf_counter() - start:.3f} s")
    env = {**os.environ, "BENCH_BUILDS": str(builds), "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(target), str(go), str(i)],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(n)]
    time.sleep(0.5 + n * 0.02)  # let every interpreter start and spin on the signal
    go.touch()
    outs = [p.communicate(timeout=600) for p in procs]
    codes = [p.returncode for p in procs]
    took = sorted(float(o) for o, _ in outs if o.strip())

    from ezpz_amsc.results.validate import check_results_file

    checked = check_results_file(target)
    got, problems = checked.rows, checked.problems
    before = rows + (1 if rows and not cold else 0)  # the rows built, and the warm-up's
    configs = _configs(target, before)
    want = before + n
    ok = (all(c == 0 for c in codes) and got == want and not problems
          and configs == sorted(f"sweep/{i}" for i in range(n)))
    built = len(builds.read_text().splitlines()) if builds.exists() else 0
    lines.append(f"{n} writers: exit codes {sorted(set(codes))}, rows {got:,} of {want:,}, new "
                 f"configs {len(set(configs))}, check problems {len(problems)}, whole-file "
                 f"index builds during the burst {built}")
    if took:
        lines.append(f"  each append, waiting for the lock included: median {_ms(took)}, "
                     f"slowest {took[-1] * 1000:.0f} ms")
    if not ok:
        lines += [e for _, e in outs if e] + problems[:20]
    return ok, "\n".join(lines)


def _configs(target: Path, before: int) -> list[str]:
    """The config of every row after the header and the first ``before`` rows."""
    with open(target) as f:
        for _ in range(1 + before):
            f.readline()
        return sorted(line.split(",")[2] for line in f)


def _ms(seconds: list[float]) -> str:
    return f"{statistics.median(seconds) * 1000:.1f} ms"


def single(folder: Path, rows: int, count: int = 20) -> list[float]:
    """``count`` appends one after the other to a ``rows``-row file (after the first)."""
    from ezpz_amsc.results.append import append_rows

    target = folder / f"single-{rows}" / "runs.csv"
    build(target, rows)
    append_rows(target, [_row("warm-up")])
    took = []
    for i in range(count):
        start = time.perf_counter()
        append_rows(target, [_row(f"single/{i}")])
        took.append(time.perf_counter() - start)
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("writers", type=int, nargs="?", default=64)
    ap.add_argument("--rows", type=int, default=0, help="rows in the file before the burst")
    ap.add_argument("--compare", action="store_true",
                    help="burst and single appends at 1,000 and at 1,000,000 rows")
    ap.add_argument("--cold", action="store_true",
                    help="with --rows: the burst meets a file whose index was never built")
    ap.add_argument("--dir", help="folder to work in (default: a new temporary one)")
    args = ap.parse_args()
    if args.cold and not args.rows:
        ap.error("--cold needs --rows")
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp())
    if args.cold:
        ok, report = run(args.writers, folder / f"cold-{args.rows}", args.rows, cold=True)
        print(report)
        return 0 if ok else 1
    sizes = [1_000, 1_000_000] if args.compare else [args.rows] if args.rows else []
    ok = True
    if not sizes:
        ok, report = run(args.writers, folder)
        print(report)
        return 0 if ok else 1
    medians = {}
    for rows in sizes:
        good, report = run(args.writers, folder / f"burst-{rows}", rows)
        ok &= good
        print(report)
        took = single(folder, rows)
        medians[rows] = statistics.median(took)
        print(f"  one append at a time, at {rows:,} rows: median {_ms(took)}, "
              f"slowest {max(took) * 1000:.1f} ms")
    if len(medians) == 2:
        ratio = medians[1_000_000] / medians[1_000]
        print(f"median single append at 1,000,000 rows / at 1,000 rows: {ratio:.2f}x "
              f"({'within' if ratio <= 2 else 'over'} 2x)")
        ok &= ratio <= 2
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
