"""Time the exporter end to end against its performance floors, in one run.

    python benchmarks/run.py            # ~1 minute; prints a markdown table

Generates the synthetic runs (``make_run.py``) into a temporary directory,
then times each case as a subprocess, interleaved with its floor — the work no
design with these dependencies can avoid — so that both see the same machine
load. Times are medians of ``--repeats`` runs; the ratio is the median of the
per-repeat ratios (tool / floor of the same repeat); peak RSS comes from
``os.wait4`` per child (``RUSAGE_CHILDREN`` would mix the runs) and is the
largest seen.

Cases:
  (a) 768 ranks x 300 steps, 5,000 checkpoint files.  Floor: a python that
      imports numpy and click and ``json.loads`` rank 0's file line by line.
  (b) 1 rank x 100,000 steps (and 25,000, to show how memory follows steps).
      Floor: the same on the single file.
  (c) ``--help``.  Floor: ``python -c "import click"``.

The exporter runs as ``python -m ezpz_amsc``, once with whatever JSON parser
it picks (orjson when installed) and once forced to the stdlib parser
(``EZPZ_AMSC_JSON=stdlib``); and once more with ``--provenance DIR``, which
writes a provenance record and so takes the sha256 of every file it reads.
The last table gives what that costs: the median over repeats of (time with
``--provenance``) / (time without), same parser, run back to back.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_run import make_run  # noqa: E402

FLOOR_PARSE = (
    "import json, sys\n"
    "import numpy, click\n"
    "loads = json.loads\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        loads(line)\n"
)


@dataclass
class Cmd:
    label: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    expect_steps: int | None = None  # check the exporter's row, not just its exit code
    wall_sec: list[float] = field(default_factory=list)
    rss_kb: list[int] = field(default_factory=list)
    row: str = ""  # stdout of the checked run

    def median_sec(self) -> float:
        return statistics.median(self.wall_sec)

    def peak_rss_mb(self) -> float:
        return max(self.rss_kb) / 1024.0


@dataclass
class Case:
    name: str
    what: str
    floor: Cmd
    tools: list[Cmd]
    target_ratio: float
    target_rss_mb: float | None


def run_once(cmd: Cmd, check: bool = False) -> None:
    env = {**os.environ, **cmd.env}
    # Time what users run: an installed package has its bytecode compiled, so
    # let the untimed warm-up run write it even where the shell turned that off.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd.argv, stdout=out, stderr=err, env=env)
        # wait4 reaps exactly this child and reports its own peak RSS (KiB on Linux).
        _, status, usage = os.wait4(p.pid, 0)
        elapsed = time.perf_counter() - t0
        p.returncode = code = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode(errors="replace")
    if code != 0:
        raise SystemExit(f"{cmd.label}: exit {code}\n{stderr}")
    if check and cmd.expect_steps is not None:
        rows = list(csv.DictReader(io.StringIO(stdout)))
        if len(rows) != 1 or rows[0]["steps"] != str(cmd.expect_steps):
            raise SystemExit(f"{cmd.label}: unexpected output\n{stdout}{stderr}")
    cmd.row = stdout
    if not check:
        cmd.wall_sec.append(elapsed)
        cmd.rss_kb.append(usage.ru_maxrss)


def has_orjson() -> bool:
    try:
        import orjson  # noqa: F401
    except ImportError:
        return False
    return True


def build_cases(tmp: Path, scale: float) -> tuple[list[Case], dict[str, Path]]:
    py = sys.executable
    ranks_a, steps_a = max(2, int(768 * scale)), max(10, int(300 * scale))
    ckpt_a = int(5000 * scale)
    steps_b, steps_b25 = max(100, int(100_000 * scale)), max(25, int(25_000 * scale))
    def run(name: str, ranks: int, steps: int, seed: int, ckpt: int = 0) -> Path:
        # Named by their parameters, so a kept directory is reused only when it matches.
        d = tmp / f"{name}-{ranks}x{steps}-ckpt{ckpt}-seed{seed}"
        return d if (d / "run_info.json").exists() else make_run(d, ranks, steps, seed, ckpt)

    runs = {
        "a": run("a", ranks_a, steps_a, 1, ckpt_a),
        "b": run("b", 1, steps_b, 2),
        "b25": run("b25", 1, steps_b25, 3),
    }

    def tools(run: str, steps: int | None) -> list[Cmd]:
        argv = [py, "-m", "ezpz_amsc", str(runs[run]), "--config", "bench"]
        out = []
        if has_orjson():
            out.append(Cmd("exporter (orjson)", argv, {"EZPZ_AMSC_JSON": ""}, steps))
        out.append(Cmd("exporter (stdlib json)", argv, {"EZPZ_AMSC_JSON": "stdlib"}, steps))
        # The same run exported again each repeat: --allow-duplicate writes NAME-2.json, ...
        records = ["--provenance", str(tmp / f"records-{run}"), "--allow-duplicate"]
        out.append(Cmd(f"{out[0].label} --provenance", argv + records, out[0].env, steps))
        return out

    def floor(run: str) -> Cmd:
        return Cmd("floor", [py, "-c", FLOOR_PARSE, str(runs[run] / "metrics-0.jsonl")])

    cases = [
        Case("a", f"{ranks_a:,} ranks x {steps_a:,} steps, {ckpt_a:,} checkpoint files",
             floor("a"), tools("a", steps_a), 1.3, 80.0),
        Case("b", f"1 rank x {steps_b:,} steps", floor("b"), tools("b", steps_b), 1.15, 120.0),
        Case("b25", f"1 rank x {steps_b25:,} steps (memory check)", floor("b25"),
             tools("b25", steps_b25), 1.15, 120.0),
        Case("c", "`--help`", Cmd("floor", [py, "-c", "import click"]),
             [Cmd("exporter", [py, "-m", "ezpz_amsc", "--help"])], 1.3, None),
    ]
    return cases, runs


def fmt_ok(ok: bool) -> str:
    return "yes" if ok else "**no**"


def report(cases: list[Case], repeats: int) -> str:
    lines = [
        "| case | command | median s | floor s | ratio | target | peak RSS MB | met |",
        "|---|---|--:|--:|--:|---|--:|---|",
    ]
    for c in cases:
        if c.name == "b25":
            continue
        f = c.floor
        lines.append(f"| ({c.name}) {c.what} | floor | {f.median_sec():.3f} | | | | "
                     f"{f.peak_rss_mb():.1f} | |")
        for t in c.tools:
            # Each repeat runs the floor and the tool back to back: the median
            # of those paired ratios shrugs off load that drifts between repeats.
            ratio = statistics.median(x / y for x, y in zip(t.wall_sec, f.wall_sec, strict=True))
            ok = ratio <= c.target_ratio
            target = f"<= {c.target_ratio}x"
            if c.target_rss_mb is not None:
                target += f", < {c.target_rss_mb:.0f} MB"
                ok = ok and t.peak_rss_mb() < c.target_rss_mb
            lines.append(f"| ({c.name}) | {t.label} | {t.median_sec():.3f} | "
                         f"{f.median_sec():.3f} | {ratio:.2f}x | {target} | "
                         f"{t.peak_rss_mb():.1f} | {fmt_ok(ok)} |")
    by = {c.name: c for c in cases}
    if "b" in by and "b25" in by:
        lines += ["", "Memory as steps grow (peak RSS MB, 1 rank):", "",
                  f"| command | {by['b25'].what.split(' (')[0]} | {by['b'].what} | growth MB |",
                  "|---|--:|--:|--:|"]
        pairs = [(by["b25"].floor, by["b"].floor)] + list(zip(by["b25"].tools, by["b"].tools,
                                                             strict=True))
        for small, big in pairs:
            lines.append(f"| {big.label} | {small.peak_rss_mb():.1f} | {big.peak_rss_mb():.1f} | "
                         f"{big.peak_rss_mb() - small.peak_rss_mb():+.1f} |")
    costs = [(c, plain, prov) for c in cases if c.name != "b25" for prov in c.tools
             if prov.label.endswith(" --provenance")
             for plain in c.tools if plain.label == prov.label.removesuffix(" --provenance")]
    if costs:
        lines += ["", "What --provenance costs (sha256 of every file read, in the same pass):",
                  "", "| case | command | without s | with s | with / without |",
                  "|---|---|--:|--:|--:|"]
        for c, plain, prov in costs:
            ratio = statistics.median(x / y for x, y in zip(prov.wall_sec, plain.wall_sec,
                                                            strict=True))
            lines.append(f"| ({c.name}) | {plain.label} | {plain.median_sec():.3f} | "
                         f"{prov.median_sec():.3f} | {ratio:.2f}x |")
    return "\n".join(lines)


def versions() -> str:
    import numpy

    try:
        from importlib.metadata import version
        click_v = version("click")
        orjson_v = version("orjson") if has_orjson() else "not installed"
    except Exception:  # pragma: no cover - metadata missing in odd installs
        click_v, orjson_v = "?", "?"
    return (f"Python {platform.python_version()}, numpy {numpy.__version__}, click {click_v}, "
            f"orjson {orjson_v}; {platform.machine()}, {os.cpu_count()} CPUs")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=9, help="timed runs per command (median)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="shrink every run by this factor (e.g. 0.01 for a quick check)")
    p.add_argument("--keep", metavar="DIR", help="generate the runs here and keep them")
    p.add_argument("--cases", default="a,b,b25,c", help="comma-separated subset of a,b,b25,c")
    a = p.parse_args(argv)

    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="ezpz-amsc-bench-"))
    try:
        t0 = time.perf_counter()
        cases, _ = build_cases(tmp, a.scale)
        wanted = set(a.cases.split(","))
        cases = [c for c in cases if c.name in wanted]
        print(f"generated runs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        cmds = [(c, cmd) for c in cases for cmd in (c.floor, *c.tools)]
        for _, cmd in cmds:  # warm the page cache, check the rows, then time
            run_once(cmd, check=True)
        for c in cases:  # both JSON paths must give the same row
            if len({t.row for t in c.tools}) != 1:
                raise SystemExit(f"({c.name}): rows differ between JSON parsers")
        for rep in range(a.repeats):
            # Alternate the order so that neither side always runs first.
            for _, cmd in cmds if rep % 2 == 0 else reversed(cmds):
                run_once(cmd)
            print(f"repeat {rep + 1}/{a.repeats} done", file=sys.stderr)
        print(f"{versions()}; {a.repeats} runs each\n")
        print(report(cases, a.repeats))
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
