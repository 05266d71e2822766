"""Helpers shared by the test files: the real fixture runs, synthetic runs, the CLI runners.

Pytest fixtures live in ``conftest.py``; everything here is a plain function or
constant, imported by name (``from helpers import run_cli, one_row``).
"""

from __future__ import annotations

import builtins
import contextlib
import csv
import errno
import hashlib
import inspect
import io
import json
import os
import re
import shutil
import stat
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from ezpz_amsc.cli.group import cli, export_amsc
from ezpz_amsc.results.schema import HEADER
from ezpz_amsc.run.devices import device

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "examples" / "runs"  # real run directories, written by real ezpz
ALL_RUNS = sorted(p.name for p in RUNS.iterdir() if p.is_dir())

# Expected rows with --config test/cfg and defaults. The two fsdp_tp 2-rank rows are
# the issue's own figures; the others were checked against the independent
# recomputation in test_fixtures.py.
EXPECTED = {
    "fsdp_tp-2rank":
        "2026-11-29T22:18:43Z,localhost,test/cfg,1,2,pass,4.034,3930.349,1965.174,,0.014,7.989204,30,",
    "fsdp_tp-2rank-torchrun":
        "2026-11-29T22:20:02Z,localhost,test/cfg,1,2,pass,3.837,4153.832,2076.916,,0.015,7.922108,30,",
    "fsdp_tp-1rank-launch":
        "2026-11-29T22:19:13Z,localhost,test/cfg,1,1,pass,1.148,7443.215,7443.215,,0.053,7.871284,30,",
    "minimal-1rank":
        "2026-11-29T22:21:30Z,localhost,test/cfg,1,1,pass,0.027,,,,0.022,338.000000,34,",
    "diffusion-1rank":
        "2026-11-29T22:22:15Z,localhost,test/cfg,1,1,pass,0.159,,,,0.017,1.000221,40,",
}

# The clean runs: every cross-check passes on them silently.
FIXTURE_NAMES = sorted(EXPECTED)

# The csv module's field limit in a plain Python process (frictionless raises it on import).
CSV_FIELD_LIMIT = 131_072

# Every shipped run is a CPU run: this is the one note each of them earns.
MFU_NOTE = ("mfu is 0.0 on every step (ezpz writes 0.0 when it does not know the device's "
            "peak FLOPS); left empty")

# minimal and diffusion log no tokens/s: the note their rows earn.
NO_THROUGHPUT_NOTE = ("no throughput series logged (looked for train/tps, train/tokens_per_sec, "
                      "train/tps_per_gpu); both throughput cells are empty")

# Real runs of the shapes that go wrong (examples/runs/README.md): the row and every note.
NOTED: dict[str, tuple[str, list[str]]] = {
    "minimal-logfreq5-1rank": (
        "2026-12-01T20:58:23Z,localhost,test/cfg,1,1,pass,1.610,,,,0.038,692.000000,6,",
        ["wall_time_sec is estimated for all the steps: the 6 logged steps' 0.366 s plus 24 "
         "steps not logged, each gap at the mean of the logged step times that bound it, "
         "would be 1.809 s, more than the records' clock allows; bounded by it: the 1.333 s "
         "between the first and last record plus 0.2774 s for the first logged step and the "
         "4 before it, ~30 steps (logged every 5 steps, steps 10..35); pass --wall-time-sec "
         "for the job's real time", NO_THROUGHPUT_NOTE, MFU_NOTE]),
    "history-accum8-1rank": (
        "2026-12-01T21:06:00Z,localhost,test/cfg,1,1,pass,4.188,,,,,5.729799,25,",
        ["step times cover 3.485 s of the 30.9 s between the first and last record (11%): dt "
         "may miss part of each step (gradient accumulation timing only the last "
         "micro-batch), or the run paused (eval, checkpoints); wall_time_sec is the summed "
         "step time; pass --wall-time-sec SECONDS for the job's real time",
         "train/tps (18,144 tokens/s, the median) is 10.4x what the records' clock sustains: "
         "2,048 tokens per step (train/tps x dt) over the time between records is 1,591 "
         "tokens/s; train/accum is 8 (gradient accumulation); dt times part of each step (the "
         "last micro-batch?), so the logged rate is inflated; throughput left empty"]),
    "fsdp_tp-relaunch-killed": (
        "2026-12-01T21:05:23Z,localhost,test/cfg,1,1,pass,1.381,3062.808,3062.808,,0.022,"
        "8.024565,13,",
        ["run looks unfinished (run_info.json was written 2 min and train/report-train.md "
         "116 s before the first exported record: another launch's; the row may be a relaunch "
         "into this folder that was killed before finalize); status stays 'pass'; pass "
         "--status fail if the job failed", MFU_NOTE]),
}
# File times the runs had on disk, which git does not keep (fixture_copy sets them).
FILE_TIMES: dict[str, dict[str, float]] = {
    "fsdp_tp-relaunch-killed": {"run_info.json": 1796158995.3122957,
                                "train/report-train.md": 1796159007.3641524},
}


LAUNCH = "fsdp_tp-1rank-launch"  # 1 rank, train/tps and train/tps_per_gpu, 30 steps

DIST_CPU_1RANK = {
    "MACHINE": "localhost", "HOSTNAME": "localhost", "NUM_NODES": "1", "NGPUS": "0",
    "GPUS_PER_NODE": "0", "WORLD_SIZE_IN_USE": "1", "world_size": "1",
}

# What the finalize hook reads from the environment (the conftest fixture clears them).
HOOK_ENV = ("EZPZ_AMSC_CONFIG", "EZPZ_AMSC_APPEND", "EZPZ_AMSC_STATUS", "EZPZ_AMSC_WALL_TIME_SEC",
            "EZPZ_AMSC_PROVENANCE", "EZPZ_AMSC_LOCK_TIMEOUT", "EZPZ_AMSC_HASH_BUDGET", "RANK",
            "PMI_RANK", "OMPI_COMM_WORLD_RANK")

# What click gives a terminal of 100 columns or more: --help's max_content_width is 100.
HELP_WIDTH = 98


def expected_row(name: str) -> dict[str, str]:
    """A shipped run's expected row (``--config test/cfg``) as a dict."""
    return dict(zip(HEADER, EXPECTED[name].split(","), strict=True))


# --------------------------------------------------------------------------- running the CLI


def runner() -> CliRunner:
    if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters:
        return CliRunner(mix_stderr=False)  # click < 8.2
    return CliRunner()


def run_cli(*args: Any, input: str | None = None):
    """Invoke the export command as a user would; exceptions propagate (no hidden tracebacks)."""
    return runner().invoke(export_amsc, [str(a) for a in args], input=input,
                           catch_exceptions=False)


def run_group(*args: object, prog: str = "ezpz-amsc"):
    """Invoke the whole group, as the console script does."""
    return runner().invoke(cli, [str(a) for a in args], prog_name=prog,
                           terminal_width=HELP_WIDTH, catch_exceptions=False)


def outcome(result) -> tuple[int, str, str]:
    return result.exit_code, result.stdout, result.stderr


def parse_csv(text: str) -> list[dict[str, str]]:
    rows = list(csv.reader(io.StringIO(text)))
    assert rows, "no CSV output"
    assert tuple(rows[0]) == HEADER, rows[0]
    return [dict(zip(HEADER, r, strict=True)) for r in rows[1:]]


def one_row(result) -> dict[str, str]:
    assert result.exit_code == 0, result.stderr
    rows = parse_csv(result.stdout)
    assert len(rows) == 1
    return rows[0]


def error_line(result) -> str:
    """The single ``error:`` line of a failed run; asserts its shape (one line, exit 1)."""
    assert result.exit_code != 0, result.stdout
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    return lines[0]


def notes_of(result) -> list[str]:
    """The notes a run printed, without their ``note: ``; asserts stderr holds nothing else."""
    lines = result.stderr.splitlines()
    assert all(ln.startswith("note: ") for ln in lines), result.stderr
    return [ln[len("note: "):] for ln in lines]


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# --------------------------------------------------------------------------- run directories


def copy_run(name: str, dest: Path) -> Path:
    """A writable copy of a real fixture run (the originals are read-only), with the file
    times it had on disk where they matter (:data:`FILE_TIMES`)."""
    out = dest / name
    shutil.copytree(RUNS / name, out, symlinks=True)
    for p in [out, *out.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    for rel, when in FILE_TIMES.get(name, {}).items():
        os.utime(out / rel, (when, when))
    return out


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def write_run_info(folder: Path, **distributed: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dist = {**DIST_CPU_1RANK, **distributed}
    dist = {k: v for k, v in dist.items() if v is not None}
    p = folder / "run_info.json"
    p.write_text(json.dumps({"Paths": {}, "Distributed": dist}, indent=2))
    return p


def step(i: int, *, rank: int = 0, ts: float = 1795990000.0, **metrics: Any) -> dict:
    """One ezpz-shaped record: ``train/iter`` plus ``train/<name>`` metrics."""
    m = {"train/iter": i, **{f"train/{k}": v for k, v in metrics.items()}}
    return {"timestamp": ts + i, "rank": rank, "metrics": m}


def simple_steps(n: int, **metrics: Any) -> list[dict]:
    """Steps 1..n at 0.5 s each, tps 1000 + step, loss 2.0."""
    return [step(i, dt=0.5, tps=1000.0 + i, loss=2.0, **metrics) for i in range(1, n + 1)]


def write_run(folder: Path, records: list[Any], *, metrics_name: str = "metrics-0.jsonl",
              **dist: Any) -> Path:
    """A run directory: one metrics file of ``records`` and a run_info.json of ``dist``."""
    write_jsonl(folder / metrics_name, records)
    write_run_info(folder, **dist)
    return folder


def good_run(folder: Path, n: int = 4, **dist: Any) -> Path:
    return write_run(folder, simple_steps(n), **dist)


def gap_estimate(steps: list[float], dts: list[float], total: int, warmup: int = 1
                 ) -> tuple[float, int]:
    """The wall time of a run logging some steps, worked out by hand: each gap between two
    logged steps at the mean of their step times (a warmup step standing for the first step
    after it), the steps before the first logged one at its; and how many those are."""
    like = list(dts)
    if 0 < warmup < len(dts):
        like[:warmup] = [dts[warmup]] * warmup
    pairs = list(zip(steps, steps[1:], like, like[1:], strict=False))
    filled = sum((b - a - 1) * (x + y) / 2 for a, b, x, y in pairs if b - a > 1)
    head = total - len(steps) - sum(int(b - a - 1) for a, b, _, _ in pairs if b - a > 1)
    return sum(dts) + filled + head * like[0], head


def read_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def is_step(rec: dict[str, Any]) -> bool:
    """A record with a number in its metrics (not the all-strings precision record)."""
    return any(type(v) in (int, float) for v in rec["metrics"].values())


def rewrite(path: Path, fn: Callable[[dict[str, Any]], Any]) -> list[dict[str, Any]]:
    """Rewrite a metrics file record by record: ``fn`` returns a record, a list, or None."""
    out: list[dict[str, Any]] = []
    for rec in read_records(path):
        got = fn(rec)
        out.extend(got if isinstance(got, list) else [] if got is None else [got])
    write_jsonl(path, out)
    return out


def edit_dist(run: Path, **changes: Any) -> None:
    """Change the Distributed section of run_info.json and of the report alike (finalize
    writes both from the same values); a value of None removes the key."""
    p = run / "run_info.json"
    doc = json.loads(p.read_text())
    report = run / "train" / "report-train.md"
    lines = report.read_text().splitlines()
    for k, v in changes.items():
        lines = [ln for ln in lines if not ln.startswith(f"- **{k}**:")]
        if v is None:
            doc["Distributed"].pop(k, None)
        else:
            doc["Distributed"][k] = v
            lines.insert(lines.index("### Distributed") + 2, f"- **{k}**: {v}")
    p.write_text(json.dumps(doc, indent=2))
    report.write_text("\n".join(lines) + "\n")


def launch(tmp_path: Path) -> Path:
    """A writable copy of the 1-rank launch fixture."""
    return copy_run(LAUNCH, tmp_path)


def launch_records() -> list[dict[str, Any]]:
    """The step records of the launch fixture, as shipped."""
    return [r for r in read_records(RUNS / LAUNCH / "metrics-0.jsonl") if is_step(r)]


def retried_launch(tmp_path: Path) -> tuple[Path, list[dict], list[dict]]:
    """ezpz launch --retries into one folder: a failed attempt (20 steps), then a full one
    10 min later. Returns the run and the step records of each attempt."""
    run = launch(tmp_path)
    recs = read_records(run / "metrics-0.jsonl")
    first = [r for r in recs if not is_step(r) or r["metrics"]["train/iter"] <= 20]
    second = [{**r, "timestamp": r["timestamp"] + 600} for r in recs]
    write_jsonl(run / "metrics-0.jsonl", first + second)
    return run, [r for r in first if is_step(r)], [r for r in second if is_step(r)]


def five_runs(fixture_run: Callable[[str], Path]) -> list[Path]:
    """Writable copies of every shipped run."""
    return [fixture_run(n) for n in FIXTURE_NAMES]


# --------------------------------------------------------------------------- files


def fail_for(monkeypatch, target: Path, err: int, name: str = "open") -> None:
    """Make ``builtins.<name>`` fail with ``err`` for ``target`` only; for ``open``, also
    ``os.open``, through which fs/read.py opens every file it reads."""
    for module in (builtins, os) if name == "open" else (builtins,):
        real = getattr(module, name)

        def fake(file, *args, _real=real, **kwargs):
            if isinstance(file, (str, os.PathLike)) and Path(file) == target:
                raise OSError(err, os.strerror(err), str(file))
            return _real(file, *args, **kwargs)

        monkeypatch.setattr(module, name, fake)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def records_in(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def export_with_records(runs: list[Path], results: Path, folder: Path, *extra: object):
    return run_cli(*runs, "--config", "agpt/x", "--append", results, "--provenance", folder,
                   *extra)


def mode_of(p: Path) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def names_in(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def hold_lock(results: Path, ready: Path):
    """Another process holding the results file's lock (and creating the file if missing);
    returns it once it holds the lock. The caller kills it."""
    import subprocess
    import sys
    import time

    code = (
        "import sys, time\n"
        "from ezpz_amsc.results.append import locked\n"
        "with locked(sys.argv[1], 5):\n"
        "    open(sys.argv[2], 'w').close()\n"
        "    time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    p = subprocess.Popen([sys.executable, "-c", code, str(results), str(ready)], env=env)
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    return p


def paused(folder: Path, point: str) -> dict[str, str]:
    """The environment that pauses a process the first time it passes ``point`` (fs/create.py,
    ``crash_point``), with the FIFO it waits on made; :func:`release` lets it go on."""
    os.mkfifo(folder / f"{point}.go")
    return {"EZPZ_AMSC_PAUSE_AT": f"{point}:{folder}"}


def wait_until_paused(p, folder: Path, point: str) -> None:
    """Return once the process ``p`` is paused at ``point`` (it must not have ended)."""
    import time

    deadline = time.monotonic() + 60
    while not (folder / f"{point}.reached").exists():
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)


def release(folder: Path, point: str) -> None:
    """Let a process paused at ``point`` go on (it is blocked opening the FIFO to read)."""
    with open(folder / f"{point}.go", "wb"):
        pass


@contextlib.contextmanager
def umask_of(mask: int) -> Iterator[int]:
    old = os.umask(mask)
    try:
        yield mask
    finally:
        os.umask(old)


# --------------------------------------------------------------------------- shared scenarios

# hypothesis found this one: OverflowError in tps / gpus
HUGE = "1" + "0" * 400

AURORA_24 = dict(MACHINE="Aurora", NUM_NODES="4", NGPUS="48", GPUS_PER_NODE="12",
                 WORLD_SIZE_IN_USE="24", world_size="24")
PPN_6 = ("mpiexec --verbose --envall --np 24 --ppn 6 --hostfile /var/spool/pbs/aux/1 "
         "python3 -m ezpz.examples.fsdp_tp --tp 1")


def aurora_run(tmp_path: Path, command: str | None, **dist: Any) -> Path:
    """The 1-rank fixture reshaped as a 24-rank Aurora job (tps = 24 x tps_per_gpu)."""
    run = launch(tmp_path)

    def world24(rec):
        m = rec["metrics"]
        if "train/tps" in m:
            m["train/tps"] = m["train/tps_per_gpu"] * 24
            m["train/tokens"] = m["train/tokens"] * 24  # fsdp_tp counts a step's tokens globally
        return rec

    rewrite(run / "metrics-0.jsonl", world24)
    edit_dist(run, **{**AURORA_24, "EZPZ_RUN_COMMAND": command, **dist})
    return run


SUNSPOT_TPS = [1045.1, 34600.8, 34686.4, 34715.4, 34832.8, 34650.0]
SUNSPOT_DT = [3.92, 0.118, 0.1181, 0.118, 0.1176, 0.1182]


def sunspot_run(folder: Path) -> Path:
    """Six steps of a 12-GPU SunSpot job; the first is a slow warmup step."""
    write_run_info(folder, MACHINE="SunSpot", NUM_NODES="1", NGPUS="12", GPUS_PER_NODE="12",
                   WORLD_SIZE_IN_USE="12", world_size="12")
    write_jsonl(folder / "metrics-0.jsonl", [
        step(i + 1, dt=dt, tps=tps, loss=8.0 - i) for i, (dt, tps) in
        enumerate(zip(SUNSPOT_DT, SUNSPOT_TPS, strict=True))
    ])
    return folder


def snapshot(s) -> dict:
    """Everything the step reader reports, NaN-safe (arrays compared as bytes)."""
    return {
        "rank": s.rank, "step": s.step.tobytes(), "timestamp": s.timestamp.tobytes(),
        "contentless": s.contentless, "tokens": s.tokens.tobytes(),
        "tokens_run": (s.tokens_run, struct.pack("d", s.tokens_first)), "epochs": s.epochs,
        "series": {k: v.tobytes() for k, v in s.series.items()},
        "keys_used": s.keys_used, "step_key": s.step_key, "nonfinite": s.nonfinite,
        "files_read": [str(p) for p in s.files_read], "files_not_read": s.files_not_read,
        "bad_lines": s.bad_lines, "long_lines": s.long_lines,
        "truncated_last_line": s.truncated_last_line, "not_steps": s.not_steps,
        "other_ranks": s.other_ranks,
    }


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run_report(*args: object):
    """The report command alone (its usage line names it ``report``)."""
    from ezpz_amsc.cli.report_command import report_command

    return runner().invoke(report_command, [str(a) for a in args], catch_exceptions=False)


def set_metric(run: Path, key: str, fn: Callable[[int, float], float]) -> None:
    """Rewrite one metric of every step of ``run``'s metrics-0.jsonl: ``fn(step, value)``."""
    def set_it(rec):
        m = rec["metrics"]
        if key in m and is_step(rec):
            m[key] = fn(m["train/iter"], m[key])
        return rec

    rewrite(run / "metrics-0.jsonl", set_it)


H100_PEAK_TFLOPS = device("NVIDIA H100 SXM").peak_tflops  # the peak ezpz's mfu is against


def on_h100(run: Path) -> None:
    """Make ``run``'s train/tflops agree with its train/mfu for an H100: the identity
    tflops / (mfu / 100) = the device's peak holds on every step."""
    def agree(rec):
        m = rec["metrics"]
        if is_step(rec) and "train/mfu" in m:
            m["train/tflops"] = m["train/mfu"] / 100 * H100_PEAK_TFLOPS
        return rec

    rewrite(run / "metrics-0.jsonl", agree)


class _FailsAfterTheFirstLine(io.BufferedReader):
    """A file whose reading fails (EIO) once past its first line: a disk error part-way.
    Lines and blocks alike (check reads a results file's rows in blocks)."""

    def readline(self, *a: Any) -> bytes:
        if self.tell() > 0:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return super().readline(*a)

    def read(self, *a: Any) -> bytes:
        if self.tell() > 0:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return super().read(*a)


def fail_reading_midway(monkeypatch: Any, module: Any, target: Path) -> None:
    """Make ``module.open_regular`` (the one opener of files that are read, fs/read.py) give
    ``target`` as a file that fails part-way; other files open as usual."""
    real = module.open_regular

    def opener(path: Any) -> Any:
        if Path(path) == target:
            return _FailsAfterTheFirstLine(io.FileIO(path, "rb"))
        return real(path)

    monkeypatch.setattr(module, "open_regular", opener)
