"""N processes append to one results file at the same instant; then check it.

    python benchmarks/concurrent_append.py 64 [--rows ROWS] [--style cli|hook|row] [--load K]
    python benchmarks/concurrent_append.py 128 --rows 1000000 --style cli --style hook
    python benchmarks/concurrent_append.py --versus-stdout --rows 1000000 [--cold]

Each writer is a separate Python process that waits on a shared start signal, then
appends one distinct run with the default lock timeout, in one of three styles:
``row``, the ``append_rows`` that ``--append`` uses, given a ready row; ``cli``, the
command line (``ezpz-amsc RUN --config sweep/I --append FILE``, run in the writer's
interpreter); ``hook``, what the end-of-training hook does (``EZPZ_AMSC_CONFIG``, the
export with hashing, the lock timeout from ``EZPZ_AMSC_LOCK_TIMEOUT``). With
``--rows`` the file already holds that many rows, each its own run (built in the
folder first). ``--load K`` keeps K busy processes spinning during the burst.

Afterwards the file must hold exactly one header, every row, no duplicates, and
pass ``check``; each writer must have exited 0 (no lock timeout). Each writer
measures how long it held the lock; the report gives p50, p99 and max of those,
and of each append's whole time. Exit 0 when the file is right.

``--versus-stdout`` times the command line's append of one run onto a ``--rows``
file against the same export to stdout (median of 7 each); ``--cold`` drops the
page cache of the results file (and the run's files) before each, with
``posix_fadvise(POSIX_FADV_DONTNEED)``, or all of it when ``/proc/sys/vm/drop_caches``
is writable.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "examples" / "runs" / "fsdp_tp-2rank"

CHILD = r"""
import contextlib, json, os, sys, time
import ezpz_amsc.results.append as ap
style, target, go, i, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
holds, real = [], ap.locked
@contextlib.contextmanager
def timed(*a, **k):
    with real(*a, **k) as held:
        t = time.perf_counter()
        try:
            yield held
        finally:
            holds.append(time.perf_counter() - t)
ap.locked = timed
if style == "row":
    from ezpz_amsc.results.schema import build_row
    row = build_row({"timestamp": "2026-08-11T17:11:17Z", "system": "Aurora",
                     "config": f"sweep/{i}", "nodes": 1, "gpus": 12, "status": "pass",
                     "wall_time_sec": "1.000", "steps": 10})
elif style == "cli":
    from ezpz_amsc.cli.group import main
else:
    from pathlib import Path
    from ezpz_amsc.flow.finalize import export_finished_run
    from ezpz_amsc.flow.publish import publish
    from ezpz_amsc.options import (ExportOptions, PublishOptions, hash_budget_from_env,
                                   lock_timeout_from_env)
    os.environ["EZPZ_AMSC_CONFIG"] = f"sweep/{i}"
while not os.path.exists(go):
    time.sleep(0.001)
start, code, err = time.perf_counter(), 0, ""
try:
    if style == "row":
        ap.append_rows(target, [list(row.values())])
    elif style == "cli":
        sys.argv = ["ezpz-amsc", os.environ["BENCH_RUN"], "--config", f"sweep/{i}",
                    "--append", target, "-q"]
        try:
            main()
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    else:
        opts = ExportOptions.from_env()
        result, opts = export_finished_run(Path(os.environ["BENCH_RUN"]), opts,
                                           hash_budget_from_env())
        publish([result], opts, PublishOptions(append=target,
                                               lock_timeout=lock_timeout_from_env()))
except Exception as e:
    code, err = 1, f"{type(e).__name__}: {e}"
with open(out, "w") as f:
    json.dump({"took": time.perf_counter() - start, "holds": holds, "code": code,
               "error": err}, f)
sys.exit(code)
"""

SPIN = ("import sys, time\nend = time.time() + float(sys.argv[1])\n"
        "while time.time() < end: pass")


def _row(config: str) -> list[str]:
    return ["2026-08-11T17:11:17Z", "Aurora", config, "1", "12", "pass", "1.000", "", "", "",
            "", "", "10", ""]


def build(target: Path, rows: int) -> None:
    """A results file of ``rows`` runs, each its own timestamp (one a second from 2024)."""
    from ezpz_amsc.results.schema import render_csv

    target.parent.mkdir(parents=True, exist_ok=True)
    base = 1704067200
    with open(target, "w") as f:
        f.write(render_csv([], header=True))
        block = 100_000
        for start in range(0, rows, block):
            f.write("".join(
                f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime(base + i))},Aurora,"
                f"old/{i % 97},{1 + i % 8},{12 * (1 + i % 8)},pass,{100 + i % 1000}.000,"
                f"{1000 + i % 5000}.5,{100 + i % 500}.25,{10 + i % 50}.5,,{2 + i % 3}.125,10,\n"
                for i in range(start, min(rows, start + block))))
        f.flush()
        os.fsync(f.fileno())  # a results file is not fresh from the page cache: no first
        # writer's fsync should flush a file built a second ago


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def _stats(name: str, seconds: list[float]) -> str:
    ms = [s * 1000 for s in seconds]
    return (f"{name}: p50 {_pct(ms, 0.5):.1f} ms, p99 {_pct(ms, 0.99):.1f} ms, "
            f"max {max(ms):.1f} ms")


def run(n: int, folder: Path, rows: int = 0, style: str = "row",
        load: int = 0) -> tuple[bool, str]:
    """The burst of ``n`` writers on ``folder/results/runs.csv`` (holding ``rows`` rows)."""
    target = folder / "results" / "runs.csv"
    go, outs = folder / "go", folder / "outs"
    for old in (go, target):
        if old.exists():
            old.unlink()
    outs.mkdir(parents=True, exist_ok=True)
    if rows:
        build(target, rows)
    env = {**os.environ, "BENCH_RUN": str(RUN), "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    for name in ("EZPZ_AMSC_LOCK_TIMEOUT", "EZPZ_AMSC_APPEND", "EZPZ_AMSC_PROVENANCE"):
        env.pop(name, None)
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, style, str(target), str(go), str(i),
                               str(outs / f"{i}.json")],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              text=True)
             for i in range(n)]
    time.sleep(2 + n * 0.05)  # let every interpreter start and spin on the signal
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN, "600"]) for _ in range(load)]
    go.touch()
    try:
        errs = [p.communicate(timeout=900)[1] for p in procs]
    finally:
        for s in spinners:
            s.kill()
            s.wait()
    codes = [p.returncode for p in procs]
    got = [json.loads((outs / f"{i}.json").read_text()) for i in range(n)
           if (outs / f"{i}.json").exists()]
    holds = [h for g in got for h in g["holds"]]
    took = [g["took"] for g in got]
    timeouts = sum("still locked" in e or "still locked" in g.get("error", "")
                   for e, g in zip(errs, got, strict=False))

    from ezpz_amsc.results.validate import check_results_file

    checked = check_results_file(target)
    configs = _configs(target, rows)
    want = rows + n
    ok = (all(c == 0 for c in codes) and checked.rows == want and not checked.problems
          and configs == sorted(f"sweep/{i}" for i in range(n)))
    lines = [f"{n} {style} writers on {rows:,} rows{f', {load} busy processes' if load else ''}:"
             f" exit codes {sorted(set(codes))}, lock timeouts {timeouts}, rows "
             f"{checked.rows:,} of {want:,}, new configs {len(set(configs))}, check problems "
             f"{len(checked.problems)}"]
    if holds:
        lines.append("  " + _stats("lock held", holds))
        lines.append("  " + _stats("each append, waiting included", took))
    if not ok:
        lines += [e for e in errs if e][:10] + checked.problems[:20]
    return ok, "\n".join(lines)


def _configs(target: Path, before: int) -> list[str]:
    """The config of every row after the header and the first ``before`` rows."""
    with open(target) as f:
        for _ in range(1 + before):
            f.readline()
        return sorted(line.split(",")[2] for line in f)


def _drop_cache(paths: list[Path]) -> str:
    """Drop the page cache: all of it if this process may, else these files' pages."""
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return "drop_caches"
    except OSError:
        pass
    for path in paths:
        for p in [path] if path.is_file() else [q for q in path.rglob("*") if q.is_file()]:
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
    return "posix_fadvise(DONTNEED) of the results file and the run's files"


def versus_stdout(folder: Path, rows: int, cold: bool, repeat: int = 7) -> tuple[bool, str]:
    """The command line's append onto a ``rows``-row file against its export to stdout."""
    exe = Path(sys.executable).with_name("ezpz-amsc")
    target = folder / f"versus-{rows}" / "runs.csv"
    build(target, rows)
    how = ""

    def timed(args: list[str]) -> float:
        nonlocal how
        if cold:
            how = _drop_cache([target, RUN])
        start = time.perf_counter()
        r = subprocess.run([str(exe), str(RUN), *args], capture_output=True, text=True)
        took = time.perf_counter() - start
        if r.returncode != 0:
            raise SystemExit(r.stderr)
        return took

    stdout, append = [], []
    for i in range(repeat):
        stdout.append(timed(["--config", f"v/{i}", "-q"]))
        append.append(timed(["--config", f"v/{i}", "--append", str(target), "-q"]))
    ratio = statistics.median(append) / statistics.median(stdout)
    return ratio <= 1.5, (
        f"{'cold' if cold else 'warm'} page cache{f' ({how})' if how else ''}: export to "
        f"stdout median {statistics.median(stdout) * 1000:.0f} ms, append onto {rows:,} rows "
        f"median {statistics.median(append) * 1000:.0f} ms (max {max(append) * 1000:.0f} ms):"
        f" {ratio:.2f}x ({'within' if ratio <= 1.5 else 'over'} 1.5x)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("writers", type=int, nargs="?", default=64)
    ap.add_argument("--rows", type=int, default=0, help="rows in the file before the burst")
    ap.add_argument("--style", action="append", choices=("row", "cli", "hook"),
                    help="how each writer appends (repeat for several bursts; default row)")
    ap.add_argument("--load", type=int, default=0, help="busy processes during the burst")
    ap.add_argument("--versus-stdout", action="store_true",
                    help="one append onto --rows rows against the export to stdout")
    ap.add_argument("--cold", action="store_true", help="with --versus-stdout: drop the cache")
    ap.add_argument("--dir", help="folder to work in (default: a new temporary one)")
    args = ap.parse_args()
    folder = Path(args.dir) if args.dir else Path(tempfile.mkdtemp())
    if args.versus_stdout:
        ok, report = versus_stdout(folder, args.rows or 1_000_000, args.cold)
        print(report)
        return 0 if ok else 1
    ok = True
    for style in args.style or ["row"]:
        good, report = run(args.writers, folder / style, args.rows, style, args.load)
        ok &= good
        print(report, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
