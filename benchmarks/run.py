"""Time the exporter end to end against its performance floors, in one run.

    python benchmarks/run.py            # ~3 minutes; prints a markdown table

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
  (d) 1,024 ranks x 500 steps in one interleaved ``metrics.jsonl`` (hf-shaped,
      ~220 MB).  Floor: a python that reads the file line by line and tests
      each line for the rank-0 marker ``"rank": 0,`` (no imports).
  (e) 12,288 ranks x 100 steps interleaved (~540 MB).  Floor: the same.
  (i128), (i512) 128 and 512 ranks x 500 steps interleaved: small files, where
      the fixed cost shows.  Floor: the same line loop.
  (b1m) 1 rank x 1,000,000 steps (~800 MB): memory as steps grow.  Floor: as (b).
  (tiny) a 34-step, 1-rank export (``examples/runs/minimal-1rank``): the fixed
      cost.  Floor: ``python -c "import numpy, click"``.
  (rows1k), (rows100k), (rows1m) results files of 1,000, 100,000 and 1,000,000
      rows: ``check``, ``report``, and the tiny export appended (``--append``)
      with its own config label each time.  Floor: a ``csv.reader`` loop over
      the file; the append's floor is the same export to stdout.

The exporter runs as ``python -m ezpz_amsc``, once with whatever JSON parser
it picks (orjson when installed) and once forced to the stdlib parser
(``EZPZ_AMSC_JSON=stdlib``); and twice more appending its row to a results
file (``--append``), once without and once with ``--provenance DIR``, which
writes a provenance record and so takes the sha256 of every file it reads (a
record needs an appended row). The last table gives what the record costs: the
median over repeats of (time with ``--provenance``) / (the same append
without), same parser, run back to back; targets: 1.05x on per-rank files,
1.3x on case (e).
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
import traceback
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

# What --provenance may cost, (time with) / (time without): the sha256 runs on a thread
# beside the read, so on per-rank files it is nearly free; (e) hashes 541 MB for a read
# that passes over most of it.
PROVENANCE_TARGETS = {"a": 1.05, "b": 1.05, "b1m": 1.05, "e": 1.3}

ALL_CASES = ("a", "b", "b25", "b1m", "c", "d", "e", "i128", "i512", "tiny", "rows1k",
             "rows100k", "rows1m")
# What each results-file case holds, in rows.
ROWS = {"rows1k": 1_000, "rows100k": 100_000, "rows1m": 1_000_000}
TINY_RUN = Path(__file__).resolve().parents[1] / "examples" / "runs" / "minimal-1rank"

FLOOR_IMPORTS = "import numpy, click\n"
# The least any reader of a results file does: parse every line as CSV once.
FLOOR_CSV = (
    "import csv, sys\n"
    "n = 0\n"
    "with open(sys.argv[1], newline='') as f:\n"
    "    for row in csv.reader(f):\n"
    "        n += 1\n"
)

# The least any reader of an interleaved file does: look at every line once.
FLOOR_MARKER = (
    "import sys\n"
    "n = 0\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        if b'\"rank\": 0,' in line:\n"
    "            n += 1\n"
)


@dataclass
class Cmd:
    label: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    expect_steps: int | None = None  # check the exporter's row, not just its exit code
    # An argument holding "{n}" gets a new number each run (a fresh run identity
    # for every append, so that none is refused as a duplicate).
    runs: int = 0
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
    target_ratio: float | None  # None: measured, no target at this size
    target_rss_mb: float | None
    stdlib_ratio: float | None = None  # a looser target for the stdlib parser, if any
    # label -> (ratio, RSS MB) targets of a tool whose targets differ from the case's
    per_tool: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    # (tool, its own floor, ratio target): timed back to back like the case's floor
    paired: list[tuple[Cmd, Cmd, float | None]] = field(default_factory=list)

    def ratio_target(self, tool: Cmd) -> float | None:
        if tool.label in self.per_tool:
            return self.per_tool[tool.label][0]
        if self.stdlib_ratio is not None and tool.env.get("EZPZ_AMSC_JSON") == "stdlib":
            return self.stdlib_ratio
        return self.target_ratio

    def rss_target(self, tool: Cmd) -> float | None:
        return self.per_tool[tool.label][1] if tool.label in self.per_tool else self.target_rss_mb

    def commands(self) -> list[Cmd]:
        return [self.floor, *self.tools, *(c for t, f, _ in self.paired for c in (f, t))]


def run_once(cmd: Cmd, check: bool = False) -> None:
    env = {**os.environ, **cmd.env}
    # Time what users run: an installed package has its bytecode compiled, so
    # let the untimed warm-up run write it even where the shell turned that off.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    cmd.runs += 1
    argv = [a.replace("{n}", str(cmd.runs)) for a in cmd.argv]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=env)
        # wait4 reaps exactly this child and reports its own peak RSS (KiB on Linux).
        _, status, usage = os.wait4(p.pid, 0)
        elapsed = time.perf_counter() - t0
        p.returncode = code = os.waitstatus_to_exitcode(status)
        if code != 0:
            err.seek(0)
            raise SystemExit(f"{cmd.label}: exit {code}\n{err.read().decode(errors='replace')}")
        # Only an export's one row is read back: a report's megabytes of text read here
        # would grow this process, and with it every later child's peak RSS (see generate).
        if check and cmd.expect_steps is not None:
            out.seek(0)
            stdout = out.read(1 << 16).decode()
            rows = list(csv.DictReader(io.StringIO(stdout)))
            if len(rows) != 1 or rows[0]["steps"] != str(cmd.expect_steps):
                raise SystemExit(f"{cmd.label}: unexpected output\n{stdout}")
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


def build_cases(tmp: Path, scale: float, wanted: frozenset[str] = frozenset(ALL_CASES)
                ) -> tuple[list[Case], dict[str, Path]]:
    py = sys.executable
    ranks_a, steps_a = max(2, int(768 * scale)), max(10, int(300 * scale))
    ckpt_a = int(5000 * scale)
    steps_b, steps_b25 = max(100, int(100_000 * scale)), max(25, int(25_000 * scale))
    ranks_d, steps_d = max(2, int(1024 * scale)), max(10, int(500 * scale))
    ranks_e, steps_e = max(2, int(12_288 * scale)), max(10, int(100 * scale))

    def run(name: str, ranks: int, steps: int, seed: int, ckpt: int = 0,
            interleaved: bool = False) -> Path:
        if name not in wanted:
            return tmp / "not-generated"
        # Named by their parameters, so a kept directory is reused only when it matches.
        d = tmp / f"{name}-{ranks}x{steps}-ckpt{ckpt}-seed{seed}{'-il' if interleaved else ''}"
        if (d / "run_info.json").exists():
            return d
        return make_run(d, ranks, steps, seed, ckpt, interleaved=interleaved)

    steps_b1m, steps_i = max(1000, int(1_000_000 * scale)), max(10, int(500 * scale))
    ranks_i = {name: max(2, int(int(name[1:]) * scale)) for name in ("i128", "i512")}
    runs = {
        "a": run("a", ranks_a, steps_a, 1, ckpt_a),
        "b": run("b", 1, steps_b, 2),
        "b25": run("b25", 1, steps_b25, 3),
        "b1m": run("b1m", 1, steps_b1m, 6),
        "d": run("d", ranks_d, steps_d, 4, interleaved=True),
        "e": run("e", ranks_e, steps_e, 5, interleaved=True),
        **{name: run(name, ranks, steps_i, seed, interleaved=True)
           for (name, ranks), seed in zip(ranks_i.items(), (7, 8), strict=True)},
    }
    if wanted & {"tiny", *ROWS}:
        runs["tiny"] = tmp / "tiny"
        if not runs["tiny"].is_dir():
            shutil.copytree(TINY_RUN, runs["tiny"])
    for name, rows in ROWS.items():
        if name in wanted:
            runs[name] = tmp / f"{name}.csv"
            if not runs[name].exists():
                from make_run import write_sweep

                write_sweep(runs[name], max(10, int(rows * scale)))

    def tools(run: str, steps: int | None) -> list[Cmd]:
        argv = [py, "-m", "ezpz_amsc", str(runs[run]), "--config", "bench"]
        out = []
        if has_orjson():
            out.append(Cmd("exporter (orjson)", argv, {"EZPZ_AMSC_JSON": ""}, steps))
        out.append(Cmd("exporter (stdlib json)", argv, {"EZPZ_AMSC_JSON": "stdlib"}, steps))
        # A record goes with an appended row: the same append without --provenance is what
        # the record's cost is measured against. The same run is appended again each repeat
        # (--allow-duplicate; records NAME-2.json, ...), each command into its own file.
        append = [*argv, "--allow-duplicate", "--append"]
        out.append(Cmd(f"{out[0].label} --append", [*append, str(tmp / f"plain-{run}.csv")],
                       out[0].env))
        records = [str(tmp / f"records-{run}.csv"), "--provenance", str(tmp / f"records-{run}")]
        out.append(Cmd(f"{out[0].label} --append --provenance", [*append, *records], out[0].env))
        return out

    def floor(run: str) -> Cmd:
        return Cmd("floor", [py, "-c", FLOOR_PARSE, str(runs[run] / "metrics-0.jsonl")])

    def floor_marker(run: str) -> Cmd:
        return Cmd("floor", [py, "-c", FLOOR_MARKER, str(runs[run] / "metrics.jsonl")])

    # A label of this benchmark's own (pid) for each run: a kept results file (--keep)
    # holds the rows an earlier benchmark appended, which must not be duplicates.
    tiny = [py, "-m", "ezpz_amsc", str(runs.get("tiny")), "--config",
            f"bench/{os.getpid()}/{{n}}"]

    def rows_case(name: str) -> Case:
        path = str(runs[name])
        n = max(10, int(ROWS[name] * scale))
        big = ROWS[name] == 1_000_000
        check = Cmd("check", [py, "-m", "ezpz_amsc", "check", "-q", path])
        report = Cmd("report", [py, "-m", "ezpz_amsc", "report", "-q", path])
        # Each append adds its own run (bench/PID/1, bench/PID/2, ...): none is a duplicate.
        append = Cmd("export --append", [*tiny, "--append", path, "-q"])
        return Case(name, f"results file of {n:,} rows", Cmd("floor", [py, "-c", FLOOR_CSV, path]),
                    [check, report], 3.0 if big else None, 80.0 if big else None,
                    per_tool={"report": (5.0 if big else None, 150.0 if big else None)},
                    paired=[(append, Cmd("export to stdout", tiny), 1.5 if big else None)])

    cases = [
        Case("a", f"{ranks_a:,} ranks x {steps_a:,} steps, {ckpt_a:,} checkpoint files",
             floor("a"), tools("a", steps_a), 1.3, 80.0),
        Case("b", f"1 rank x {steps_b:,} steps", floor("b"), tools("b", steps_b), 1.15, 120.0),
        Case("b25", f"1 rank x {steps_b25:,} steps (memory check)", floor("b25"),
             tools("b25", steps_b25), 1.15, 120.0),
        Case("c", "`--help`", Cmd("floor", [py, "-c", "import click"]),
             [Cmd("exporter", [py, "-m", "ezpz_amsc", "--help"])], 1.3, None),
        Case("d", f"{ranks_d:,} ranks x {steps_d:,} steps, one interleaved file",
             floor_marker("d"), tools("d", steps_d), 1.0, 80.0, stdlib_ratio=1.2),
        Case("e", f"{ranks_e:,} ranks x {steps_e:,} steps, one interleaved file",
             floor_marker("e"), tools("e", steps_e), 1.0, 80.0, stdlib_ratio=1.2),
        Case("b1m", f"1 rank x {steps_b1m:,} steps", floor("b1m"), tools("b1m", steps_b1m),
             1.15, 100.0),
        *(Case(name, f"{ranks:,} ranks x {steps_i:,} steps, one interleaved file",
               floor_marker(name), tools(name, steps_i), 2.0, 80.0)
          for name, ranks in ranks_i.items()),
        Case("tiny", "a 34-step, 1-rank export", Cmd("floor", [py, "-c", FLOOR_IMPORTS]),
             [Cmd("exporter", tiny)], 1.15, None),
        *(rows_case(name) for name in ROWS if name in wanted),
    ]
    return [c for c in cases if c.name in wanted], runs


def fmt_ok(ok: bool) -> str:
    return "yes" if ok else "**no**"


def paired_ratio(tool: Cmd, floor: Cmd) -> float:
    """The median of per-repeat ratios: each repeat runs the floor and the tool back to
    back, so the median of those paired ratios shrugs off load that drifts between repeats."""
    return statistics.median(x / y for x, y in zip(tool.wall_sec, floor.wall_sec, strict=True))


def _tool_line(c: Case, t: Cmd, f: Cmd, ratio_target: float | None = None,
               own: bool = False) -> str:
    ratio = paired_ratio(t, f)
    head = f"| ({c.name}) | {t.label} | {t.median_sec():.3f} | {f.median_sec():.3f} | {ratio:.2f}x"
    if " --append" in t.label:  # no target: what --provenance costs is the table below
        return f"{head} | - | {t.peak_rss_mb():.1f} | - |"
    want = ratio_target if own else c.ratio_target(t)
    rss = None if own else c.rss_target(t)
    if want is None and rss is None:
        return f"{head} | - | {t.peak_rss_mb():.1f} | - |"
    ok = want is None or ratio <= want
    target = [f"<= {want}x"] if want is not None else []
    if rss is not None:
        target.append(f"< {rss:.0f} MB")
        ok = ok and t.peak_rss_mb() < rss
    return f"{head} | {', '.join(target)} | {t.peak_rss_mb():.1f} | {fmt_ok(ok)} |"


def report(cases: list[Case], repeats: int) -> str:
    lines = [
        "| case | command | median s | floor s | ratio | target | peak RSS MB | met |",
        "|---|---|--:|--:|--:|---|--:|---|",
    ]
    for c in cases:
        if c.name == "b25":  # only in the memory table
            continue
        f = c.floor
        lines.append(f"| ({c.name}) {c.what} | floor | {f.median_sec():.3f} | | | | "
                     f"{f.peak_rss_mb():.1f} | |")
        for t in c.tools:
            lines.append(_tool_line(c, t, f))
        for t, own_floor, target in c.paired:
            lines.append(f"| ({c.name}) | {own_floor.label} | {own_floor.median_sec():.3f} | | | "
                         f"| {own_floor.peak_rss_mb():.1f} | |")
            lines.append(_tool_line(c, t, own_floor, target, own=True))
    by = {c.name: c for c in cases}
    grown = [by[k] for k in ("b25", "b", "b1m") if k in by]
    if len(grown) > 1:
        lines += ["", "Memory as steps grow (peak RSS MB, 1 rank):", "",
                  "| command | " + " | ".join(c.what.split(" (")[0] for c in grown)
                  + " | growth MB |", "|---|" + "--:|" * (len(grown) + 1)]
        for cmds in zip(*([c.floor, *c.tools] for c in grown), strict=True):
            rss = [cmd.peak_rss_mb() for cmd in cmds]
            lines.append(f"| {cmds[-1].label} | " + " | ".join(f"{x:.1f}" for x in rss)
                         + f" | {rss[-1] - rss[0]:+.1f} |")
    if "d" in by and "e" in by:
        d_what, e_what = (by[k].what.split(", one")[0] for k in "de")
        lines += ["", "Memory as ranks grow (peak RSS MB, one interleaved file):", "",
                  f"| command | {d_what} | {e_what} | growth MB |", "|---|--:|--:|--:|"]
        for small, big in zip(by["d"].tools, by["e"].tools, strict=True):
            lines.append(f"| {big.label} | {small.peak_rss_mb():.1f} | {big.peak_rss_mb():.1f} | "
                         f"{big.peak_rss_mb() - small.peak_rss_mb():+.1f} |")
    costs = [(c, plain, prov) for c in cases if c.name != "b25" for prov in c.tools
             if prov.label.endswith(" --provenance")
             for plain in c.tools if plain.label == prov.label.removesuffix(" --provenance")]
    if costs:
        lines += ["", "What --provenance costs (sha256 of every file read, on a thread beside "
                  "the read):", "", "| case | command | without s | with s | with / without "
                  "| target | met |", "|---|---|--:|--:|--:|---|---|"]
        for c, plain, prov in costs:
            ratio = paired_ratio(prov, plain)
            want = PROVENANCE_TARGETS.get(c.name)
            met = "-" if want is None else fmt_ok(ratio <= want)
            lines.append(f"| ({c.name}) | {plain.label} | {plain.median_sec():.3f} | "
                         f"{prov.median_sec():.3f} | {ratio:.2f}x | "
                         f"{'-' if want is None else f'<= {want}x'} | {met} |")
    return "\n".join(lines)


def own_rss_mb() -> float:
    """This process's peak RSS: no child's figure can read below it (see generate)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


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


def generate(tmp: Path, scale: float, wanted: frozenset[str]) -> None:
    """Make the runs in a child process, so that this one stays small.

    A child's peak RSS (``ru_maxrss``) includes the memory of the process it was forked
    from, carried across ``exec``: runs generated here (a million-row results file)
    would make every child's figure at least this process's size.
    """
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            build_cases(tmp, scale, wanted)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("generating the runs failed")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=9, help="timed runs per command (median)")
    p.add_argument("--scale", type=float, default=1.0,
                   help="shrink every run by this factor (e.g. 0.01 for a quick check)")
    p.add_argument("--keep", metavar="DIR", help="generate the runs here and keep them")
    p.add_argument("--cases", default=",".join(ALL_CASES),
                   help=f"comma-separated subset of {','.join(ALL_CASES)}")
    a = p.parse_args(argv)
    wanted = frozenset(a.cases.split(","))
    if not wanted <= set(ALL_CASES):
        p.error(f"unknown case(s): {', '.join(sorted(wanted - set(ALL_CASES)))}")

    tmp = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="ezpz-amsc-bench-"))
    try:
        t0 = time.perf_counter()
        generate(tmp, a.scale, wanted)
        cases, _ = build_cases(tmp, a.scale, wanted)  # finds every run made: generates none
        print(f"generated runs in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        cmds = [(c, cmd) for c in cases for cmd in c.commands()]
        for _, cmd in cmds:  # warm the page cache, check the rows, then time
            run_once(cmd, check=True)
        for c in cases:  # both JSON paths must give the same row (the appends print none)
            if len({t.row for t in c.tools if t.expect_steps is not None}) > 1:
                raise SystemExit(f"({c.name}): rows differ between JSON parsers")
        for rep in range(a.repeats):
            # Alternate the order so that neither side always runs first.
            for _, cmd in cmds if rep % 2 == 0 else reversed(cmds):
                run_once(cmd)
            print(f"repeat {rep + 1}/{a.repeats} done", file=sys.stderr)
        least_rss_mb = own_rss_mb()  # before versions() imports numpy here
        print(f"{versions()}; {a.repeats} runs each; a peak RSS below "
              f"{least_rss_mb:.1f} MB reads as that (this process's size when it forks)\n")
        print(report(cases, a.repeats))
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
