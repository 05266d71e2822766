"""Concurrent appends killed at random instants, then retried: nothing lost, torn or doubled.

    python benchmarks/kill_stress.py [--rounds 40] [--writers 8] [--kill-share 0.5] [--seed 1]

Each round starts ``--writers`` processes at once, each appending a distinct run (the
same run directory under its own ``--config``) to one results file, alternately with
``--provenance`` (rounds 0, 2, ...: one results file and its records folder) and without
(rounds 1, 3, ...: another results file). A share of them is sent ``SIGKILL`` at a
random instant of its life (drawn between 0.3 and 1.1 times the longest writer of an
unkilled calibration round, so most kills land while it works, not while Python starts),
or, as often, kills itself at a named instant of the append (``EZPZ_AMSC_CRASH_AT``);
every killed writer is retried with the same command and ``--skip-existing`` (retries
may be killed too) until it exits 0. Then each results file must hold every run exactly
once, ``check`` must pass on both, ``check --provenance`` must report nothing, and the
records folder must hold one record per row and nothing else (no pending or orphan
record, no temporary file). Prints the figures; exit 0 when all hold.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "examples" / "runs" / "fsdp_tp-2rank"
MAX_TRIES = 20
CRASH_AT = "EZPZ_AMSC_CRASH_AT"  # fs/create.py's test seam: SIGKILL at a named instant
# The named instants of an append with records (docs/results-files.md, "Crash windows").
POINTS = ["opened", "record-pending", "file-linked", "rows", "rows-synced", "rows-written",
          "record-linked", "committed"]


def _cmd(run: Path, config: str, results: Path, records: Path | None) -> list[str]:
    extra = ["--provenance", str(records)] if records else []
    return [sys.executable, "-m", "ezpz_amsc", str(run), "--config", config, "--append",
            str(results), *extra, "-q", "--skip-existing"]


def _one(cmd: list[str], kill_at: float | None, crash_at: str | None, tally: Counter[str],
         lock: threading.Lock, rng: random.Random, delays: tuple[float, float]) -> None:
    """Run ``cmd`` until it exits 0: killed at ``kill_at`` seconds (or at the named instant
    ``crash_at``) the first time, then at a random instant with the same chance on every
    retry."""
    for attempt in range(MAX_TRIES):
        env = dict(os.environ)
        env.pop(CRASH_AT, None)
        if attempt == 0 and crash_at:
            env[CRASH_AT] = crash_at
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env)
        if kill_at is not None:
            try:
                p.wait(timeout=kill_at)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
        out, err = p.communicate()
        with lock:
            tally["processes"] += 1
            if p.returncode == -signal.SIGKILL:
                tally["killed"] += 1
            elif p.returncode == 0:
                tally["exited 0"] += 1
                tally["retries needed"] += attempt
                return
            else:
                tally["failed"] += 1
                print(f"writer failed ({p.returncode}): {err.strip()}", file=sys.stderr)
        with lock:
            kill_at = rng.uniform(*delays) if rng.random() < tally["share"] / 100 else None
    with lock:
        tally["gave up"] += 1


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main(argv: list[str] | None = None) -> dict[str, object]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--kill-share", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--dir", type=Path, default=None, help="work here (default: a temp folder)")
    args = p.parse_args(argv)
    rng = random.Random(args.seed)
    tmp = Path(tempfile.mkdtemp(dir=args.dir))
    try:
        return _stress(args, rng, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _stress(args: argparse.Namespace, rng: random.Random, tmp: Path) -> dict[str, object]:
    run = tmp / "run"
    shutil.copytree(RUN, run)
    with_records, plain, records = tmp / "with-records.csv", tmp / "plain.csv", tmp / "records"
    # Calibration: one round of writers, none killed, to time a writer under this load.
    t0 = time.monotonic()
    procs = [subprocess.Popen(_cmd(run, f"calibrate-{w}", tmp / "calibrate.csv", None),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for w in range(args.writers)]
    longest = 0.0
    for proc in procs:
        proc.wait()
        longest = max(longest, time.monotonic() - t0)
    delays = (0.3 * longest, 1.1 * longest)
    tally: Counter[str] = Counter(share=round(args.kill_share * 100))
    lock = threading.Lock()
    expected: dict[Path, list[str]] = {with_records: [], plain: []}
    started = time.monotonic()
    for r in range(args.rounds):
        target, folder = (with_records, records) if r % 2 == 0 else (plain, None)
        threads = []
        for w in range(args.writers):
            config = f"r{r}-w{w}"
            expected[target].append(config)
            kill_at = crash_at = None
            if rng.random() < args.kill_share:  # half at a random instant, half at a named one
                if rng.random() < 0.5:
                    kill_at = rng.uniform(*delays)
                else:
                    crash_at = rng.choice(POINTS if folder else POINTS[:1] + POINTS[3:6])
                    tally["at named instants"] += 1
            t = threading.Thread(target=_one, args=(_cmd(run, config, target, folder), kill_at,
                                                    crash_at, tally, lock, rng, delays))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
    elapsed = time.monotonic() - started
    problems: list[str] = []
    for target, configs in expected.items():
        got = Counter(row["config"] for row in _rows(target))
        lost = sorted(set(configs) - set(got))
        doubled = sorted(c for c, n in got.items() if n > 1)
        extra = sorted(set(got) - set(configs))
        if lost or doubled or extra:
            problems.append(f"{target.name}: lost {lost}, doubled {doubled}, unknown {extra}")
        checked = subprocess.run([sys.executable, "-m", "ezpz_amsc", "check", str(target), "-q"],
                                 capture_output=True, text=True)
        if checked.returncode:
            problems.append(f"{target.name}: check: {checked.stderr.strip()}")
    prov = subprocess.run([sys.executable, "-m", "ezpz_amsc", "check", str(with_records),
                           "--provenance", str(records)], capture_output=True, text=True)
    if prov.returncode or prov.stderr:
        problems.append(f"check --provenance: {prov.stderr.strip()}")
    names = sorted(p.name for p in records.iterdir()) if records.exists() else []
    records_n = sum(1 for n in names if n.endswith(".json") and not n.startswith("."))
    leftover = [n for n in names if not n.endswith(".json") or n.startswith(".")]
    if leftover:
        problems.append(f"left in the records folder: {leftover}")
    if records_n != len(expected[with_records]):
        problems.append(f"{records_n} records for {len(expected[with_records])} rows")
    summary = {
        "rounds": args.rounds, "writers per round": args.writers,
        "runs appended": sum(len(c) for c in expected.values()),
        "processes started": tally["processes"], "killed": tally["killed"],
        "of them at named instants": tally["at named instants"],
        "retries": tally["retries needed"], "failed (not killed)": tally["failed"],
        "gave up": tally["gave up"], "records": records_n,
        "kill window (s)": f"{delays[0]:.2f}-{delays[1]:.2f}", "seconds": round(elapsed, 1),
        "problems": problems,
    }
    return summary


if __name__ == "__main__":
    result = main()
    for key, value in result.items():
        print(f"{key}: {value}")
    sys.exit(1 if result["problems"] or result["failed (not killed)"] else 0)
