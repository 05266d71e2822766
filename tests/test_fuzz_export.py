"""Property-based: hostile run directories and flags never crash the exporter (issue 6).

Every generated case must end in one of two ways: exit 0 with exactly one row
that the dashboard's own reading accepts, or exit 1/2 with one ``error:`` line
(and nothing else). Never a traceback or a Python warning on stderr,
and no file other than the ``--append`` target is ever created or changed.

Example counts come from the hypothesis profile (see tests/conftest.py):
``--hypothesis-profile=long`` or ``HYPOTHESIS_PROFILE=long`` for a longer hunt.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from helpers import run_cli
from hypothesis import event, given, note
from hypothesis import strategies as st

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.export import export_run
from ezpz_amsc.options import ExportOptions
from ezpz_amsc.results.schema import (
    HEADER,
    dashboard_problems,
    format_timestamp,
    formula_like,
    parse_timestamp,
    render_csv,
)
from ezpz_amsc.text import spelled

# ---------------------------------------------------------------- values

plausible_float = st.floats(min_value=1e-3, max_value=1e6)
# A step time that fits in the 1 s between two plausible records (the clock check
# refuses a dt sum above the records' span); hostile ones come in as odd values.
plausible_dt = st.floats(min_value=1e-3, max_value=0.9)
any_float = st.floats(allow_nan=True, allow_infinity=True)  # tiny, huge, negative, NaN, inf
numbers = st.one_of(
    plausible_float,
    st.integers(-3, 10**6),
    any_float,
    st.integers(min_value=-(10**400), max_value=10**400),  # past float range
)
values = st.one_of(
    numbers, numbers, st.booleans(), st.none(), st.text(max_size=6),
    st.lists(numbers, max_size=2), st.dictionaries(st.text(max_size=3), numbers, max_size=2),
)
METRIC_KEYS = (
    "train/iter", "train/step", "iter", "step", "train/dt", "dt", "train/tps", "tps",
    "train/tokens_per_sec", "train/tps_per_gpu", "train/mfu", "mfu", "train/tflops", "tflops",
    "train/loss", "loss", "train/tokens", "precision/param", "train/tps/mean",
)
metric_key = st.one_of(st.sampled_from(METRIC_KEYS), st.text(max_size=6))


@st.composite
def plausible_record(draw: st.DrawFn, i: int | None = None, world: int = 1) -> dict[str, Any]:
    """An ezpz-shaped step, with a chance of one odd value or key swapped in.

    When both are logged, ``train/tps`` is ``world`` x ``train/tps_per_gpu``, as in
    ezpz, so that the run's world size agrees with its throughput.
    """
    i = draw(st.integers(0, 40)) if i is None else i
    m: dict[str, Any] = {
        draw(st.sampled_from(("train/iter", "train/step", "iter"))): i,
        "train/dt": draw(plausible_dt), "train/loss": draw(st.floats(-10, 1e4)),
    }
    for k in draw(st.sets(st.sampled_from(("train/tps", "train/tps_per_gpu", "train/mfu",
                                           "train/tflops", "train/tokens_per_sec")))):
        m[k] = draw(plausible_float)
    if "train/tps" in m and "train/tps_per_gpu" in m:
        m["train/tps"] = m["train/tps_per_gpu"] * world
    if draw(st.booleans()):
        m[draw(metric_key)] = draw(values)
    rec: dict[str, Any] = {"timestamp": 1795990000.0 + i, "rank": 0, "metrics": m}
    if draw(st.booleans()):
        rec[draw(st.sampled_from(("timestamp", "rank")))] = draw(values)
    return rec


random_record = st.fixed_dictionaries(
    {},
    optional={
        "timestamp": st.one_of(st.floats(1.6e9, 1.9e9), values, st.text(max_size=12)),
        "rank": st.one_of(st.sampled_from((0, 0, 1, 3)), values),
        "metrics": st.one_of(st.dictionaries(metric_key, values, max_size=8), values),
        "aggregated": st.dictionaries(metric_key, values, max_size=3),
    },
)


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj).encode()  # NaN/Infinity written bare, as Python's json does


def _deep(depth: int) -> bytes:
    return b'{"metrics": ' + b"[" * depth + b"]" * depth + b"}"


# Noise steps are numbered apart from the run's own (0..10), so that they rarely
# repeat one of its step numbers: a repeat is a second attempt, refused by design.
noise_step = st.integers(20, 60).flatmap(lambda i: plausible_record(i))
line = st.one_of(
    noise_step.map(_dumps),
    noise_step.map(_dumps),
    random_record.map(_dumps),
    st.one_of(st.lists(numbers, max_size=3), numbers, st.text(max_size=5), st.none()).map(_dumps),
    st.binary(max_size=30),  # random bytes, usually invalid UTF-8
    st.binary(min_size=1, max_size=4).map(
        lambda b: b'{"metrics": {"train/iter": 1, "train/dt": 1.0}, "x": "\xff' + b + b'"}'),
    st.sampled_from((10, 900, 5000, 200_000)).map(_deep),  # past the recursion limit
    st.sampled_from((b"", b"   ", b"\t")),
    st.just(b'{"timestamp": 1795990000, "rank": 0, "rank": 1, "metrics": {"train/iter": 1,'
            b' "train/iter": 2, "train/dt": 1.0, "train/dt": -1.0}}'),  # duplicate keys
    st.integers(100, 30_000).map(  # a long line: over the small limit of the direct test
        lambda n: b'{"metrics": {"train/iter": 2, "pad": "' + b"x" * n + b'"}}'),
)


@st.composite
def jsonl_bytes(draw: st.DrawFn, world: int = 1) -> bytes:
    lines = draw(st.lists(line, max_size=10))
    if draw(st.sampled_from((True, True, True, False))):  # mostly: plausible steps in noise
        n = draw(st.integers(1, 8))
        start = draw(st.integers(0, 2))
        run = [_dumps(draw(plausible_record(i, world))) for i in range(start, start + n)]
        if draw(st.booleans()):
            run = draw(st.permutations(run))  # steps out of order
        at = draw(st.integers(0, len(lines)))
        lines[at:at] = run
    sep = draw(st.sampled_from((b"\n", b"\n", b"\r\n")))
    data = sep.join(lines) + (sep if draw(st.booleans()) else b"")
    if data and draw(st.integers(0, 5)) == 0:  # killed mid-write
        data = data[: draw(st.integers(0, len(data) - 1))]
    if draw(st.integers(0, 5)) == 0:
        data = b"\xef\xbb\xbf" + data
    return data


# ---------------------------------------------------------------- provenance

good_count = st.sampled_from(("1", "2", "4", "12"))
bad_count = st.one_of(
    st.sampled_from(("0", "-4", "four", "", "1.5", "1e400", "nan", " 2 ", "2.0", "inf")),
    numbers, st.booleans(), st.none(), st.lists(st.integers(), max_size=2),
)
machine_value = st.one_of(
    st.sampled_from(("Aurora", "SunSpot", "Perlmutter", "localhost", "")),
    st.sampled_from(("Aur\nora", "x\r", "\ud800", "a\x00b", "\u2028", "  ")),
    st.text(max_size=10), numbers, st.none(),
)
COUNT_KEYS = ("NUM_NODES", "NGPUS", "GPUS_PER_NODE", "WORLD_SIZE_IN_USE", "world_size")
hostile_dist = st.fixed_dictionaries(
    {}, optional={"MACHINE": machine_value, "HOSTNAME": machine_value,
                  **{k: st.one_of(good_count, bad_count) for k in COUNT_KEYS}},
)


@st.composite
def sane_dist(draw: st.DrawFn, world: int | None = None) -> dict[str, Any]:
    """What ezpz writes: strings, a usable world size, maybe one odd value."""
    d = {"MACHINE": draw(st.sampled_from(("Aurora", "SunSpot", "localhost"))),
         "GPUS_PER_NODE": draw(st.sampled_from(("0", "4", "12"))),
         "world_size": draw(good_count), "WORLD_SIZE_IN_USE": draw(good_count),
         "NUM_NODES": draw(good_count), "NGPUS": draw(good_count)}
    if world is not None:  # the world size the steps' throughput was logged with
        d["world_size"], d["WORLD_SIZE_IN_USE"] = str(world), draw(st.sampled_from(
            ("1", str(world))))
    if draw(st.booleans()):
        key = draw(st.sampled_from(COUNT_KEYS + ("MACHINE",)))
        d[key] = draw(machine_value if key == "MACHINE" else bad_count)
    return d


dist_dict = st.one_of(sane_dist(), sane_dist(), hostile_dist)
garbage = st.one_of(st.binary(max_size=40), st.just(b"\xef\xbb\xbf{"), st.just(_deep(5000)))


@st.composite
def run_info(draw: st.DrawFn, world: int | None = None) -> bytes | None:
    # Mostly what ezpz writes (one_of would split evenly between branches).
    pick = draw(st.integers(0, 9))
    if pick < 6:
        return _dumps({"Paths": {}, "Distributed": draw(sane_dist(world))})
    return draw(st.one_of(
        st.none(),
        hostile_dist.map(lambda d: _dumps({"Paths": {}, "Distributed": d})),
        st.one_of(values, st.lists(values, max_size=3)).map(lambda v: _dumps({"Distributed": v})),
        values.map(_dumps),
        garbage,
    ))


config_json = st.one_of(st.none(), dist_dict.map(_dumps), values.map(_dumps), garbage)


@st.composite
def report_md(draw: st.DrawFn) -> bytes | None:
    if draw(st.booleans()):
        return None
    d = draw(dist_dict)
    bullets = "".join(f"- **{k}**: {v}\n" for k, v in d.items())
    text = draw(st.sampled_from(("# Report\n\n### Distributed\n\n{b}\n### Timings\n",
                                 "### Distributed\n{b}", "{b}", "### Distributed\r\n{b}")))
    return text.format(b=bullets).encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------- run directory and flags


@st.composite
def run_dirs(draw: st.DrawFn) -> dict[str, bytes]:
    """relative path -> content of every file in a generated run directory."""
    files: dict[str, bytes] = {}
    world = draw(st.sampled_from((1, 2, 4, 12)))
    sub = draw(st.sampled_from(("", "", "train/")))
    scheme = draw(st.sampled_from(("per-rank", "per-rank", "interleaved", "run-id", "none")))
    if scheme == "per-rank":
        for r in draw(st.sets(st.sampled_from((0, 1, 2, 7)), min_size=1, max_size=3)):
            files[f"{sub}metrics-{r}.jsonl"] = draw(jsonl_bytes(world))
    elif scheme == "interleaved":
        files[f"{sub}metrics.jsonl"] = draw(jsonl_bytes(world))
    elif scheme == "run-id":
        files[f"{sub}20260811-182837.jsonl"] = draw(jsonl_bytes(world))
    if draw(st.integers(0, 19)) == 13:  # a second scheme: must be refused, never mixed
        files["metrics.jsonl"] = draw(jsonl_bytes())
    if draw(st.booleans()):
        files["2026-11-29-221908-rank0.jsonl"] = _dumps({"message": "hi", "level": "INFO"})
    for name, strat in (("run_info.json", run_info(world)), ("config.json", config_json)):
        content = draw(strat)
        if content is not None:
            files[name] = content
    report = draw(report_md())
    if report is not None:
        files["train/report-train.md"] = report
    return files


opt_text = st.one_of(st.sampled_from(("agpt-2b/bs1/seq2048/tp1", "x", "a,b", 'q"t')),
                     st.sampled_from(("l1\nl2", "\udcff", "a\tb", "x\u2028")),  # \udcff: argv bytes
                     st.text(max_size=8))
hostile_flags = st.fixed_dictionaries(
    {"--config": opt_text},
    optional={
        "--system": opt_text,
        "--nodes": st.one_of(st.integers(-1, 16), st.just("four")),
        "--gpus": st.one_of(st.integers(-1, 64), st.integers(min_value=10**20)),
        "--warmup": st.one_of(st.integers(-1, 5), st.integers(min_value=10**19)),
        "--reducer": st.sampled_from(("median", "mean", "max", "min", "last", "avg", "")),
        "--status": st.sampled_from(("pass", "fail", "fail")),
        "--error": opt_text,
        "--wall-time-sec": st.one_of(any_float, plausible_float).map(repr),
        "--timestamp": st.one_of(
            st.sampled_from(("2026-08-11T17:11:17Z", "2026-08-11 17:11", "")),
            st.tuples(st.integers(0, 12000), *[st.integers(0, n) for n in (13, 32, 25, 61, 62)])
            .flatmap(lambda t: st.sampled_from((
                "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}Z".format(*t),
                "{}-{}-{}T{}:{}:{}Z".format(*t))))),
        "--no-header": st.just(None),
    },
)
sane_flags = st.fixed_dictionaries(
    {"--config": st.sampled_from(("agpt-2b/bs1/seq2048/tp1", "a,b", 'q"t', "ünï"))},
    optional={
        "--nodes": st.integers(1, 4),
        "--warmup": st.integers(0, 12),
        "--reducer": st.sampled_from(("median", "mean", "max", "min", "last")),
        "--status": st.sampled_from(("pass", "fail")),
        "--error": st.text(st.characters(categories=("L", "N", "P", "Zs")), max_size=12)
        .filter(lambda s: not formula_like(s)),  # those are refused: see the hostile flags
        "--no-header": st.just(None),
    },
)
# --gpus with --nodes: a user who overrides the ranks says how they were placed
# (alone, nodes derived from it may exceed the job's NUM_NODES, which is refused).
placed = st.one_of(st.just({}), st.fixed_dictionaries(
    {"--gpus": st.integers(1, 64), "--nodes": st.integers(1, 4)}))
flags = st.one_of(st.tuples(sane_flags, placed).map(lambda t: {**t[0], **t[1]}),
                  sane_flags, hostile_flags)
EXISTING_RESULTS = {
    "good": render_csv([["2026-01-01T00:00:00Z", "Aurora", "old", "1", "1", "pass", "1.0",
                         "", "", "", "", "", "", ""]], True).encode(),
    "crlf-bom": b"\xef\xbb\xbf" + render_csv([], True, newline="\r\n").encode() + b"x,y\r\n",
    "no-final-newline": render_csv([], True).encode() + b"2026-01-01T00:00:00Z,A,c,1,1,pass,1",
    "empty": b"",
    "other-header": b"timestamp,system,config\n1,2,3\n",
    "reordered": (",".join(reversed(HEADER)) + "\n").encode(),
}
append_target = st.one_of(
    st.none(), st.just("new"), st.just("dir"), st.sampled_from(sorted(EXISTING_RESULTS)))


# ---------------------------------------------------------------- harness


def _materialize(root: Path, files: dict[str, bytes]) -> Path:
    run = root / "run"
    run.mkdir()
    for rel, data in files.items():
        p = run / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return run


def _snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root`` with a content digest: a write anywhere shows up."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _check_stderr(stderr: str, failed: bool) -> None:
    # By line shape, not by searching for "Traceback": user text can contain any word.
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    if failed:  # exactly one error line, no notes before it (helpers.error_line); only a
        # header refusal adds the two headers below it, on indented lines
        first, *details = lines
        assert first.startswith("error: "), stderr
        assert not details or ("existing header differs" in first
                               and all(ln.startswith("  ") for ln in details)), stderr
    else:
        assert all(ln.startswith("note: ") for ln in lines), stderr


def _error_kind(stderr: str) -> str:
    """The error's gist without paths or numbers, to group hypothesis events."""
    msg = stderr.strip().splitlines()[0]  # the error line (a header refusal adds lines)
    msg = msg.split(": ", 2)[-1] if "/" in msg.split(": ", 2)[1] else msg[len("error: "):]
    return " ".join(w for w in msg.split()[:6] if not any(c.isdigit() for c in w))


@pytest.mark.slow
@pytest.mark.filterwarnings("error")  # a numpy RuntimeWarning would reach the user's stderr
@given(files=run_dirs(), opts=flags, target=append_target)
def test_cli_never_crashes_and_writes_only_the_target(scratch, files, opts, target):
    root = Path(tempfile.mkdtemp(dir=scratch))
    try:
        run = _materialize(root, files)
        args: list[Any] = [run]
        for k, v in opts.items():
            args.extend([k] if v is None else [k, v])
        results = root / "out" / "results.csv"
        before_target: bytes | None = None
        if target is not None:
            results.parent.mkdir()
            if target == "dir":
                results.mkdir()
            elif target in EXISTING_RESULTS:
                results.write_bytes(EXISTING_RESULTS[target])
            if results.is_file():
                before_target = results.read_bytes()
            args.extend(["--append", results])
        before = _snapshot(root)
        note(f"args: {args[1:]}")

        result = run_cli(*args)
        note(f"exit {result.exit_code}\nstdout: {result.stdout!r}\nstderr: {result.stderr!r}")

        after = _snapshot(root)
        event(f"exit {result.exit_code}")
        if result.exit_code:
            event(f"error: {_error_kind(result.stderr)}")
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        assert result.exit_code in (0, 1, 2)
        _check_stderr(result.stderr, failed=result.exit_code != 0)
        if result.exit_code != 0:
            assert result.stdout == ""
            # Nothing written anywhere: target byte-identical, no lock file beside it.
            assert not changed, changed
            return

        if target is None:
            assert not changed, changed
            rows = list(csv.reader(io.StringIO(result.stdout)))
            if "--no-header" not in opts:
                assert tuple(rows.pop(0)) == HEADER
        else:
            assert result.stdout == ""
            assert changed <= {"out/results.csv"}, changed
            rows = list(csv.reader(io.StringIO(results.read_bytes().decode("utf-8-sig"))))
            assert tuple(rows[0]) == HEADER
            if before_target:  # appended: the old bytes are an untouched prefix
                new = results.read_bytes()
                assert new.startswith(before_target.rstrip(b"\r\n"))
                assert len(rows) == len(list(csv.reader(io.StringIO(
                    before_target.decode("utf-8-sig"))))) + 1
            rows = rows[-1:]
        assert len(rows) == 1 and len(rows[0]) == len(HEADER), rows
        assert dashboard_problems(rows[0]) == [], rows[0]
        assert not any("\n" in c or "\r" in c for c in rows[0]), rows[0]  # one physical line
        ts = rows[0][0]  # exactly YYYY-MM-DDTHH:MM:SSZ, as the first step's time is written
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", ts), ts
        assert format_timestamp(parse_timestamp(ts)) == ts, ts
    finally:
        shutil.rmtree(root)


@pytest.mark.slow
@pytest.mark.filterwarnings("error")
@given(files=run_dirs(), warmup=st.integers(0, 3),
       reducer=st.sampled_from(("median", "mean", "max", "min", "last")),
       limit=st.sampled_from((4096, 512, 20_000)))
def test_export_run_with_small_line_limit(scratch, files, warmup, reducer, limit):
    """The pure pipeline with a tiny line limit, so long lines take the skip path."""
    root = Path(tempfile.mkdtemp(dir=scratch))
    try:
        run = _materialize(root, files)
        before = _snapshot(root)
        opts = ExportOptions(config="fuzz", warmup=warmup, reducer=reducer,
                             max_line_bytes=limit)
        try:
            result = export_run(run, opts)
        except AmscError as e:
            msg = e.format_message()
            assert msg and "\n" not in msg
            event(f"error: {_error_kind('error: ' + msg)}")
        else:
            event("row")
            assert dashboard_problems(result.row) == [], result.row
            assert all(n and "\n" not in spelled(n) for n in result.notes), result.notes
            assert tuple(result.row) == HEADER
        assert _snapshot(root) == before
    finally:
        shutil.rmtree(root)
