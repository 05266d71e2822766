"""Time ``report`` against ``--check`` on one large results file, side by side.

    python benchmarks/report.py [--rows 100000] [--repeats 9]

``--check`` is the floor: it reads the file exactly as the report does (CSV,
the dashboard's own checks, duplicates), so the ratio report / check is what
grouping, medians, flags and the text cost on top. The file is a synthetic
sweep (seeded): configs x systems x node counts 1..512 x repeats, a few
percent of rows failed or without throughput. Timings are medians of
interleaved subprocess runs; the ratio is the median of the per-repeat ratios.
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import Cmd, run_once  # noqa: E402

from ezpz_amsc.results.schema import HEADER  # noqa: E402

SYSTEMS = {"aurora": 12, "perlmutter": 4, "sunspot": 12}
NODES = [2 ** k for k in range(10)]
START_EPOCH = 1_786_000_000  # 2026-08-06; one row a second, so every run is distinct
REPORT = "from ezpz_amsc.cli.report_command import report_command; report_command()"


def write_sweep(path: Path, rows: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(HEADER)
        for i in range(rows):
            system = rng.choice(list(SYSTEMS))
            nodes = rng.choice(NODES)
            gpus = nodes * SYSTEMS[system]
            tpg = 10_000 * (1 - 0.03 * NODES.index(nodes)) * rng.uniform(0.95, 1.05)
            status = "fail" if rng.random() < 0.02 else "pass"
            measured = status == "pass" and rng.random() > 0.02
            cells = (f"{tpg * gpus:.3f}", f"{tpg:.3f}", f"{rng.uniform(20, 50):.3f}")
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(START_EPOCH + i))
            w.writerow([stamp, system, f"model-{i % 40}/bs{1 + i % 3}", nodes, gpus, status,
                f"{rng.uniform(100, 900):.3f}", *(cells if measured else ("", "", "")),
                "", "", "", "oom" if status == "fail" else ""])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=9)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ezpz-amsc-report-bench-") as tmp:
        sweep = Path(tmp) / "sweep.csv"
        write_sweep(sweep, a.rows)
        py = sys.executable
        check = Cmd("--check", [py, "-m", "ezpz_amsc", "--check", str(sweep)])
        text = Cmd("report", [py, "-c", REPORT, str(sweep)])
        as_json = Cmd("report --format json", [py, "-c", REPORT, str(sweep), "--format", "json"])
        cmds = [check, text, as_json]
        for cmd in cmds:  # warm the page cache and the bytecode
            run_once(cmd, check=True)
        for rep in range(a.repeats):
            for cmd in cmds if rep % 2 == 0 else reversed(cmds):
                run_once(cmd)
        size_mb = sweep.stat().st_size / 1e6
    print(f"{a.rows:,} rows ({size_mb:.1f} MB), {a.repeats} runs each\n")
    print("| command | median s | ratio to --check (median per run) | peak RSS MB |")
    print("|---|--:|--:|--:|")
    for cmd in cmds:
        ratio = statistics.median(t / c for t, c in zip(cmd.wall_sec, check.wall_sec,
                                                        strict=True))
        print(f"| {cmd.label} | {cmd.median_sec():.3f} | {ratio:.2f}x | "
              f"{cmd.peak_rss_mb():.1f} |")


if __name__ == "__main__":
    main()
