"""Time ``report`` on one large results file against a ``csv.reader`` loop, side by side.

    python benchmarks/report.py [--rows 1000000] [--repeats 5]

The floor is what any reader of the file does: a ``csv.reader`` loop over it
(``FLOOR_CSV`` of ``run.py``, the floor of ``docs/performance.md``'s rows cases).
``check`` reads the file exactly as the report does (CSV, the dashboard's own
checks, duplicates), so report minus check is what grouping, medians, flags and
the text cost on top. The file is a synthetic sweep (seeded): configs x systems x
node counts 1..512 x repeats, a few percent of rows failed or without throughput.
Timings are medians of interleaved subprocess runs; each ratio is the median of
the per-repeat ratios (command / floor of the same repeat).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_run import write_sweep  # noqa: E402
from run import FLOOR_CSV, Cmd, run_once  # noqa: E402

REPORT = "from ezpz_amsc.cli.report_command import report_command; report_command()"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ezpz-amsc-report-bench-") as tmp:
        sweep = Path(tmp) / "sweep.csv"
        write_sweep(sweep, a.rows)
        py = sys.executable
        floor = Cmd("floor (csv.reader loop)", [py, "-c", FLOOR_CSV, str(sweep)])
        check = Cmd("check", [py, "-m", "ezpz_amsc", "check", str(sweep)])
        text = Cmd("report", [py, "-c", REPORT, str(sweep)])
        as_json = Cmd("report --format json", [py, "-c", REPORT, str(sweep), "--format", "json"])
        cmds = [floor, check, text, as_json]
        for cmd in cmds:  # warm the page cache and the bytecode
            run_once(cmd, check=True)
        for rep in range(a.repeats):
            for cmd in cmds if rep % 2 == 0 else reversed(cmds):
                run_once(cmd)
        size_mb = sweep.stat().st_size / 1e6
    print(f"{a.rows:,} rows ({size_mb:.1f} MB), {a.repeats} runs each\n")
    print("| command | median s | ratio to the floor | ratio to check | peak RSS MB |")
    print("|---|--:|--:|--:|--:|")
    for cmd in cmds:
        ratios = [f"{_ratio(cmd, base):.2f}x" if cmd is not base else ""
                  for base in (floor, check)]
        print(f"| {cmd.label} | {cmd.median_sec():.3f} | {ratios[0]} | {ratios[1]} | "
              f"{cmd.peak_rss_mb():.1f} |")


def _ratio(cmd: Cmd, base: Cmd) -> float:
    """The median over the repeats of ``cmd``'s time / ``base``'s in the same repeat."""
    return statistics.median(t / b for t, b in zip(cmd.wall_sec, base.wall_sec, strict=True))


if __name__ == "__main__":
    main()
